"""The sweep's ledger: the runs it launched, found in the runs folder by their labels.

Nothing about a sweep's progress is kept anywhere else: each run's ``labels.json`` says which
(sweep, cell, trial, epoch, part) it measures, and its event log says how it ended. A second
launch of the same spec reads this ledger and launches only what is missing.
"""

from __future__ import annotations

from pydantic import BaseModel, TypeAdapter

from glossogen.eventlog import (
    AgentRunCycleFailed,
    EventLogRead,
    RunView,
    SimulationEnded,
    read_events,
    unsettled_requests,
)
from glossogen.storage import RunFolder, RunStore, StorageError
from glossogen.sweep._grid import Part, TrialKey

TRANSPORT_KINDS = frozenset({"connection", "timeout", "unavailable"})
"""``agent_run_cycle_failed.error_kind`` values that mean the provider could not be reached."""
RUNNING = "running"
"""Status of a run whose log has no ``simulation_ended`` yet (live, or crashed and awaiting
reconcile)."""


class RunRecord(BaseModel):
    """One run of a sweep as its folder and log tell it.

    Attributes:
        run_id: ``<scenario>/<unix_ts>``.
        run_url: The run folder.
        cell_id: The ``cell`` label.
        trial: The ``trial`` label (1-based).
        part: ``main``, ``qualification`` or ``stability``.
        epoch: The ``epoch`` label (``--replace`` starts a new epoch).
        status: ``simulation_ended.status`` (``completed``, ``error``, ``interrupted``,
            ``incomplete``) or ``running`` when the log has not ended.
        error: ``simulation_ended.error``, if any.
        verdicts: Each round verdict in log order (``round_result_recorded.success``; a void
            round counts as not won).
        rounds_played: Rounds with a recorded verdict.
        rounds_won: Rounds whose every verdict was a success.
        round_success: ``rounds_won / rounds_played`` (null before any verdict).
        total_messages: Messages sent (postmortems included), from ``simulation_ended``.
        total_chars: Characters sent, from ``simulation_ended``.
        cost_usd: ``simulation_ended.total_cost_usd`` (null: not costed or not ended).
        judge_calls: ``judge_called`` events in the log.
        judge_cost_usd: The logged cost of those calls (USD; an uncosted call counts 0).
        responses: The agents' requests the provider answered (an abandoned request that had
            no answer is not one).
        spent_usd: What the run's own requests have committed so far, as a resume's spend cap
            counts it: the priced calls' known cost plus the reserved worst case of each
            request sent and never settled (killed in flight; its cost is unknown).
    """

    run_id: str
    run_url: str
    cell_id: str
    trial: int
    part: Part = "main"
    epoch: int = 1
    status: str
    error: str | None = None
    verdicts: list[bool] = []
    rounds_played: int = 0
    rounds_won: int = 0
    round_success: float | None = None
    total_messages: int | None = None
    total_chars: int | None = None
    cost_usd: float | None = None
    judge_calls: int = 0
    judge_cost_usd: float = 0.0
    responses: int = 0
    spent_usd: float = 0.0
    started: bool = False
    """True when the log holds ``simulation_started`` (a run that can be resumed in place)."""
    endings: int = 0
    """``simulation_ended`` events in the log (one more per interruption that was resumed)."""
    failure_kinds: list[str] = []
    """``error_kind`` of each ``agent_run_cycle_failed`` in the log, distinct, in log order."""

    @property
    def transport_failure(self) -> bool:
        """True when the run ended ``error`` and every logged failure was transport.

        Transport: the provider unreachable, timing out or unavailable (:data:`TRANSPORT_KINDS`).
        """
        return (
            self.status == "error"
            and bool(self.failure_kinds)
            and set(self.failure_kinds) <= TRANSPORT_KINDS
        )

    @property
    def cost_basis(self) -> bool:
        """True when the run's logged cost says what a run of its cell spends.

        It ended, is costed, and some model call was answered (an agent's response or a judge
        call): a run whose every call failed (provider unreachable) logged $0 for nothing it
        measured, and taking that as an estimate would let a spend cap admit every run.
        """
        return (
            self.ended
            and self.cost_usd is not None
            and (self.responses > 0 or self.judge_calls > 0)
        )

    @property
    def key(self) -> TrialKey:
        """The (cell, trial, part) this run measures."""
        return TrialKey(self.cell_id, self.trial, self.part)

    @property
    def ended(self) -> bool:
        """True once the log holds ``simulation_ended``."""
        return self.status != RUNNING


def writer_alive(run_url: str) -> bool:
    """Whether a live process is writing the run in ``run_url``: it holds the folder's lock.

    Every process that appends to a run's log holds its lock (``glossogen.storage.RunLock``):
    locally an ``flock`` that dies with its process, on S3 a lease it renews while it plays, so
    a crashed or killed writer never holds it for long.
    """
    return RunFolder.at(run_url).is_locked()


_PART: TypeAdapter[Part] = TypeAdapter(Part)
"""Checks a label's ``part`` (an unknown one fails as the record's own field would)."""


def read_run(
    store: RunStore,
    run_id: str,
    scenario: str,
    labels: dict[str, object],
) -> RunRecord:
    """Build the record of one labelled run from its event log.

    A log without ``simulation_ended`` is ``running`` only while :func:`writer_alive`; with no
    live writer (a killed or crashed process) the run is ``interrupted``, so the sweep
    launches its trial again instead of waiting for it forever.

    Raises:
        StorageError: the storage is unreachable.
    """
    folder = store.open_run(run_id)
    url = folder.url
    try:
        read = read_events(folder.log_url)
    except FileNotFoundError:
        read = EventLogRead()
    view = RunView.of(read)
    ended = view.ended
    if ended is None:  # asked only where it decides: running or stopped
        view.live = writer_alive(url)
    kinds: list[str] = []
    for event in view.events:
        if isinstance(event, AgentRunCycleFailed) and event.error_kind not in kinds:
            kinds.append(event.error_kind)
    status: str = view.status
    error = ended.error if ended is not None else None
    if status == "stopped":  # the sweep launches a stopped trial again as interrupted
        status = "interrupted"
        error = "no live writer: the run stopped without logging simulation_ended"
    verdicts = [
        not void and all(v.success for v in found)
        for _, (found, void) in sorted(view.verdicts.items())
    ]
    played, won = len(verdicts), sum(verdicts)
    spend = view.spend
    messages = ended.total_messages if ended is not None else None
    chars = ended.total_chars if ended is not None else None
    cost = ended.total_cost_usd if ended is not None else None
    judge_calls, responses = spend.judge_calls, spend.answered_requests
    judge_cost = spend.judge_cost_usd or 0.0  # a judge call not costed counts 0 here
    killed = sum(sent.reserved_usd or 0.0 for sent in unsettled_requests(view))
    started = view.is_run_log
    endings = sum(1 for e in view.events if isinstance(e, SimulationEnded))
    return RunRecord(
        run_id=run_id,
        run_url=url,
        cell_id=str(labels["cell"]),
        trial=int(str(labels["trial"])),
        part=_PART.validate_python(str(labels.get("part", "main"))),
        epoch=int(str(labels.get("epoch", "1"))),
        status=status,
        error=error,
        verdicts=verdicts,
        rounds_played=played,
        rounds_won=won,
        round_success=won / played if played else None,
        total_messages=messages,
        total_chars=chars,
        cost_usd=cost,
        judge_calls=judge_calls,
        judge_cost_usd=judge_cost,
        responses=responses,
        spent_usd=spend.known_cost_usd + killed,
        started=started,
        endings=endings,
        failure_kinds=kinds,
    )


def scan_sweep(runs_dir: str, scenario: str, sweep_id: str) -> list[RunRecord]:
    """Return every run of ``sweep_id`` under ``runs_dir``, oldest first.

    A run belongs to the sweep when its ``labels.json`` has ``sweep = sweep_id`` and names a
    ``cell`` and a ``trial``. Runs without ``labels.json`` (older or foreign) are skipped.

    Raises:
        StorageError: the storage is unreachable.
    """
    store = RunStore(runs_dir)
    records = []
    for run_id in store.list_runs(scenario):
        url = store.run_url(run_id)
        try:
            labels = store.read_json(url, "labels.json")
        except (FileNotFoundError, ValueError):
            continue
        except StorageError:
            raise
        if not isinstance(labels, dict) or labels.get("sweep") != sweep_id:
            continue
        if "cell" not in labels or "trial" not in labels:
            continue
        records.append(read_run(store, run_id, scenario, labels))
    return records


def current_epoch(records: list[RunRecord]) -> int:
    """The newest epoch among ``records`` (1 when there are none)."""
    return max((r.epoch for r in records), default=1)


def authoritative(records: list[RunRecord], epoch: int) -> dict[TrialKey, RunRecord]:
    """Pick the run that stands for each (cell, trial, part) of ``epoch``.

    The first run that was not ``interrupted`` wins (the first attempt is authoritative); a
    trial whose every run was interrupted is represented by none, so it is launched again.
    """
    chosen: dict[TrialKey, RunRecord] = {}
    for record in records:
        if record.epoch != epoch or record.status == "interrupted":
            continue
        chosen.setdefault(record.key, record)
    return chosen


def relaunches(records: list[RunRecord], key: TrialKey, epoch: int) -> int:
    """How many runs of ``key`` in ``epoch`` were interrupted (the next launch's suffix)."""
    return sum(
        1 for r in records if r.key == key and r.epoch == epoch and r.status == "interrupted"
    )
