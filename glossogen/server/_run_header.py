"""The run page's header and seat table: cost, tokens, duration, and each seat's spend.

What the finished page shows above the rounds, and what the live page re-reads as a run streams
(:func:`live_summary`, through ``_live_routes``): the same figures, read from the run's
:class:`~glossogen.eventlog.RunView`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from glossogen.eventlog import (
    AgentRegistered,
    AgentRunCycleFailed,
    RunView,
    SeatSpend,
)

RECORDED_TOTAL = "the total GlossoGen 0.5 recorded; it recorded no seat's spend"
"""What the header adds to a GlossoGen 0.5 run's cost, whose seats' spend was never recorded."""

NOT_RECORDED = "not recorded (GlossoGen 0.5)"
"""A GlossoGen 0.5 run's seat spend cell."""


@dataclass
class SeatRow:
    """One seat: model, settings, requests, tokens, spend (USD), failed cycles."""

    agent_id: str
    role: str
    team_id: str
    model: str
    provider: str
    models: list[str]
    settings: dict[str, Any]
    requests: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    failures: int


def seat_rows(view: RunView) -> list[SeatRow]:
    """Every seat of the run with its model, settings, requests, tokens, spend and failures."""
    settings: dict[str, dict[str, Any]] = {}
    failures: dict[str, int] = {}
    for event in view.counted:
        if isinstance(event, AgentRegistered):
            settings[event.agent_id] = dict(event.model_settings)
        elif isinstance(event, AgentRunCycleFailed):
            failures[event.agent_id] = failures.get(event.agent_id, 0) + 1
    spend = view.spend
    seats = []
    for agent_id, seat in view.roster.items():
        own = spend.agents.get(agent_id) or SeatSpend(agent_id)
        seats.append(
            SeatRow(
                **asdict(seat),  # agent_id, role, team_id, model, provider, models
                settings=settings.get(agent_id, {}),
                requests=own.requests,
                input_tokens=own.input_tokens,
                output_tokens=own.output_tokens,
                cost_usd=own.cost_usd,
                failures=failures.get(agent_id, 0),
            )
        )
    return seats


def usd(value: float | None) -> str:
    """A USD figure as the pages show it (``unknown`` for a cost not known)."""
    if value is None:
        return "unknown"
    return f"${value:.4f}" if value < 100 else f"${value:,.2f}"


def cost_line(total: float | None, judge: float | None, inherited: float | None) -> str:
    """The run header's cost: total, the judge's share, a derived run's inherited spend."""
    line = f"{usd(total)} (judge {usd(judge)}"
    return line + (f"; inherited {usd(inherited)})" if inherited is not None else ")")


def live_summary(view: RunView) -> dict[str, Any]:
    """What the live page refreshes as a run streams: status, header cost and tokens, seats.

    ``outcomes``: each recorded round's team outcomes by the shared rule
    (:func:`glossogen.launch.team_outcomes`: a ranked round's winner), as the finished page says.
    """
    from glossogen.launch import team_outcomes

    spend = view.spend
    inherited = view.inherited_spend.total_cost_usd if view.derived else None
    return {
        "status": view.status,
        "resumable": view.resumable,
        "duration_seconds": live_seconds(view, datetime.now(UTC)),
        "total_cost_usd": spend.total_cost_usd,
        "cost": cost_line(spend.total_cost_usd, spend.judge_cost_usd, inherited),
        "tokens": spend.tokens.summary(),
        "seats": [
            {
                "agent_id": s.agent_id,
                "requests": s.requests,
                "tokens": f"{s.input_tokens} / {s.output_tokens}",
                "spend": usd(s.cost_usd),
                "failures": s.failures,
            }
            for s in seat_rows(view)
        ],
        "outcomes": {
            str(n): [
                {"team_id": t.team_id, "outcome": t.outcome, "reason": t.reason} for t in teams
            ]
            for n, teams in team_outcomes(view).items()
        },
    }


def live_seconds(view: RunView, now: datetime) -> float:
    """The seconds a run has played as of ``now``.

    Its duration, plus, while it is running, the time since its last event (the page counts on
    from there).
    """
    if view.status != "running" or not view.events:
        return view.duration_seconds
    since = (now - view.events[-1].timestamp).total_seconds()
    return round(view.duration_seconds + max(0.0, since), 3)
