"""The run page's value: one run read through :class:`~glossogen.eventlog.RunView`.

Everything the page shows comes from the view (status, verdicts, messages, spend, roster,
duration) and the run folder's JSON files (knobs, labels, lineage) and report; the page walks
the view's counted events only to lay them out in log order (who said what on which channel,
which tool was called, where a round, a postmortem, a swap or the fork point begins).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from glossogen.eventlog import (
    AgentRegistered,
    AgentRunCycleFailed,
    AgentSwappedMidRun,
    Event,
    JudgeCalled,
    MessageSent,
    PostmortemStarted,
    RoundEnded,
    RoundStarted,
    RunResumed,
    RunView,
    SeatSpend,
    ToolCallInvoked,
    ToolResultReceived,
)
from glossogen.storage import CONFIG, LABELS, RunFolder

EVERY_COLUMN = "*"
"""The channel of an item shown in every column (a round, postmortem, swap or fork divider)."""

ACTIVITY = "activity"
"""The column of tool calls, their results, judge rulings and failed cycles."""


@dataclass
class Item:
    """One thing the page shows, in log order.

    Attributes:
        kind: ``message``, ``tool_call``, ``tool_result``, ``judge``, ``failure`` or
            ``divider``.
        column: The channel id, :data:`ACTIVITY`, or :data:`EVERY_COLUMN`.
        round_number: The event's round; phase its phase.
        fields: What the template shows (texts are raw: the template escapes them).
    """

    kind: str
    column: str
    round_number: int
    phase: str
    fields: dict[str, Any]
    event_id: str = ""


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


@dataclass
class RoundRow:
    """One round of the timeline: verdicts (per team), void, trigger, the case on demand."""

    round_number: int
    verdicts: list[dict[str, Any]]
    void: bool
    won: bool
    trigger: str | None = None
    case: str | None = None


@dataclass
class RunPage:
    """What the run page shows of one run."""

    folder: RunFolder
    group: str
    status: str
    resumable: bool
    live: bool
    round_count: int | None
    rounds_played: int
    rounds_won: int
    total_cost_usd: float | None
    judge_cost_usd: float | None
    inherited_cost_usd: float | None
    duration_seconds: float
    tokens: str
    """The header's token line: agents' and judge's, cache reads and writes apart."""
    knobs: str
    labels: dict[str, Any]
    lineage: dict[str, Any] | None
    derived_runs: list[str]
    resumes: int
    seats: list[SeatRow]
    channels: list[str]
    items: list[Item]
    rounds: list[RoundRow]
    metrics: list[dict[str, Any]] = field(default_factory=list)
    last_event_id: str = ""
    error: str | None = None
    books: list[str] = field(default_factory=list)
    """One line per rule the run's books break (``glossogen verify``); empty when they balance."""

    @property
    def cost(self) -> str:
        """The header's cost line (the live page refreshes it from :func:`live_summary`)."""
        return cost_line(self.total_cost_usd, self.judge_cost_usd, self.inherited_cost_usd)


def _message(event: MessageSent, models: dict[str, str]) -> Item:
    fields = {
        "sender": event.sender_id,
        "model": models.get(event.sender_id, ""),
        "text": event.text,
        "delivered": event.delivered_text if event.delivered_text != event.text else None,
        "chars": event.chars,
    }
    return Item("message", event.channel_id, event.round_number, event.phase, fields)


def _item(event: Event, models: dict[str, str], scenario: str) -> Item | None:
    """The page item of one event, or None for an event the page does not lay out."""
    r, p = event.round_number, event.phase
    fields: dict[str, Any]
    if isinstance(event, MessageSent):
        return _message(event, models)
    if isinstance(event, ToolCallInvoked):
        args = json.dumps(event.args, ensure_ascii=False)
        fields = {"agent": event.agent_id, "tool": event.tool_name, "args": args}
        return Item("tool_call", ACTIVITY, r, p, fields)
    if isinstance(event, ToolResultReceived):
        result = event.refused or json.dumps(event.result, ensure_ascii=False, default=str)
        fields = {"agent": event.agent_id, "tool": event.tool_name, "result": result}
        return Item("tool_result", ACTIVITY, r, p, fields)
    if isinstance(event, JudgeCalled):
        fields = {"success": event.success, "reason": event.reason, "model": event.model}
        return Item("judge", ACTIVITY, r, p, fields)
    if isinstance(event, AgentRunCycleFailed):
        fields = {"agent": event.agent_id, "kind": event.error_kind, "error": event.error}
        return Item("failure", ACTIVITY, r, p, fields)
    if isinstance(event, RoundStarted) and p == "main":
        return Item("divider", EVERY_COLUMN, r, p, {"label": f"round {r}"})
    if isinstance(event, PostmortemStarted):
        return Item("divider", EVERY_COLUMN, r, p, {"label": f"round {r} postmortem"})
    if isinstance(event, AgentSwappedMidRun):
        label = f"{event.agent_id} swapped to {event.provider}:{event.model}"
        return Item("divider", EVERY_COLUMN, r, p, {"label": label})
    if isinstance(event, RunResumed):
        label = f"resumed after round {event.after_round}"
        return Item("divider", EVERY_COLUMN, r, p, {"label": label})
    if getattr(event, "event_type", "") == f"{scenario}_stabilization_judged":
        data = event.model_dump(mode="json", exclude=set(Event.model_fields))
        fields = {"success": data.get("success"), "reason": data.get("reason"), "model": None}
        return Item("judge", ACTIVITY, r, p, fields)
    return None


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
    """What the live page refreshes as a run streams: status, header cost and tokens, seats."""
    spend = view.spend
    inherited = view.inherited_spend.total_cost_usd if view.derived else None
    return {
        "status": view.status,
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
    }


def build_run_page(folder: RunFolder, view: RunView, group: str) -> RunPage:
    """Lay out one run's page from its view, its folder's JSON files and its report."""
    from glossogen.evaluation import read_report
    from glossogen.verify import books_of

    started = view.started
    config = folder.read_json_or(CONFIG, None) or (started.scenario_config if started else {})
    models: dict[str, str] = {}
    triggers: dict[int, str] = {}
    cases: dict[int, str] = {}
    items: list[Item] = []
    fork_point = (started.lineage or {}).get("after_round") if started else None
    case_type = f"{folder.scenario}_case_started"
    for event in view.counted:
        if isinstance(event, AgentRegistered | AgentSwappedMidRun):
            models[event.agent_id] = f"{event.provider}:{event.model}"
        elif isinstance(event, RoundEnded):
            triggers[event.round_number] = event.trigger
        elif event.event_type == case_type:  # each scenario's own class, by the naming rule
            case = event.model_dump(mode="json", exclude=set(Event.model_fields))
            cases[event.round_number] = json.dumps(case, indent=2, ensure_ascii=False)
        if isinstance(event, RunResumed) and fork_point is not None and view.derived:
            source = ((started.lineage if started else None) or {}).get("source_run_id")
            label = f"fork point: after round {fork_point} of {source}"
            items.append(
                Item("divider", EVERY_COLUMN, event.round_number, "setup", {"label": label})
            )
            fork_point = None
            continue
        item = _item(event, models, folder.scenario)
        if item is not None:
            item.event_id = event.event_id
            items.append(item)
    spend = view.spend
    seats = seat_rows(view)
    rounds = [
        RoundRow(
            round_number=n,
            verdicts=[v.model_dump() for v in verdicts],
            void=void,
            won=bool(verdicts) and not void and all(v.success for v in verdicts),
            trigger=triggers.get(n),
            case=cases.get(n),
        )
        for n, (verdicts, void) in sorted(view.verdicts.items())
    ]
    channels = list(started.channel_ids) if started else []
    for item in items:
        if item.kind == "message" and item.column not in channels:
            channels.append(item.column)
    report = read_report(folder.url, folder.scenario)
    metrics = []
    if report is not None:
        for name, entry in report.metrics.items():
            per_round = [
                (o.round_number, o.value)
                for o in entry.per_round
                if o.round_number is not None and isinstance(o.value, int | float)
            ]
            metrics.append(
                {
                    "name": name,
                    "score": entry.score,
                    "unit": entry.unit,
                    "summary": entry.summary,
                    "chart": chart_svg(per_round),
                }
            )
    ended = view.ended
    count = config.get("round_count") if isinstance(config, dict) else None
    return RunPage(
        folder=folder,
        group=group,
        status=view.status,
        resumable=view.resumable,
        live=view.status == "running",
        round_count=count if isinstance(count, int) else None,
        rounds_played=view.rounds_played,
        rounds_won=view.rounds_won,
        total_cost_usd=spend.total_cost_usd,
        judge_cost_usd=spend.judge_cost_usd,
        inherited_cost_usd=view.inherited_spend.total_cost_usd if view.derived else None,
        duration_seconds=view.duration_seconds,
        tokens=spend.tokens.summary(),
        knobs=json.dumps(config, indent=2, ensure_ascii=False, sort_keys=True),
        labels=folder.read_json_or(LABELS, {}) or {},
        lineage=started.lineage if started else None,
        derived_runs=[],
        resumes=sum(1 for e in view.events if isinstance(e, RunResumed)),
        seats=seats,
        channels=channels,
        items=items,
        rounds=rounds,
        metrics=metrics,
        last_event_id=view.events[-1].event_id if view.events else "",
        error=ended.error if ended else None,
        books=[rule.text for rule in books_of(view, folder)],
    )


def chart_svg(points: list[tuple[int, float]], width: int = 320, height: int = 90) -> str:
    """A small line chart of per-round values as SVG markup (numbers only: no text to escape).

    Drawn server-side rather than with a vendored chart library: a polyline and a dot per
    round is all the page needs, and it costs no asset.
    """
    if not points:
        return ""
    low = min(0.0, *(v for _, v in points))
    high = max(v for _, v in points)
    span = (high - low) or 1.0
    first, last = points[0][0], points[-1][0]
    step = (width - 20) / max(1, last - first)

    def xy(n: int, v: float) -> tuple[float, float]:
        return 10 + (n - first) * step, height - 10 - (v - low) / span * (height - 20)

    coords = [xy(n, v) for n, v in points]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3"/>' for x, y in coords)
    return (
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
        f'<polyline fill="none" stroke="currentColor" stroke-width="2" points="{line}"/>'
        f"{dots}</svg>"
    )
