"""One launch of a sweep as pure steps: what to launch next under the cap, record what ended.

Prefect-free. The sweep flow (``flows/sweep.py``) owns the loop: for each missing trial it asks
:meth:`SweepRun.admit` for the :class:`Launch` (or learns that the cap stopped the sweep, or that
another live launch holds the trial), plays it through a task, and hands the outcome back
(:meth:`SweepRun.finished`, :meth:`SweepRun.failed`, :meth:`SweepRun.cut_off`). What the
summary says of a launch is built in ``_report.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from glossogen import exit_codes
from glossogen.launch import RunConfig, RunRequest, plan_run
from glossogen.refusals import Refusal
from glossogen.storage import StorageError
from glossogen.sweep._claim import TrialClaims, claim_name
from glossogen.sweep._grid import TrialKey, idempotency_key
from glossogen.sweep._ledger import (
    RunRecord,
    authoritative,
    current_epoch,
    relaunches,
    scan_sweep,
)
from glossogen.sweep._plan import SweepPlan
from glossogen.sweep._spend import SpendAccount
from glossogen.sweep._stability import JudgeReplay, replay_judge
from glossogen.sweep._summary import (
    Aborted,
    AbortReason,
    SweepSummary,
    TrialState,
    passes,
    state_of,
    sweep_url,
    write_summary,
)

SweepMode = Literal["deployments", "in-process", "mixed"]
"""Where a sweep launch plays its runs (recorded in the summary)."""


@dataclass(frozen=True)
class Launch:
    """One run to play: its key, request, Prefect idempotency key and estimate (USD).

    The trial's part of the sweep's plan: its ``request`` (:meth:`SweepPlan.request`, the spend
    cap's share set) is planned as a run once, as :attr:`config`, which the flow's ``simulate``
    subflow or the deployment's flow run takes whole.

    Attributes:
        resume_url: The folder of the trial's interrupted run to continue in place (``resume``
            flow), or None for a fresh run (``simulate``).
        cap_usd: The trial's hard per-run spend cap, its share of the sweep's (None: no sweep
            cap, or a resumed run, held to the cap its first launch recorded).
    """

    key: TrialKey
    request: RunRequest
    idempotency_key: str
    estimate_usd: float
    resume_url: str | None = None
    cap_usd: float | None = None

    @cached_property
    def config(self) -> RunConfig:
        """The fresh run's plan (``plan_run`` of :attr:`request`, once per launch).

        Raises:
            LaunchError: the trial's request is refused (its cell was checked when the sweep
                was planned; a qualification run's short budget or a seed can still be).
        """
        return plan_run(self.request)


class SweepRun:
    """One launch of a sweep: its ledger, census and spend account, and the steps that fill them.

    Args:
        plan: The checked plan.
        mode: ``in-process``, ``deployments`` or ``mixed`` (recorded in the summary).
        clock: Unix seconds, for the age of claims (injected in tests).
    """

    def __init__(
        self,
        plan: SweepPlan,
        mode: SweepMode,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Read the ledger and start the census (``--replace`` opens a new epoch)."""
        self.plan, self.mode = plan, mode
        spec = plan.spec
        self.records = scan_sweep(spec.runs_dir, spec.scenario, plan.sweep_id)
        epoch = current_epoch(self.records)
        self.epoch = epoch + 1 if plan.options.replace and self.records else epoch
        self.chosen: dict[TrialKey, RunRecord] = authoritative(self.records, self.epoch)
        self.states: dict[TrialKey, TrialState] = {
            k: state_of(self.chosen.get(k)) for k in plan.main_keys()
        }
        self.errors: dict[TrialKey, str] = {}
        self.account = SpendAccount(spec.spend_cap_usd)
        for record in self.chosen.values():
            if record.ended:
                self.account.ended(record.key.label(), record.cost_usd)
        self.aborted: Aborted | None = None
        self.replays: dict[TrialKey, JudgeReplay] = {}
        self.launched: list[TrialKey] = []
        self.claims = TrialClaims(sweep_url(spec.runs_dir, plan.sweep_id), clock)
        self.latest: dict[TrialKey, RunRecord] = {
            r.key: r for r in self.records if r.epoch == self.epoch
        }
        """The newest run of each key (interrupted ones too): what the summary shows when no
        authoritative run stands for the key."""

    # -- estimates and launches ------------------------------------------------------------

    def estimate_of(self, cell_id: str) -> tuple[float | None, str]:
        """``(USD, source)`` of one run of ``cell_id``.

        The mean logged cost of the cell's ended main runs in this epoch once there are any
        that tell what a run spends (:attr:`RunRecord.cost_basis`: not a run whose every call
        failed), else the plan's pre-launch estimate.
        """
        costs = [
            r.cost_usd
            for r in self.chosen.values()
            if r.cell_id == cell_id and r.cost_basis and r.cost_usd is not None and r.part == "main"
        ]
        if costs:
            return sum(costs) / len(costs), f"mean logged cost of {len(costs)} ended run(s)"
        planned = self.plan.cell(cell_id).estimate
        return planned.usd, planned.source

    def estimate(self, key: TrialKey) -> float:
        """A run of ``key``'s cell (USD; see :meth:`estimate_of`; 0 when not costed)."""
        return self.estimate_of(key.cell_id)[0] or 0.0

    def missing(self, keys: list[TrialKey]) -> list[TrialKey]:
        """The keys no run of this epoch stands for yet."""
        return [k for k in keys if k not in self.chosen]

    def _stop(self, reason: AbortReason, detail: str, refusal: Refusal | None = None) -> None:
        if self.aborted is None:
            self.aborted = Aborted(reason=reason, detail=detail, refusal=refusal)

    def admit(self, key: TrialKey, left: int) -> Launch | None:
        """Return the launch of ``key``, or None when it is not launched here.

        The cap must admit spent + what the runs in flight may spend + this run's estimate (a
        run resumed in place: its logged spend so far plus the estimate of its rounds left);
        the first key it refuses stops the sweep (:attr:`aborted` ``spend_cap``; ``left`` is
        how many keys, this one included, are then not launched: see :meth:`not_launched`). A
        trial whose claim another live launch of the sweep holds is left to it (state
        ``running``). An admitted fresh launch gets a hard per-run cap, its share of what is
        left (:meth:`SpendAccount.share`), counted in flight, unless that share cannot hold
        one request's worst case (then the sweep stops, ``spend_cap``); a resumed one is counted
        in flight at what the cap admitted. Its state is ``running``.
        """
        estimate = self.estimate(key)
        stopped = self.resumable(key)
        needs = estimate if stopped is None else self._resumed_needs(key, estimate, stopped)
        if self.aborted is None and not self.account.admits(needs):
            self._stop(
                "spend_cap",
                f"spent ${self.account.spent_usd:.6f} + in flight "
                f"${self.account.in_flight_usd:.6f} + next run ~${needs:.6f} would "
                f"pass the cap ${self.plan.spec.spend_cap_usd:.6f}; "
                f"{left} run(s) not launched",
            )
        if self.aborted is not None:
            return None
        relaunch = relaunches(self.records, key, self.epoch)
        resumes = stopped.endings if stopped else 0
        cap = None
        if stopped is None:  # a resumed run keeps the cap its first launch recorded
            runs = min(self.plan.options.concurrency - len(self.account.in_flight), left)
            cap = self.account.share(estimate, runs)
            if not self._holds_a_request(key, cap, left):
                return None
        claim = claim_name(key, self.epoch, relaunch, resumes)
        if not self.claims.take(claim):
            if key.part == "main":
                self.states[key] = "running"
            self.errors[key] = (
                f"claimed by another live launch of this sweep "
                f"({self.claims.describe(claim)}): not launched here"
            )
            return None
        request = self.plan.request(key, self.epoch)
        if cap is not None:
            request = request.model_copy(update={"spend_cap_usd": cap})
        launch = Launch(
            key,
            request,
            idempotency_key(
                self.plan.sweep_id, key, self.epoch, relaunch, self.claims.nonces[claim]
            )
            + (f"/resume{resumes}" if stopped else ""),
            estimate,
            stopped.run_url if stopped else None,
            cap,
        )
        self.account.launched(key.label(), needs if cap is None else cap)
        self.launched.append(key)
        if key.part == "main":
            self.states[key] = "running"
        return launch

    def _resumed_needs(self, key: TrialKey, estimate: float, stopped: RunRecord) -> float:
        """What a trial resumed in place may spend (USD).

        Its logged spend so far (:attr:`RunRecord.spent_usd`, in no ended run's figure) plus
        the estimate of the rounds it has left (``estimate`` spread evenly over the cell's
        rounds).
        """
        rounds = self.plan.cell(key.cell_id).plan.knobs.round_count
        left = max(0, rounds - stopped.rounds_played)
        return stopped.spent_usd + (estimate * left / rounds if rounds else 0.0)

    def _holds_a_request(self, key: TrialKey, cap: float | None, left: int) -> bool:
        """True when ``cap`` (a fresh trial's share) holds one request's worst case.

        A share below the least worst case any of its requests reserves
        (:attr:`CellPlan.least`) would launch a run its own cap refuses at its first request:
        the sweep stops here instead (``spend_cap``), naming the trial and the figures.
        """
        least = self.plan.cell(key.cell_id).least
        if cap is None or least is None or cap >= least.usd:
            return True
        self._stop(
            "spend_cap",
            f"trial {key.label()}: its share of the cap, ${cap:.6f}, is below "
            f"${least.usd:.6f}, the worst case one request reserves ({least.agent_id} on "
            f"{least.provider}:{least.model}: at least {least.input_tokens} input tokens, "
            f"{least.max_tokens} out), so its first request would be refused; "
            f"{left} run(s) not launched",
        )
        return False

    def not_launched(self, keys: list[TrialKey]) -> None:
        """Leave ``keys`` unlaunched after the sweep stopped: main trials are ``incomplete``."""
        reason = self.aborted.reason if self.aborted is not None else "stopped"
        for key in keys:
            if key.part == "main":
                self.states[key] = "incomplete"
                self.errors[key] = f"not launched: {reason}"

    def finished(self, launch: Launch, record: RunRecord) -> None:
        """Record the run a launch played to its end (whatever its status)."""
        key = launch.key
        self.chosen[key] = record
        self.records.append(record)
        self.latest[key] = record
        self.account.ended(key.label(), record.cost_usd if record.ended else None)
        if key.part == "main":
            self.states[key] = state_of(record)

    def failed(self, launch: Launch, exc: BaseException) -> None:
        """Record a launch that raised (one run's failure; the sweep goes on)."""
        key = launch.key
        self.account.ended(key.label(), None)
        if key.part == "main":
            self.states[key] = "failed"
        self.errors[key] = f"{type(exc).__name__}: {exc}"[:300]

    def cut_off(self, launch: Launch) -> None:
        """Record a launch interrupted in flight: read its newest run back from the ledger."""
        self.adopt(launch.key)

    def resumable(self, key: TrialKey) -> RunRecord | None:
        """The trial's newest run when it can continue in place instead of being paid again.

        A run of this epoch that started (``simulation_started`` logged) and was interrupted:
        it logged ``simulation_ended`` ``interrupted`` (Ctrl-C, cancellation) or stopped with
        no live writer (a killed process).
        """
        record = self.latest.get(key)
        if record is None or record.epoch != self.epoch:
            return None
        return record if record.status == "interrupted" and record.started else None

    def adopt(self, key: TrialKey) -> None:
        """Read back the newest run of ``key`` in this epoch (an interrupted one included)."""
        found = [
            r
            for r in scan_sweep(
                self.plan.spec.runs_dir, self.plan.spec.scenario, self.plan.sweep_id
            )
            if r.key == key and r.epoch == self.epoch
        ]
        if found:
            self.latest[key] = found[-1]

    # -- the sweep's parts ------------------------------------------------------------------

    def qualified(self) -> bool:
        """After the qualification runs: True, or False (and aborted) if one did not complete."""
        keys = self.plan.qualification_keys()
        for key in keys:
            record = self.chosen.get(key)
            if record is None or record.status != "completed":
                why = record.error or record.status if record else self.errors.get(key, "no run")
                said = f"qualification run of {key.cell_id}: {why}"
                if record is not None and key not in self.launched:
                    earlier = Refusal(field="replace", inline=True, reason=(
                        f"{said} (run {record.run_id} of an earlier launch, which stays "
                        "authoritative; {name} plays it again)"
                    ))  # fmt: skip
                    self._stop("qualification_failed", earlier.worded(), earlier)
                else:
                    self._stop("qualification_failed", said)
                for main in self.plan.main_keys():
                    if self.states[main] == "planned":
                        self.states[main] = "incomplete"
                        self.errors[main] = "not launched: qualification_failed"
                return False
        return True

    def failed_trials(self) -> list[TrialKey]:
        """Main trials whose run ended without passing ``round_success``."""
        threshold = self.plan.spec.pass_threshold
        return [
            k
            for k in self.plan.main_keys()
            if (r := self.chosen.get(k)) is not None
            and passes(r, "round_success", threshold) is False
        ]

    def rerun_keys(self) -> list[TrialKey]:
        """The runs ``--stability-retry agent_rerun`` launches: one per failed trial."""
        return [TrialKey(k.cell_id, k.trial, "stability") for k in self.failed_trials()]

    async def replay_judges(self) -> None:
        """Replay the judge on every failed trial (``--stability-retry judge_replay``).

        Within the spend cap: a replay is run only while spent + its estimate (the run's logged
        judge cost) stays within the cap, and the first it refuses stops the replays
        (``aborted.reason = spend_cap``; the trials left have no sample, so their cell's
        stability reads ``unmeasured``).
        """
        failed = self.failed_trials()
        for index, key in enumerate(failed):
            record = self.chosen[key]
            estimate = record.judge_cost_usd  # a replay asks the same judge calls again
            if not self.account.admits(estimate):
                self._stop(
                    "spend_cap",
                    f"spent ${self.account.spent_usd:.6f} + judge replay ~${estimate:.6f} "
                    f"would pass the cap ${self.plan.spec.spend_cap_usd:.6f}; "
                    f"{len(failed) - index} judge replay(s) not run",
                )
                break
            replay = await replay_judge(record.run_url, self.plan.spec.scenario)
            self.replays[key] = replay
            self.account.spent_usd += replay.cost_usd or 0.0

    def summary(self, exit_code: int | None = None) -> SweepSummary:
        """The census, per-cell statistics, spend and abort reason, as ``run_summary.json``."""
        from glossogen.sweep._report import summarize

        return summarize(self, exit_code)

    def exit_code(self) -> int:
        """The sweep's exit code (``glossogen.exit_codes``).

        130 interrupted; 65 qualification failed; 20 a trial not measured (spend cap, run
        timeout, turn limit, still running); 69 every failed run failed for transport (its
        logged failures were all connection/timeout/unavailable: the provider was
        unreachable, not the scenario failing); 1 a run failed; else 0.
        """
        if self.aborted is not None and self.aborted.reason == "interrupted":
            return int(exit_codes.INTERRUPTED)
        if self.aborted is not None and self.aborted.reason == "qualification_failed":
            return int(exit_codes.REFUSED)
        states = set(self.states.values())
        if self.aborted is not None or states & {"incomplete", "planned", "running"}:
            return int(exit_codes.NOT_MEASURED)
        if "failed" in states:
            failed = [self.chosen.get(k) for k, state in self.states.items() if state == "failed"]
            if all(r is not None and r.transport_failure for r in failed):
                return int(exit_codes.TRANSPORT)
            return int(exit_codes.EVALUATIONS_FAILED)
        return int(exit_codes.OK)

    def interrupted(self) -> None:
        """Record a Ctrl-C: launched-but-unfinished and unlaunched trials are incomplete.

        The ledger is read once more for the trials this launch started (their runs have
        sealed their logs by now, or play on on a worker), so each shows its run id, status
        and verdicts; a trial never launched says ``not launched: interrupted``.
        """
        detail = "interrupted (Ctrl-C or cancellation); each run kept its log"
        if self.mode != "in-process":
            detail += "; runs on workers play on, and the next launch counts them"
        self._stop("interrupted", detail)
        launched = set(self.launched)
        try:
            found = scan_sweep(self.plan.spec.runs_dir, self.plan.spec.scenario, self.plan.sweep_id)
        except StorageError:
            found = []  # the summary keeps what each run's end reported
        for record in found:  # in ledger order: the newest run of a key comes last
            if record.key in launched and record.epoch == self.epoch:
                self.latest[record.key] = record
        for key, state in self.states.items():
            if state == "planned" and key not in launched:
                self.errors.setdefault(key, "not launched: interrupted")
            if state in ("planned", "running"):
                self.states[key] = "incomplete"

    def close(self) -> None:
        """End this launch: its claims can be taken over by the next one."""
        self.claims.close()

    def write(self, exit_code: int | None = None) -> SweepSummary:
        """Write ``run_summary.json`` (atomically) and return what was written."""
        summary = self.summary(exit_code)
        write_summary(self.plan.spec.runs_dir, summary)
        return summary
