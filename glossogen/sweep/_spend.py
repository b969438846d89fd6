"""Spend of a sweep: a per-run estimate before launch, and the cap's running account (USD).

The estimate of one run comes, in order, from: runs of the same cell this sweep already
finished; the last runs in the runs folder with the same scenario and the same seats (model and
provider per agent); else ``glossogen.launch.estimate_cost`` (the dry run's estimate).
Scripted runs cost 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from glossogen.eventlog import RunView
from glossogen.launch import RunConfig, estimate_cost, uncosted_models
from glossogen.storage import RunFolder, RunStore

LOOKBACK_RUNS = 20
"""Newest runs of the scenario examined for a matching run."""
MATCHES_AVERAGED = 3
"""Matching runs whose cost per round is averaged."""


@dataclass(frozen=True)
class RunEstimate:
    """What one run of a cell is expected to spend, in USD (None: a model is not costed)."""

    usd: float | None
    source: str


def _seats(plan: RunConfig) -> list[tuple[str, str, str]]:
    return sorted((s.agent_id, s.provider, s.model) for s in plan.seats)


def _cost_per_round(url: str, scenario: str, seats: list[tuple[str, str, str]]) -> float | None:
    """A finished run's cost per played round if its seats match ``seats``, else None.

    None too for a run no model call of which was answered (provider unreachable).
    """
    try:
        view = RunView.load(RunFolder.at(url).log_url)
    except (FileNotFoundError, OSError):
        return None
    roster = view.roster.values()
    ran = sorted((s.agent_id, s.provider, s.model) for s in roster if len(s.models) == 1)
    if view.ended is None or len(ran) != len(roster) or ran != seats:
        return None
    spend = view.spend
    if not spend.answered_requests and not spend.judge_calls:
        return None  # no call was answered: its $0 says nothing of what a run spends
    cost, rounds = spend.total_cost_usd, view.rounds_played
    if cost is None or not rounds:
        return None
    return float(cost) / rounds


def estimate_run(plan: RunConfig, runs_dir: str) -> RunEstimate:
    """Estimate one run of ``plan`` before launch (see the module docstring for the sources).

    Raises:
        StorageError: the runs folder is unreachable.
    """
    rounds = plan.knobs.round_count
    providers = {s.provider for s in plan.seats} | ({plan.judge.provider} if plan.judge else set())
    if providers <= {"scripted"}:
        return RunEstimate(0.0, "scripted runs cost nothing")
    store = RunStore(runs_dir)
    seats = _seats(plan)
    found: list[float] = []
    for run_id in reversed(store.list_runs(plan.scenario)[-LOOKBACK_RUNS:]):
        per_round = _cost_per_round(store.run_url(run_id), plan.scenario, seats)
        if per_round is not None:
            found.append(per_round)
            if len(found) == MATCHES_AVERAGED:
                break
    if found:
        usd = sum(found) / len(found) * rounds
        return RunEstimate(usd, f"mean cost per round of the last {len(found)} matching run(s)")
    estimated = estimate_cost(plan).total_usd
    if estimated is None:
        missing = ", ".join(uncosted_models(plan)) or "a model"
        return RunEstimate(None, f"{missing} is not in the price catalogue (genai-prices)")
    return RunEstimate(estimated, "the launch estimate (glossogen.launch.estimate_cost)")


SHARE_PLACES = 9
"""A trial's hard cap is rounded down to this many decimal places of USD, so the caps handed
out never sum past what is left."""


@dataclass
class SpendAccount:
    """The cap's running account: what ended runs spent and what runs in flight may spend.

    The sweep's cap is hard: each trial launched gets a hard per-run cap (``spend_cap_usd``,
    :meth:`share`), carved out of what is left (the cap less what ended runs spent and less the
    caps of the runs in flight). A run never logs more than its cap, so the runs' spend never
    passes the sweep's.

    Attributes:
        cap_usd: The spend cap (None: no cap).
        spent_usd: Sum of ``total_cost_usd`` of the sweep's ended runs (a run whose total is
            unknown, or that failed, counts what was reserved for it: its cap).
        in_flight: What each launched run that has not ended may spend, by label: its hard cap
            (its estimate when there is no sweep cap); a resumed run, held to the cap its first
            launch recorded, counts what it logged so far plus the estimate of the rounds it
            has left.
    """

    cap_usd: float | None
    spent_usd: float = 0.0
    in_flight: dict[str, float] = field(default_factory=dict)

    @property
    def in_flight_usd(self) -> float:
        """Sum of the in-flight estimates (USD)."""
        return sum(self.in_flight.values())

    def admits(self, estimate_usd: float) -> bool:
        """True when spent + in flight + ``estimate_usd`` stays within the cap (or no cap)."""
        if self.cap_usd is None:
            return True
        fits = self.spent_usd + self.in_flight_usd + estimate_usd <= self.cap_usd + 1e-12
        return fits and self.left_usd > 0  # a run's cap must be above 0

    @property
    def left_usd(self) -> float:
        """What no run has spent or may spend yet: the cap less spent and in flight (USD)."""
        assert self.cap_usd is not None
        return self.cap_usd - self.spent_usd - self.in_flight_usd

    def share(self, estimate_usd: float, runs: int) -> float | None:
        """The hard cap of the next trial: its share of what is left; None when there is no cap.

        What is left is split evenly between the ``runs`` that may play alongside (this one
        included: the free launch slots, at most the trials still to launch), but never below
        the trial's ``estimate_usd`` while that much is left, and never above what is left.
        Rounded down to :data:`SHARE_PLACES`. Call it only once :meth:`admits` the estimate.
        """
        if self.cap_usd is None:
            return None
        left = self.left_usd
        share = min(left, max(estimate_usd, left / max(runs, 1)))
        return math.floor(share * 10**SHARE_PLACES) / 10**SHARE_PLACES

    def launched(self, label: str, reserved_usd: float) -> None:
        """Count a launched run as in flight: what it may spend (its cap, else its estimate)."""
        self.in_flight[label] = reserved_usd

    def ended(self, label: str, cost_usd: float | None) -> None:
        """Move a run from in flight to spent, at its logged cost (else what was reserved)."""
        estimate = self.in_flight.pop(label, 0.0)
        self.spent_usd += estimate if cost_usd is None else cost_usd
