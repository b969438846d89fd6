"""A run's table as its Prefect flow run shows it: one row per round, read from its RunView.

``round_table`` is what the ``simulate``, ``resume`` and derived-run flow runs publish as a
table artifact (rounds, verdicts, messages, characters, cost); ``browser_url`` is the run's
page in the run browser (``glossogen serve``) when ``GLOSSOGEN_BROWSER_URL`` names where it is
served, so the Prefect UI links to it. No Prefect here: the tasks publish what this builds.
"""

from __future__ import annotations

import os
from typing import Any

from glossogen.eventlog import RunView, SimulationStarted
from glossogen.scenario import (
    TeamOutcome,
    UnknownScenarioError,
    load_scenario,
    round_outcomes,
)

BROWSER_URL_VARIABLE = "GLOSSOGEN_BROWSER_URL"
"""Where ``glossogen serve`` is reached (``http://host:8000``); unset: no links."""


def browser_url(run_id: str) -> str | None:
    """The run's page in the browser (``<GLOSSOGEN_BROWSER_URL>/runs/<run_id>``), or None."""
    base = os.environ.get(BROWSER_URL_VARIABLE, "").strip().rstrip("/")
    return f"{base}/runs/{run_id}" if base else None


def team_outcomes(view: RunView) -> dict[int, list[TeamOutcome]]:
    """Each round that counts: each team's verdict and how it reads, in verdict order.

    A round with several teams that the scenario ranked (:meth:`Scenario.round_winners`)
    was won by the ranking's winners only; a successful team it did not name was
    ``eligible``. One team's success, or every success of an unranked round, is ``won``.
    """
    winners = ranked_winners(view)
    return {
        number: round_outcomes(
            [(v.team_id, v.success, v.reason) for v in verdicts], void, winners.get(number)
        )
        for number, (verdicts, void) in sorted(view.verdicts.items())
    }


def round_table(view: RunView) -> list[dict[str, Any]]:
    """One row per round that counts, in round order.

    Columns: ``round``, ``verdict`` (``won``, ``lost`` or ``void``; per team when several,
    where a team the scenario's ranking does not name is ``eligible``, not ``won``),
    ``reason``, ``messages`` and ``chars`` (composed characters, postmortem included) and
    ``cost_usd`` (this run's own spend in that round; None when some call was not costed).
    """
    messages: dict[int, list[int]] = {}
    for m in view.messages:
        messages.setdefault(m.round_number, []).append(m.chars)
    spend = view.spend_by_round()
    rows = []
    for number, teams in team_outcomes(view).items():
        verdict = (
            str(teams[0].outcome)
            if len(teams) == 1 or teams[0].outcome == "void"
            else ", ".join(f"{t.team_id} {t.outcome}" for t in teams)
        )
        rows.append(
            {
                "round": number,
                "verdict": verdict,
                "reason": "; ".join(t.reason for t in teams),
                "messages": len(messages.get(number, [])),
                "chars": sum(messages.get(number, [])),
                "cost_usd": spend.get(number, 0.0),
            }
        )
    return rows


def ranked_winners(view: RunView) -> dict[int, list[str]]:
    """Each round's winners as the scenario's ranking event names them (none: no ranking)."""
    started = next((e for e in view.events if isinstance(e, SimulationStarted)), None)
    if started is None:
        return {}
    try:
        cls = load_scenario(started.scenario_name)
    except UnknownScenarioError:
        return {}
    found: dict[int, list[str]] = {}
    for event in view.events:
        named = cls.round_winners(event)
        if named is not None:
            found[event.round_number] = named
    return found
