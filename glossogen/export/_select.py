"""Resolving a selection against a runs directory: folder names first, then each run's files.

Filters resolve against the runs directory itself: folder names first (``scenario``,
``run_id_contains``), then each run's ``labels.json`` and recorded config (``labels``,
``knob``), then its event log's head and tail (``status``, ``contains_agent_id``), so a run
never evaluated, or still being written, is selectable too.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from glossogen.eventlog import QUEUED
from glossogen.export._knobfilter import (
    KnobCondition,
    NamedRunsRefused,
    RunsMissing,
    RunsUnreadable,
    SelectionError,
    condition_refusals,
    parse_conditions,
    raise_together,
)
from glossogen.export._record import RunRecord, claimed_knobs, load_run, queued_run
from glossogen.export._runlog import LogFacts
from glossogen.export._selection import (
    FilterSelection,
    RunIdSelection,
    Selection,
    _status_word,
)
from glossogen.refusals import Refusal, quote, refusal_of, shown, worded
from glossogen.storage import RunFolder, RunIdRefused, RunStore, path_kind, resolve_run_id

MAX_RUNS = 5000
"""Default ceiling on runs per export (``max_runs`` overrides it)."""


@dataclass
class SelectedRuns:
    """The resolved selection.

    Attributes:
        records: The selected runs, in run id order (scenario, then timestamp).
        missing_run_ids: Explicit ids that no longer resolve (no folder or no log).
        scanned: Run folders considered before filtering.
        unreadable: Run folders skipped because their files could not be read, with the reason.
        unstarted: Run folders the filters select whose event log does not exist (a claimed
            run whose player has not begun, or a log deleted), by run id: not in ``records``
            (there is nothing of them to export); a reader that must account for every run
            selected (``glossogen verify``) names them.
    """

    records: list[RunRecord] = field(default_factory=list)
    missing_run_ids: list[str] = field(default_factory=list)
    scanned: int = 0
    unreadable: dict[str, str] = field(default_factory=dict)
    unstarted: list[str] = field(default_factory=list)
    _places: set[str] = field(default_factory=set, repr=False)

    def add(self, record: RunRecord) -> None:
        """Keep ``record`` unless its folder is one kept already under another run id.

        A run folder linked into the runs dir under a second name (``veyru/17`` and a link
        ``veyru/18`` to it) is one run: the first name selected keeps it, so no command
        counts its figures twice.
        """
        place = record.place()
        if place not in self._places:
            self._places.add(place)
            self.records.append(record)

    @property
    def scenarios(self) -> list[str]:
        """The selected runs' scenarios, sorted."""
        return sorted({r.scenario for r in self.records})


def named_refusals(selection: Any, selected: SelectedRuns) -> list[NamedRunsRefused]:
    """The refusals of the runs ``selection`` names: ids that no longer resolve, then unreadable.

    A run named by id (``--run-id``, ``run_ids``) that cannot be read is refused as a missing
    one is (:class:`RunsUnreadable`); a run the filters found that cannot be read is skipped
    with a note instead. The export, the evaluation and the analysis refuse through this.
    """
    refused: list[NamedRunsRefused] = []
    if selected.missing_run_ids:
        refused.append(RunsMissing(selected.missing_run_ids))
    if isinstance(selection, RunIdSelection) and selected.unreadable:
        refused.append(RunsUnreadable(selected.unreadable))
    return refused


def of_group(selected: SelectedRuns, selection: Any, group: str) -> SelectedRuns:
    """``selected`` kept to the runs of ``group``; an explicit id of another group's run is missing.

    The one rule of a group's selection (REST's ``{slug}``), the export's and the analysis's:
    filters select within the group, and an id ``selection`` names of a run in another group
    counts as one that no longer resolves (the ids in the order given).
    """
    records = [r for r in selected.records if r.group == group]
    missing = set(selected.missing_run_ids)
    order = selected.missing_run_ids
    if isinstance(selection, RunIdSelection):
        missing |= {r.run_id for r in selected.records if r.group != group}
        order = list(dict.fromkeys(selection.run_ids))
    return SelectedRuns(records=records, missing_run_ids=[i for i in order if i in missing],
                        scanned=selected.scanned, unreadable=selected.unreadable,
                        unstarted=selected.unstarted)  # fmt: skip


SERVED_RUNS_DIR = "the server's runs directory"
"""How a server's refusal names its runs directory to a client (REST, MCP), never by its path:
the client did not give the path and cannot act on it."""


def not_begun_line(run_id: str) -> str:
    """A server's line for a run claimed whose log has not begun (REST's run routes, MCP's tools).

    ``run 'veyru/1' has no event log in the server's runs directory``: a claimed folder
    (``config.json``) whose player has not written its first event; an id under which no run
    is at all is the resolver's ``run ids that no longer resolve`` instead.
    """
    return f"run {quote(run_id)} has no event log in {SERVED_RUNS_DIR}"


def _roots(runs_dir: str) -> list[str]:
    """The runs dir's own path as given and as resolved, longest first.

    Only an absolute path or a URL: a relative name may be a word of the line.
    """
    roots = {runs_dir.rstrip("/")}
    with contextlib.suppress(Exception):  # only a nicer line: the text stands as it is
        roots.add(RunStore(runs_dir).runs_dir.rstrip("/"))
    return [r for r in sorted(roots, key=len, reverse=True) if os.path.isabs(r) or "://" in r]


def within_runs_dir(text: str, runs_dir: str) -> str:
    """``text`` naming each file under the runs dir by its path within it.

    ``/tmp/x/runs/veyru/1796446580/labels.json is not UTF-8 text ...`` reads
    ``veyru/1796446580/labels.json is not UTF-8 text ...``: how every surface (the CLI's notes,
    REST, MCP, the run page) names a run's file that cannot be read.
    """
    for root in _roots(runs_dir):
        text = text.replace(root + "/", "")
    return text


def without_runs_dir(text: str, runs_dir: str) -> str:
    """``text`` without the runs dir's own path: a file under it by its path within it.

    The folder itself is :data:`SERVED_RUNS_DIR`. Only an absolute path or a URL is cut (as
    given and as resolved), never a relative name, which may be a word of the line.
    """
    for root in _roots(runs_dir):
        text = text.replace(repr(root), SERVED_RUNS_DIR).replace(root + "/", "")
        text = text.replace(root, SERVED_RUNS_DIR)
    return text


def unreadable_reason(exc: BaseException, runs_dir: str) -> str:
    """Why a run cannot be read, as every surface names it.

    The error's first line, its file by its path within the runs dir
    (:func:`within_runs_dir`), at most 300 characters.
    """
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    return within_runs_dir(first, runs_dir)[:300]


def served_refusal_line(
    exc: BaseException, runs_dir: str, names: Mapping[str, str] | None = None
) -> str:
    """The first line of ``exc`` as a server's client reads it: :func:`without_runs_dir`.

    A refusal carried as data (:class:`~glossogen.refusals.Refusal`) is cut only in the words
    the library wrote (:meth:`~glossogen.refusals.Refusal.served`): what the client sent, on
    any field, is quoted as sent, never cut (the client typed that path itself, so echoing it
    names nothing new; a run's path cut to its run id would quote a valid run id as the thing
    refused, ``run_ids 'veyru/1': a path, ...``). Any other line is cut whole.
    """
    refused = refusal_of(exc)
    if isinstance(refused, Refusal):
        served = refused.served(functools.partial(without_runs_dir, runs_dir=runs_dir))
        return served.worded(names).splitlines()[0]
    line = (worded(exc, names) or type(exc).__name__).splitlines()[0]
    return without_runs_dir(line, runs_dir)


class RunsDirError(OSError):
    """The runs directory does not exist or is not a folder (one line naming it).

    Attributes:
        reason: What is wrong, without the path (``does not exist``), as a server words it
            to its client (:data:`SERVED_RUNS_DIR` ``does not exist``).
    """

    def __init__(self, runs_dir: str, reason: str) -> None:
        """Keep the reason; the line names the folder (``'runs' does not exist``)."""
        super().__init__(f"{runs_dir!r} {reason}")
        self.reason = reason


def check_runs_dir(runs_dir: str) -> None:
    """Check that ``runs_dir`` is an existing folder (or, on object storage, a prefix).

    A runs directory that is not there is refused rather than read as holding no run: a
    mistyped path would otherwise export empty tables and report success.

    Raises:
        RunsDirError: ``runs_dir`` does not exist or is a file.
        StorageError: the storage is unreachable.
    """
    if not runs_dir.strip():  # never read as the working directory
        raise RunsDirError(runs_dir, "names no folder")
    kind = path_kind(runs_dir)
    if kind == "folder":
        return
    local = RunStore(runs_dir).local
    if kind == "file":
        raise RunsDirError(runs_dir, f"is {'a file' if local else 'an object'}, not a folder")
    raise RunsDirError(runs_dir, "does not exist")


def _has_labels(labels: dict[str, Any], wanted: list[str]) -> bool:
    for label in wanted:
        key, eq, value = label.partition("=")
        if eq:
            if labels.get(key) != value:
                return False
        elif labels.get(key) is not True:
            return False
    return True


def _check_limit(count: int, max_runs: int) -> None:
    if count > max_runs:
        over = f"the selection holds {count} runs, over the {max_runs}-run limit"
        raise SelectionError.of(
            Refusal(field="max_runs", reason=f"{over}; narrow the selection or raise", trails=True)
        )


def _absent_scenarios(named: list[str], run_ids: list[str], runs_dir: str) -> list[SelectionError]:
    """Refuse each ``scenario`` filter value naming a scenario no run under ``runs_dir`` has.

    A mistyped scenario would otherwise select nothing, and an export, analysis or
    verification of nothing would report success.

    Returns:
        One ``SelectionError`` per such value (field ``scenario``), naming it and the
        scenarios there are; none when every one has runs.
    """
    there = sorted({r.split("/", 1)[0] for r in run_ids})
    which = f"scenarios there: {', '.join(there)}" if there else "it holds no run"
    refused = []
    for absent in dict.fromkeys(name for name in named if name not in there):
        message = f"{shown(absent)} has no run under {runs_dir} ({which})"
        served = f"{shown(absent)} has no run in {SERVED_RUNS_DIR} ({which})"
        refused.append(SelectionError.of(
            Refusal(field="scenario", reason=message), Refusal(field="scenario", reason=served)
        ))  # fmt: skip
    return refused


def _select_by_ids(
    store: RunStore,
    selection: RunIdSelection,
    max_runs: int,
    load: Callable[[RunStore, str], RunRecord],
    result: SelectedRuns,
) -> None:
    """Load the runs named by id into ``result``; an id that does not resolve is missing.

    Raises:
        SelectionError: more ids than ``max_runs`` (field ``max_runs``).
    """
    wanted = list(dict.fromkeys(selection.run_ids))
    _check_limit(len(wanted), max_runs)
    for run_id in wanted:
        result.scanned += 1
        try:  # the one resolver: a malformed id refused, one naming no run missing
            resolve_run_id(store.runs_dir, run_id, "run_ids")
        except RunIdRefused as exc:
            if exc.refusal is not None:
                raise SelectionError.of(exc.refusal) from None
            result.missing_run_ids.append(run_id)
            continue
        try:
            result.add(load(store, run_id))
        except FileNotFoundError:
            result.missing_run_ids.append(run_id)
        except ValueError as exc:  # not a run log, a broken JSON file: named, not a stop
            result.unreadable[run_id] = unreadable_reason(exc, store.runs_dir)


def check_selection(runs_dir: str, selection: Any) -> list[str] | None:
    """Refuse what :func:`select_runs` would refuse, and the named runs it could not read.

    The runs directory, the selection's shape, its knob conditions' syntax, a ``status`` that
    is no run's, a ``scenario`` no run under ``runs_dir`` has (its folders are listed), and
    a knob value the type a run recorded cannot read (``round_count>=abc``: each run the
    folder names select is judged by its claim's ``config.json`` and ``labels.json``, as
    :func:`select_runs` judges it; a run with no ``config.json``, or whose ``config.json``
    or ``labels.json`` cannot be read, is left to :func:`select_runs`; no log is read for
    filters), run ids that no longer resolve, and run ids naming runs that cannot be read
    (each named run's files and log head read as :func:`select_runs` reads them: a run the
    user named is refused, never skipped): a cohort's evaluation is refused by these before
    its flow run starts.

    Returns:
        For filters, the run ids listed under ``runs_dir``, which :func:`select_runs` takes
        (``listed``) instead of listing the folder again; None for run ids (nothing listed).

    Every value refused is named: the values no run need be read for first (each one, and
    no run is read while one is refused, :func:`_checked`), then each knob condition its runs
    cannot read, or the named runs missing and unreadable, both.

    Raises:
        RunsMissing: run ids that no longer resolve (carrying the ``RunsUnreadable`` too, in
            ``also``, when some named runs cannot be read).
        RunsUnreadable: run ids naming runs that cannot be read, each with why.
        RunsDirError, SelectionError, pydantic.ValidationError, StorageError: as
            :func:`select_runs` raises them (a ``SelectionError`` naming each value refused).
    """
    selection, every = _checked(runs_dir, selection, absent_scenarios=False)
    if isinstance(selection, RunIdSelection):
        store = RunStore(runs_dir)
        missing = [r for r in dict.fromkeys(selection.run_ids) if not _resolves(store, r)]
        named = SelectedRuns()
        heads = functools.partial(load_run, head_only=True)  # as a cohort's selection reads
        there = [r for r in dict.fromkeys(selection.run_ids) if r not in missing]
        if there:  # the ids that resolve: each read, as the export reads it
            ids = RunIdSelection.model_construct(run_ids=there)  # checked above
            _select_by_ids(store, ids, len(there), heads, named)
        # as the export refuses them (exit 66 / 404), before any flow run: both named
        raise_together(
            named_refusals(
                selection, SelectedRuns(missing_run_ids=missing, unreadable=named.unreadable)
            )
        )
        return None
    raise_together(_knob_value_refusals(runs_dir, selection, every))
    return every


def _knob_value_refusals(
    runs_dir: str, selection: FilterSelection, every: list[str]
) -> list[SelectionError]:
    """Each knob condition a run the folder names select cannot read, judged by its claim.

    Each run's ``config.json`` and ``labels.json`` (:func:`claimed_knobs`), as
    :func:`select_runs` judges it; a run with no ``config.json``, or whose files cannot be
    read, is left to :func:`select_runs`. A condition is refused once (its first run that
    cannot read it), in the order given; the reading stops once every one is refused.
    """
    conditions = parse_conditions(selection.knob)
    refused: dict[KnobCondition, SelectionError] = {}
    if not conditions:
        return []
    store = RunStore(runs_dir)
    for run_id in _named(every, selection):
        try:
            claimed = claimed_knobs(store.open_run(run_id))
        except ValueError:  # unreadable: select_runs names it
            continue
        if claimed is None:  # its knobs are in its log alone: select_runs reads them
            continue
        config, labels, _ = claimed
        if selection.labels and not _has_labels(labels, selection.labels):
            continue
        for condition in conditions:  # as _matches: a value it cannot read refused
            if condition not in refused:
                try:
                    condition.matches(config)
                except SelectionError as exc:
                    refused[condition] = exc
        if len(refused) == len(set(conditions)):
            break
    return [refused[c] for c in dict.fromkeys(conditions) if c in refused]


def _resolves(store: RunStore, run_id: str) -> bool:
    """Whether ``run_id`` names a run folder with a log (what :func:`select_runs` can load).

    An id that names no run folder (``veyru/abc``) does not (the one resolver's reading); a
    log that is there but empty does, so that the load names it unreadable (``... is not a run
    log (empty)``), as the export's selection does (was: ``run ids that no longer resolve``).
    """
    try:
        return store.open_run(run_id, "run_ids").log_state() in ("ok", "empty")
    except RunIdRefused as exc:
        if exc.refusal is not None:  # malformed: refused as check_run_ids refuses it
            raise SelectionError.of(exc.refusal) from None
        return False


def _checked(
    runs_dir: str, selection: Any, absent_scenarios: bool, listed: list[str] | None = None
) -> tuple[Any, list[str]]:
    """The selection as a model and, for filters, every run id under ``runs_dir``.

    Every value of the selection no run need be read for is judged (a ``scenario`` no run
    has, a ``status`` no run can have, a knob condition that does not parse) and each one
    refused is named together, in the selection's fields' order. A runs directory that is not
    a folder is refused after the values judged without it (``status``, the knob conditions).

    ``listed``: the run ids :func:`check_selection` listed (the folder is not listed again).

    Raises:
        SelectionError: the first value refused, each other in ``also``.
        RunsDirError: ``runs_dir`` is not a folder (and no value was refused without it).
    """
    try:
        check_runs_dir(runs_dir)
    except RunsDirError:
        if not isinstance(selection, FilterSelection):
            raise
        raise_together(_dirless_refusals(selection))
        raise
    if isinstance(selection, dict):
        from pydantic import TypeAdapter

        selection = TypeAdapter(Selection).validate_python(selection)
    if isinstance(selection, RunIdSelection):
        return selection, []
    every = RunStore(runs_dir).list_runs() if listed is None else listed
    refused = []  # the selection's fields' order: scenario, then status and knob
    if selection.scenario and not absent_scenarios:
        refused += _absent_scenarios(selection.scenario, every, runs_dir)
    raise_together([*refused, *_dirless_refusals(selection)])
    return selection, every


def _dirless_refusals(selection: FilterSelection) -> list[SelectionError]:
    """The values judged without the runs directory, in the selection's fields' order.

    A ``status`` no run can have, and each knob condition that does not parse.
    """
    refused = []
    try:
        _status_word(selection.status)
    except SelectionError as exc:
        refused.append(exc)
    return [*refused, *condition_refusals(selection.knob)]


def _named(every: list[str], selection: FilterSelection) -> list[str]:
    """The run ids of ``every`` the folder names select (``scenario``, ``run_id_contains``)."""
    scenarios = set(selection.scenario or [])
    return [
        r
        for r in every
        if (not scenarios or r.split("/", 1)[0] in scenarios)
        and (not selection.run_id_contains or selection.run_id_contains in r)
    ]


def select_runs(
    runs_dir: str,
    selection: Any,
    max_runs: int = MAX_RUNS,
    load: Callable[[RunStore, str], RunRecord] | None = None,
    absent_scenarios: bool = False,
    log_facts: bool = True,
    listed: list[str] | None = None,
) -> SelectedRuns:
    """Resolve a selection against the runs directory.

    Args:
        runs_dir: Local path or fsspec URL of the runs directory.
        selection: A :class:`RunIdSelection` or :class:`FilterSelection` (or its dict form).
        max_runs: Ceiling on selected runs (default :data:`MAX_RUNS`).
        load: Reads one run (default :func:`load_run`); the run browser passes its cache
            of :func:`load_run`'s records, so both select by the same rules.
        absent_scenarios: Let a ``scenario`` filter name a scenario with no run under
            ``runs_dir`` (it matches nothing): the run browser's list, whose scenario menu
            offers every installed scenario. Otherwise such a name is refused.
        log_facts: False when the caller reads no record's log facts (a cohort to evaluate
            takes its run ids, folders and scenarios): unless a filter needs them
            (``status``, ``contains_agent_id``), each log is read only up to its
            ``simulation_started`` (:func:`load_run`'s ``head_only``). The same runs are
            selected, missing, unstarted and unreadable either way.
        listed: The run ids :func:`check_selection` returned for this selection: the runs
            directory is not listed again. None: it is listed here.

    Returns:
        The selected runs with their facts, and the explicit ids that no longer resolve.

    Raises:
        RunsDirError: ``runs_dir`` does not exist or is not a folder (:func:`check_runs_dir`).
        SelectionError: a knob condition is malformed or cannot be read as the recorded type
            (field ``knob``), the selection is over ``max_runs`` (field ``max_runs``), or a
            ``scenario`` names one no run under ``runs_dir`` has (field ``scenario``, naming
            the scenarios there).
        pydantic.ValidationError: a dict ``selection`` of the wrong shape (an empty
            ``run_ids`` list among them).
        StorageError: if the storage is unreachable.
    """
    selection, every = _checked(runs_dir, selection, absent_scenarios, listed)
    if load is None:
        head_only = not log_facts and (
            isinstance(selection, RunIdSelection)
            or (selection.status is None and selection.contains_agent_id is None)
        )
        load = functools.partial(load_run, head_only=True) if head_only else load_run
    store = RunStore(runs_dir)
    result = SelectedRuns()
    if isinstance(selection, RunIdSelection):
        _select_by_ids(store, selection, max_runs, load, result)
        return result
    conditions = parse_conditions(selection.knob)
    run_ids = _named(every, selection)
    result.scanned = len(run_ids)
    log_filters = selection.status is not None or selection.contains_agent_id is not None
    if not log_filters and not selection.labels and not conditions:
        _check_limit(len(run_ids), max_runs)
    status = _status_word(selection.status)  # checked by _checked: the word it stands for
    for run_id in run_ids:
        try:
            try:
                record, started = load(store, run_id), True
            except FileNotFoundError:  # no log: a launch that has not written its first event
                record, started = _unstarted(store.open_run(run_id)), False
        except ValueError as exc:  # NotARunLog, a broken JSON file: one note, the rest go on
            result.unreadable[run_id] = unreadable_reason(exc, store.runs_dir)
            continue
        if not _matches(record, selection, conditions, status):
            continue
        if not started:
            result.unstarted.append(run_id)
            continue
        result.add(record)
        _check_limit(len(result.records), max_runs)
    return result


def _unstarted(folder: RunFolder) -> RunRecord:
    """The record of a run folder with no event log: its claim's (:func:`queued_run`), else bare.

    Raises:
        ValueError: ``config.json`` or ``labels.json`` is not valid JSON.
        StorageError: the storage is unreachable.
    """
    queued = queued_run(folder)
    if queued is not None:
        return queued
    return RunRecord(run_id=folder.run_id, scenario=folder.scenario, run_url=folder.url,
                     log_url=folder.log_url, config={}, labels={}, lineage=None,
                     facts=LogFacts(status=QUEUED))  # fmt: skip


def _matches(
    record: RunRecord,
    selection: FilterSelection,
    conditions: list[KnobCondition],
    status: str | None,
) -> bool:
    """Whether ``record`` passes the filters read from its files (labels, knobs, log).

    Raises:
        SelectionError: each condition the run's recorded value cannot read (the first,
            the others in ``also``).
    """
    if selection.labels and not _has_labels(record.labels, selection.labels):
        return False
    held: list[bool] = []
    refused: list[SelectionError] = []
    for condition in conditions:  # each judged: every condition refused is named
        try:
            held.append(condition.matches(record.config))
        except SelectionError as exc:
            refused.append(exc)
    raise_together(refused)
    if not all(held):
        return False
    if status is not None and status not in (
        record.status.casefold(),
        (record.facts.status_detail or "").casefold(),
    ):
        return False
    return selection.contains_agent_id is None or (
        selection.contains_agent_id in record.facts.agents
    )
