"""The run list of the browser: the export's selection over a cache of each run's record.

Every row is the export's :class:`~glossogen.export.RunRecord` (``load_run``: the folder's JSON
files and its log's head and tail), selected by the export's own rules (``select_runs`` with
its filters and knob grammar), so the list and a download of the same filters hold the same
runs. The cache keeps one record per run keyed by the size and modification time
(:meth:`~glossogen.storage.RunFolder.stamp`) of every file ``load_run`` reads: the log, the
JSON files (config, labels, lineage) and the reports (ours and a GlossoGen 0.5 one), so a live
run, whose log grows, a run ``evaluate`` just scored or one whose labels were edited is read
again; a finished, untouched one never is.
Whether an unfinished run (or one that ended resumable) is ``running`` or not depends on its
writer or launched process, not its log, so that is asked again on every listing by
RunView's own rule (:func:`~glossogen.eventlog.live_status`): a run being resumed reads
``running`` from the moment its launch returns, as its page does. A folder that was claimed
(``config.json``) but whose log has not begun is listed ``queued`` (its player, a worker's
flow run or a detached process, has not begun: no log yet, or an empty one it holds), read from
its JSON files alone; an empty log no process holds is skipped with the export's note.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from glossogen.eventlog import QUEUED, live_status
from glossogen.eventlog import RESUMABLE as RESUMED_ENDINGS
from glossogen.export import DEFAULT_GROUP as DEFAULT_GROUP
from glossogen.export import FilterSelection, RunRecord, load_run, queued_run, select_runs
from glossogen.export._runlog import RUNNING
from glossogen.export._select import without_runs_dir
from glossogen.storage import CONFIG, LABELS, LINEAGE, RunFolder, RunStore

PAGE_SIZE = 50
"""Rows per page of the run list by default."""

PAGE_SIZES = (25, 50, 100, 200)
"""The page sizes the list offers (``?per_page=``); another is refused (422)."""

HEADLINE_METRICS = ("round_success", "mean_chars_per_round")
"""The report's metrics the list shows beside rounds won, when the report holds them: the share
of rounds won and the characters a round took (the evaluation report's headline charts)."""

RESUMABLE = ("stopped", "error", "interrupted")
"""Statuses the list marks as resumable (``glossogen run --resume``)."""


def read_files(scenario: str) -> tuple[str, ...]:
    """Every file of a run folder ``load_run`` reads, the log first (the cache's key)."""
    from glossogen.evaluation._report import foreign_report_name

    return (
        f"{scenario}.jsonl",
        CONFIG,
        LABELS,
        LINEAGE,
        f"{scenario}_report.json",
        foreign_report_name(scenario),
        "judge_flips.json",
    )


Stamp = tuple[tuple[int, float] | None, ...]


class RunCache:
    """One :class:`RunRecord` per run, read again only when a file it was read from changes.

    Thread-safe: the list is served from FastAPI's thread pool.
    """

    def __init__(self) -> None:
        """Start empty."""
        self._records: dict[str, tuple[Stamp, RunRecord]] = {}
        self._folders: dict[str, RunFolder] = {}
        self._lock = threading.Lock()
        self.reads = 0
        """How many records were read from storage (a hit reads none)."""

    def load(self, store: RunStore, run_id: str, queued: bool = True) -> RunRecord:
        """The run's record, from the cache while its files are unchanged (``select_runs``' loader).

        ``queued``: a claimed folder whose player has not begun its log (missing, or empty
        while a live process is about to write it: :meth:`RunFolder.unbegun`) is read as
        ``queued`` (the run list's reading). Otherwise the folder is read as :func:`load_run`
        reads it (an empty log no process holds is not a run log), as the analysis reads runs
        on every surface.

        Raises:
            FileNotFoundError: the run has no log (yet).
            ValueError: ``load_run``'s refusals (not a run log, a broken JSON file).
            StorageError: the storage is unreachable.
        """
        key = f"{store.runs_dir}|{run_id}"
        with self._lock:
            folder = self._folders.get(key)
        if folder is None:
            folder = self._folders.setdefault(key, store.open_run(run_id))
        stamp = tuple(folder.stamp(name) for name in read_files(folder.scenario))
        if queued and (stamp[0] is None or stamp[0][0] == 0) and folder.unbegun():
            claim = queued_run(folder)
            if claim is None:
                raise FileNotFoundError(folder.log_url)
            return claim
        with self._lock:
            cached = self._records.get(key)
        if cached is not None and cached[0] == stamp:
            record = cached[1]
            facts = record.facts
            if facts.ended_status is None or facts.ended_status in RESUMED_ENDINGS:  # ask anew
                facts.status = live_status(facts.ended_status, folder.is_locked())
            return record
        record = load_run(store, run_id)
        with self._lock:
            self.reads += 1
            self._records[key] = (stamp, record)
        return record

    def known_group(self, runs_dir: str, run_id: str) -> str | None:
        """The group of run ``run_id`` under ``runs_dir`` as the cache read it; None if unknown.

        A record is kept only of a run whose log was read, and a run's group is its log's
        ``simulation_started`` (:func:`~glossogen.export.group_of`), which appending never
        changes: the live routes ask here before reading a log's head. None for a run the
        cache holds no record of (never listed, or queued when it was).
        """
        key = f"{RunStore(runs_dir).runs_dir}|{run_id}"
        with self._lock:
            cached = self._records.get(key)
        return cached[1].group if cached is not None else None


@dataclass(frozen=True)
class RunFilters:
    """The run list's filters, as the page's query string carries them.

    Attributes:
        scenario: Only this scenario (empty: every one).
        labels: Labels every run must hold, ``key=value`` or a bare flag (as the export reads).
        run_id_contains: A substring of the run id.
        status: A status of the one vocabulary (or a ``status_detail``).
        knob: Knob conditions in the export's grammar (``round_budget_chars>=200``).
        group: Only this group (empty: every group).
    """

    scenario: str = ""
    labels: tuple[str, ...] = ()
    run_id_contains: str = ""
    status: str = ""
    knob: tuple[str, ...] = ()
    group: str = ""

    def selection(self) -> FilterSelection:
        """The export's filter selection for these filters (the group is the list's own)."""
        return FilterSelection(
            scenario=[self.scenario] if self.scenario else None,
            labels=list(self.labels) or None,
            run_id_contains=self.run_id_contains or None,
            status=self.status or None,
            knob=list(self.knob) or None,
        )

    def as_json(self) -> dict[str, Any]:
        """The filters as the export REST body's ``selection`` (the dialog's "all matching")."""
        return {"kind": "filters", **self.selection().model_dump(exclude={"kind"})}


@dataclass
class RunRow:
    """One row of the run list (what the page shows of a run)."""

    record: RunRecord
    group: str
    day: str
    round_count: int | None
    lineage_badges: list[str]
    scores: list[tuple[str, float | None]]
    """The report's :data:`HEADLINE_METRICS` it holds, in that order (empty: not evaluated)."""
    evaluated: bool

    live_seconds: float | None = None
    """For a live run, the seconds it has played as of the listing (its duration up to its last
    event plus the time since): the page counts on from there."""

    @property
    def live(self) -> bool:
        """True while a writer holds the run."""
        return self.record.status == RUNNING

    @property
    def queued(self) -> bool:
        """True for a claimed run whose log has not begun (it has no page yet)."""
        return self.record.status == QUEUED

    @property
    def resumable(self) -> bool:
        """True for a run ``--resume`` continues."""
        return self.record.status in RESUMABLE


@dataclass
class RunListPage:
    """One page of the list: its rows, the counts behind "showing X of Y", the paging."""

    rows: list[RunRow]
    matched: int
    total: int
    page: int
    pages: int
    per_page: int = PAGE_SIZE
    unreadable: dict[str, str] = field(default_factory=dict)
    """Runs left out as unreadable: run id to why, its file named within the runs directory
    (the page names each, as the CLI's notes and MCP's ``unreadable_runs`` do)."""

    @property
    def any_live(self) -> bool:
        """Whether any row shown is live or queued (the page then refreshes itself)."""
        return any(r.live or r.queued for r in self.rows)


def _badges(lineage: dict[str, Any] | None, resumes: int) -> list[str]:
    # A derived run's first run_resumed starts what it played itself: not a resume.
    resumed = resumes - (1 if lineage else 0)
    again = [f"resumed ×{resumed}" if resumed > 1 else "resumed"] if resumed > 0 else []
    if not lineage:
        return again
    return _derived_badges(lineage) + again


def _derived_badges(lineage: dict[str, Any]) -> list[str]:
    # A derived run whose rounds 1..N were played again from the source's tape (``--replay``)
    # says so: its prefix is the replay's, not a copy.
    replayed = ", replayed" if lineage.get("prefix") == "replayed" else ""
    return [_derivation_badge(lineage) + replayed]


def _derivation_badge(lineage: dict[str, Any]) -> str:
    derivation = str(lineage.get("derivation") or lineage.get("derivation_type") or "derived")
    after = lineage.get("after_round")
    seat = lineage.get("replaced_agent_id")
    if derivation == "fork_at_round":
        return f"fork after round {after}"
    if derivation == "replace_agent":
        return f"replace-agent {seat} after round {after}"
    if derivation == "cross_run_replace_agent":
        return f"cross-run {seat} after round {after}"
    return derivation


def seconds_since(stamp: str | None, now: datetime) -> float:
    """Seconds from ``stamp`` (an event's ISO 8601 time) to ``now``; 0 when unknown or ahead."""
    if not stamp:
        return 0.0
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return max(0.0, (now - then).total_seconds())


def _row(record: RunRecord, now: datetime) -> RunRow:
    started = record.facts.started_at or ""
    try:
        day = datetime.fromisoformat(started.replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        day = "unknown day"
    if not started and record.status == QUEUED:  # no log yet: the day the folder was claimed
        claimed = int(record.run_id.rsplit("/", 1)[1])
        day = datetime.fromtimestamp(claimed, UTC).date().isoformat()
    count = record.config.get("round_count")
    metrics = (record.report or {}).get("metrics") or {}
    scores = [
        (name, entry.get("score") if isinstance(entry, dict) else None)
        for name in HEADLINE_METRICS
        if isinstance(entry := metrics.get(name), dict)
    ]
    return RunRow(
        record=record,
        group=record.group,
        day=day,
        round_count=count if isinstance(count, int) else None,
        lineage_badges=_badges(record.lineage, record.facts.resumes),
        scores=scores,
        evaluated=bool(metrics),
        live_seconds=(record.facts.duration_seconds or 0.0)
        + seconds_since(record.facts.ended_at, now)
        if record.status == RUNNING
        else None,
    )


def list_runs(
    runs_dir: str,
    filters: RunFilters,
    cache: RunCache,
    page: int = 1,
    per_page: int = PAGE_SIZE,
    now: datetime | None = None,
) -> RunListPage:
    """Select the runs matching ``filters``, newest first, and cut out page ``page`` (from 1).

    A page holds ``per_page`` rows (one of :data:`PAGE_SIZES`); ``now`` (default: the clock)
    is when a live row's duration is counted to.

    Raises:
        SelectionError: a knob condition is malformed or cannot be read as the recorded type
            (its message is the CLI's one line).
        RunsDirError: the runs directory is missing; StorageError: it cannot be read.
    """
    selected = select_runs(runs_dir, filters.selection(), max_runs=sys.maxsize, load=cache.load,
                           absent_scenarios=True)  # fmt: skip
    records = [r for r in selected.records if not filters.group or r.group == filters.group]
    records.sort(key=lambda r: (int(r.run_id.rsplit("/", 1)[1]), r.run_id), reverse=True)
    pages = max(1, -(-len(records) // per_page))
    page = min(max(1, page), pages)
    shown = records[(page - 1) * per_page : page * per_page]
    return RunListPage(
        rows=[_row(r, now or datetime.now(UTC)) for r in shown],
        matched=len(records),
        total=selected.scanned,
        page=page,
        pages=pages,
        per_page=per_page,
        unreadable={r: without_runs_dir(why, runs_dir) for r, why in selected.unreadable.items()},
    )
