"""Selecting runs: explicit run ids or filters, never a mix (a tagged union, no precedence).

The same selection model serves the CLI flags and the REST body. Filters resolve against the
runs directory itself: folder names first (``scenario``, ``run_id_contains``), then each
run's ``labels.json`` and recorded config (``labels``, ``knob``), then its event log's head and
tail (``status``, ``contains_agent_id``), so a run never evaluated, or still being written,
is selectable too.

``status`` matches the run's status (``completed``, ``error``, ``interrupted``,
``incomplete``, ``running`` for a log with no ``simulation_ended`` a live writer holds,
``stopped`` for one no writer holds) or its ``status_detail``, case-insensitively. The
GlossoGen 0.5 words the reference pages use are read as ours (``scenario_complete`` selects
every completed run, ``keyboard_interrupt`` and ``cancelled`` interrupted ones, as the log
reader upcasts them); any other word is refused, naming it, before a run is read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    model_validator,
)

from glossogen.eventlog import QUEUED, RESUMABLE, live_status
from glossogen.eventlog import STATUSES as _VIEW_STATUSES
from glossogen.export._knobfilter import KnobCondition, SelectionError, parse_conditions
from glossogen.export._runlog import AgentFacts, LogFacts, read_log_facts
from glossogen.knobs import lift_legacy_knobs
from glossogen.refusals import Refusal, shown
from glossogen.storage import RunFolder, RunStore, path_kind, resolved

MAX_RUNS = 5000
"""Default ceiling on runs per export (``max_runs`` overrides it)."""

DEFAULT_GROUP = "local"
"""The group of a run that recorded no ``group_slug`` (GlossoGen 0.5 runs included)."""


RunIds = Annotated[
    list[Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]],
    Field(min_length=1),
]
"""Run ids as every surface takes them (REST's selection, MCP's ``run_ids``): at least one,
none empty; an empty list is refused, never read as "every run"."""


class RunIdSelection(BaseModel):
    """Exactly these runs (``--run-id``, repeatable): at least one, none empty."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["run_ids"] = "run_ids"
    run_ids: RunIds


class FilterSelection(BaseModel):
    """Every run matching all of these filters; a ``None`` filter does not filter."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["filters"] = "filters"
    scenario: list[str] | None = None
    labels: list[str] | None = None
    run_id_contains: str | None = None
    status: str | None = None
    contains_agent_id: str | None = None
    knob: list[str] | None = None

    @model_validator(mode="after")
    def _text(self) -> FilterSelection:
        r"""Refuse a value holding a lone surrogate (JSON's ``"\udcff"``), as the CLI refuses it.

        It could be neither matched nor echoed back (a JSON answer is UTF-8).
        """
        _check_text({"scenario": self.scenario, "labels": self.labels,
                     "run_id_contains": self.run_id_contains, "status": self.status,
                     "contains_agent_id": self.contains_agent_id, "knob": self.knob})  # fmt: skip
        return self


def _kind(value: Any) -> str | None:
    """The selection's ``kind``; absent, the default of the model its fields name.

    Each model's schema says its ``kind`` has a default, so a body without it is read as
    the one its fields make: ``run_ids`` when it gives ``run_ids``, else ``filters`` (``{}``
    is every run).
    """
    if isinstance(value, dict):
        kind = value.get("kind")
        if kind is None and "kind" not in value:
            return "run_ids" if "run_ids" in value else "filters"
        return kind if isinstance(kind, str) else repr(kind)
    return getattr(value, "kind", None)


Selection = Annotated[
    Annotated[RunIdSelection, Tag("run_ids")] | Annotated[FilterSelection, Tag("filters")],
    Discriminator(
        _kind,
        custom_error_type="selection_kind",
        custom_error_message="Input should be an object of kind 'run_ids' or 'filters'",
    ),
]
"""The selection: ``{"kind": "run_ids", ...}`` or ``{"kind": "filters", ...}``; without a
``kind``, ``run_ids`` when the body gives ``run_ids``, else ``filters``."""


_OWN_EMPTY = ("run_ids", "knob")
"""Fields whose empty value has its own line: a run id it needs, a condition's operator."""


def _check_text(values: dict[str, list[str] | str | None]) -> None:
    """Refuse a selection value not UTF-8 (a command line's surrogate), or an empty one.

    ``--label ''``, ``--label sweep=``, ``--label =x``, ``--run-id-contains ''``: an empty
    filter value would select every run, or none, without saying so; it is refused as an
    empty run id and an empty knob condition are (one line naming the field and value).

    Raises:
        SelectionError: naming the field and the value, ``not UTF-8 text``, ``empty value``
            or (a label ``=x``) ``empty label name``.
    """
    for name, given in values.items():
        for text in [given] if isinstance(given, str) else given or []:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                refusal = Refusal(field=name, value=shown(text), reason="not UTF-8 text")
                raise SelectionError.of(refusal) from None
            if name in _OWN_EMPTY:
                continue
            key, eq, value = text.partition("=") if name == "labels" else (text, "", "")
            reason = ("empty value" if not key.strip() and not eq or eq and not value.strip()
                      else "empty label name" if not key.strip() else "")  # fmt: skip
            if reason:
                raise SelectionError.of(Refusal(field=name, value=shown(text), reason=reason))


def selection_of(
    run_ids: list[str] | None = None,
    scenario: list[str] | None = None,
    labels: list[str] | None = None,
    run_id_contains: str | None = None,
    status: str | None = None,
    contains_agent_id: str | None = None,
    knob: list[str] | None = None,
) -> RunIdSelection | FilterSelection:
    """The selection the command line's flags ask for: run ids, or filters, never both.

    Args:
        run_ids: ``--run-id`` values (each ``<scenario>/<run_dir_name>``).
        scenario: ``--scenario`` (an empty filter, here and below, does not filter).
        labels: ``--label``.
        run_id_contains: ``--run-id-contains``.
        status: ``--status``.
        contains_agent_id: ``--contains-agent-id``.
        knob: ``--knob`` conditions.

    Raises:
        SelectionError: run ids given with a filter, an empty run id (field ``run_ids``), a
            value that is not UTF-8 text (its field), or a knob condition with no operator
            (field ``knob``); its ``refusal`` names the
            fields, which each surface words its own way.
    """
    filters = {
        "scenario": scenario,
        "labels": labels,
        "run_id_contains": run_id_contains,
        "contains_agent_id": contains_agent_id,
        "knob": knob,
        "status": status,
    }
    _check_text({"run_ids": run_ids, **filters})
    clashing = tuple(name for name, value in filters.items() if value)
    if run_ids and clashing:
        raise SelectionError.of(
            Refusal(field="run_ids", reason="cannot be combined with", listed=clashing)
        )
    if any(not r.strip() for r in run_ids or []):
        raise SelectionError.of(
            Refusal(field="run_ids", reason="needs a run id (<scenario>/<run_dir_name>)")
        )
    if run_ids:
        return RunIdSelection(run_ids=run_ids)
    parse_conditions(knob)
    return FilterSelection(
        scenario=scenario or None,
        labels=labels or None,
        run_id_contains=run_id_contains,
        status=status,
        contains_agent_id=contains_agent_id,
        knob=knob or None,
    )


STATUSES = _VIEW_STATUSES
"""The statuses a run can have (``RunView``'s vocabulary, defined there)."""

LEGACY_STATUSES = {
    "scenario_complete": "completed",
    "keyboard_interrupt": "interrupted",
    "cancelled": "interrupted",
}
"""GlossoGen 0.5 status words, read as ours (the upcast of ``simulation_ended``)."""


def _status_word(status: str | None) -> str | None:
    """The status a ``status`` filter selects (lower-cased, 0.5 words as ours), or None.

    Raises:
        SelectionError: a word no run can have (field ``status``).
    """
    if status is None:
        return None
    word = status.strip().casefold()
    word = LEGACY_STATUSES.get(word, word)
    if word not in STATUSES:
        known = ", ".join(STATUSES)
        raise SelectionError.of(
            Refusal(
                field="status",
                reason=f"{shown(status)} is no run's status (one of {known}, or scenario_complete)",
            )
        )
    return word


@dataclass
class RunRecord:
    """One selected run: what its folder and its log's head and tail say.

    Attributes:
        run_id: ``<scenario>/<run_dir_name>``.
        scenario: The scenario name.
        run_url: The run folder (local path or URL).
        log_url: Its event log.
        config: The recorded knobs (``config.json``, else ``simulation_started.scenario_config``;
            a legacy ``agent_max_tokens`` read as ``agent_model_settings.max_tokens``).
        labels: ``labels.json``: a str value is a ``key=value`` label, ``True`` a bare flag.
        lineage: ``lineage.json`` (else ``simulation_started.lineage``); None for an original.
        facts: Run-level facts from the event log.
        report: The parsed ``<scenario>_report.json``, or None when the run has none.
        judge_flips: Rulings the last ``glossogen rejudge`` flipped (``judge_flips.json``);
            None when the run was never rejudged.
    """

    run_id: str
    scenario: str
    run_url: str
    log_url: str
    config: dict[str, Any]
    labels: dict[str, Any]
    lineage: dict[str, Any] | None
    facts: LogFacts
    report: dict[str, Any] | None = None
    judge_flips: int | None = None

    @property
    def status(self) -> str:
        """The run's status (:data:`~glossogen.export._runlog.RUNNING` when unfinished)."""
        return self.facts.status

    @property
    def group(self) -> str:
        """The group that owns the run: its recorded ``group_slug``, else :data:`DEFAULT_GROUP`."""
        return (self.facts.started or {}).get("group_slug") or DEFAULT_GROUP

    @property
    def agents(self) -> list[AgentFacts]:
        """The run's registered agents, in registration order."""
        return list(self.facts.agents.values())

    def label_strings(self) -> list[str]:
        """Return the labels as written on the CLI: ``key=value`` or a bare ``flag``."""
        out = []
        for key, value in self.labels.items():
            if value is True:
                out.append(key)
            elif isinstance(value, str):
                out.append(f"{key}={value}")
        return out


def damaged_line_notes(records: list[RunRecord]) -> list[str]:
    """One note per run whose log had damaged lines as it was selected (its facts' reading).

    Its damaged complete lines and a last line cut off mid-write
    (:func:`~glossogen.export._lines.damaged_note`: ``veyru/17: 1 damaged log line skipped
    (line 210 truncated) in <log>``); a live run's last line may be mid-write, so not named.
    """
    from glossogen.export._lines import damaged_note
    from glossogen.export._runlog import RUNNING

    notes = []
    for record in records:
        torn = None if record.status == RUNNING else record.facts.torn_line
        if record.facts.bad_line_numbers or torn is not None:
            notes.append(damaged_note(record.run_id, record.facts.bad_line_numbers,
                                      record.log_url, torn))  # fmt: skip
    return notes


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
        place = resolved(record.run_url)
        if place not in self._places:
            self._places.add(place)
            self.records.append(record)

    @property
    def scenarios(self) -> list[str]:
        """The selected runs' scenarios, sorted."""
        return sorted({r.scenario for r in self.records})


class RunsDirError(OSError):
    """The runs directory does not exist or is not a folder (one line naming it)."""


def check_runs_dir(runs_dir: str) -> None:
    """Check that ``runs_dir`` is an existing folder (or, on object storage, a prefix).

    A runs directory that is not there is refused rather than read as holding no run: a
    mistyped path would otherwise export empty tables and report success.

    Raises:
        RunsDirError: ``runs_dir`` does not exist or is a file.
        StorageError: the storage is unreachable.
    """
    if not runs_dir.strip():  # never read as the working directory
        raise RunsDirError(f"{runs_dir!r} names no folder")
    kind = path_kind(runs_dir)
    if kind == "folder":
        return
    local = RunStore(runs_dir).local
    if kind == "file":
        raise RunsDirError(f"{runs_dir!r} is {'a file' if local else 'an object'}, not a folder")
    raise RunsDirError(f"{runs_dir!r} does not exist")


class NotARunLog(ValueError):
    """A folder whose ``<scenario>.jsonl`` is not a run's event log; one line saying why."""


def _labels(raw: Any, config: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raw = config.get("labels") if isinstance(config.get("labels"), dict) else {}
    return {str(k): v for k, v in raw.items() if v is True or isinstance(v, str)}


def _has_labels(labels: dict[str, Any], wanted: list[str]) -> bool:
    for label in wanted:
        key, eq, value = label.partition("=")
        if eq:
            if labels.get(key) != value:
                return False
        elif labels.get(key) is not True:
            return False
    return True


def load_run(store: RunStore, run_id: str) -> RunRecord:
    """Read the folder of ``run_id`` in ``store`` into a :class:`RunRecord` (:func:`load_folder`).

    Raises:
        FileNotFoundError: if the run has no event log.
        ValueError: if ``config.json``, ``labels.json`` or ``lineage.json`` is not valid JSON.
        StorageError: if the storage is unreachable.
    """
    return load_folder(store.open_run(run_id))


def load_folder(folder: RunFolder) -> RunRecord:
    """Read one run folder into a :class:`RunRecord` (folder files and log head and tail).

    A run named by its folder (``glossogen verify RUN_DIR``) and one selected under its runs
    directory are read alike, so both get the same verdict.

    Raises:
        FileNotFoundError: if the run has no event log.
        ValueError: if the log is not a run's (:class:`NotARunLog`), or ``config.json``,
            ``labels.json``, ``lineage.json`` or a report is not a JSON object (naming it).
        StorageError: if the storage is unreachable.
    """
    run_id, scenario, url = folder.run_id, folder.scenario, folder.url
    try:
        facts = read_log_facts(folder.log_url)
    except (IsADirectoryError, NotADirectoryError):
        raise NotARunLog(f"{folder.log_url} is a folder, not an event log") from None
    if facts.started is None:
        reason = "no simulation_started event" if folder.has_log() else "empty"
        raise NotARunLog(f"{folder.log_url} is not a run log ({reason})")
    if facts.ended_status is None or facts.ended_status in RESUMABLE:  # liveness decides
        facts.status = live_status(facts.ended_status, folder.is_locked())
    started = facts.started
    # A broken or non-object file raises ValueError naming it: the run is skipped with a note.
    config = folder.read_object("config.json")
    if config is None:
        config = dict(started.get("scenario_config") or {})
    # A config written before agent_model_settings existed spells the cap agent_max_tokens:
    # read as agent_model_settings.max_tokens, for the knob columns and --knob alike.
    config = lift_legacy_knobs(config)
    lineage = folder.read_object("lineage.json") or started.get("lineage")
    report = _report_of(folder, scenario)
    from glossogen.rejudge._flips import flips_of  # the rest of rejudge imports export

    return RunRecord(
        run_id=run_id,
        scenario=scenario,
        run_url=url,
        log_url=folder.log_url,
        config=config,
        labels=_labels(folder.read_object("labels.json"), config),
        lineage=lineage if isinstance(lineage, dict) else None,
        facts=facts,
        report=report if isinstance(report, dict) else None,
        judge_flips=flips_of(folder),
    )


def queued_run(folder: RunFolder) -> RunRecord | None:
    """The record of a claimed folder whose log holds no event yet (``queued``), else None.

    Read from the claim's JSON files alone (``config.json``, ``labels.json``): there is no log,
    so its facts are empty. :func:`select_runs` never loads one by default (an export has
    nothing to export of it); the run browser lists it.

    Raises:
        ValueError: ``config.json`` or ``labels.json`` is not valid JSON.
        StorageError: the storage is unreachable.
    """
    if folder.log_state() not in ("missing", "empty"):
        return None
    config = folder.read_object("config.json")
    if config is None:
        return None  # not a claim (a stray folder)
    return RunRecord(
        run_id=folder.run_id,
        scenario=folder.scenario,
        run_url=folder.url,
        log_url=folder.log_url,
        config=lift_legacy_knobs(config),
        labels=_labels(folder.read_object("labels.json"), config),
        lineage=folder.read_object("lineage.json"),
        facts=LogFacts(status=QUEUED),
    )


def _report_of(folder: RunFolder, scenario: str) -> dict[str, Any] | None:
    """The run's report as readers see it: ours, and a GlossoGen 0.5 report under it.

    ``<scenario>_report.json`` may be ours or (a migrated run never evaluated here) a
    GlossoGen 0.5 report; ``<scenario>_report.glossogen-0.5.json`` is the 0.5 report
    ``evaluate`` kept before writing ours. Their metrics are combined (ours wins a name in
    both; :func:`glossogen.evaluation._report.combined_metrics`), each entry with its
    ``source``. None when the run has neither.

    Raises:
        ValueError: a report file is a folder, not JSON, not an object or an empty object
            (names it).
    """
    from glossogen.evaluation._report import (
        combined_metrics,
        foreign_report_name,
        is_glossogen05_report,
    )

    ours = folder.read_object(f"{scenario}_report.json")
    foreign = folder.read_object(foreign_report_name(scenario))
    for name, report in ((f"{scenario}_report.json", ours),
                         (foreign_report_name(scenario), foreign)):  # fmt: skip
        if report == {}:  # no metrics, no scoring facts: damaged, as a report not JSON
            raise ValueError(f"{folder.file_url(name)} is an empty JSON object (no metrics)")
    if ours is None and foreign is None:
        return None
    base = ours if ours is not None and not is_glossogen05_report(ours) else {}
    return {**base, "metrics": combined_metrics(ours, foreign)}


def _check_limit(count: int, max_runs: int) -> None:
    if count > max_runs:
        over = f"the selection holds {count} runs, over the {max_runs}-run limit"
        raise SelectionError.of(
            Refusal(field="max_runs", reason=f"{over}; narrow the selection or raise", trails=True)
        )


def _check_scenarios(named: list[str], run_ids: list[str], runs_dir: str) -> None:
    """Refuse a ``scenario`` filter naming a scenario no run under ``runs_dir`` has.

    A mistyped scenario would otherwise select nothing, and an export, analysis or
    verification of nothing would report success.

    Raises:
        SelectionError: field ``scenario``, naming the value and the scenarios there are.
    """
    there = sorted({r.split("/", 1)[0] for r in run_ids})
    absent = [name for name in named if name not in there]
    if not absent:
        return
    which = f"scenarios there: {', '.join(there)}" if there else "it holds no run"
    message = f"{shown(absent[0])} has no run under {runs_dir} ({which})"
    raise SelectionError.of(Refusal(field="scenario", reason=message))


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
        parts = run_id.strip("/").split("/")
        if len(parts) != 2 or not all(parts) or ".." in parts:
            result.missing_run_ids.append(run_id)
            continue
        try:
            result.add(load(store, run_id))
        except FileNotFoundError:
            result.missing_run_ids.append(run_id)
        except ValueError as exc:  # not a run log, a broken JSON file: a note, not a stop
            result.unreadable[run_id] = str(exc).splitlines()[0][:300]


def select_runs(
    runs_dir: str,
    selection: Any,
    max_runs: int = MAX_RUNS,
    load: Callable[[RunStore, str], RunRecord] | None = None,
    absent_scenarios: bool = False,
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
    check_runs_dir(runs_dir)
    load = load or load_run
    if isinstance(selection, dict):
        from pydantic import TypeAdapter

        selection = TypeAdapter(Selection).validate_python(selection)
    store = RunStore(runs_dir)
    result = SelectedRuns()
    if isinstance(selection, RunIdSelection):
        _select_by_ids(store, selection, max_runs, load, result)
        return result
    conditions = parse_conditions(selection.knob)
    scenarios = set(selection.scenario or [])
    every = store.list_runs()
    if selection.scenario and not absent_scenarios:
        _check_scenarios(selection.scenario, every, runs_dir)
    run_ids = [
        r
        for r in every
        if (not scenarios or r.split("/", 1)[0] in scenarios)
        and (not selection.run_id_contains or selection.run_id_contains in r)
    ]
    result.scanned = len(run_ids)
    log_filters = selection.status is not None or selection.contains_agent_id is not None
    if not log_filters and not selection.labels and not conditions:
        _check_limit(len(run_ids), max_runs)
    status = _status_word(selection.status)
    for run_id in run_ids:
        try:
            try:
                record, started = load(store, run_id), True
            except FileNotFoundError:  # no log: a launch that has not written its first event
                record, started = _unstarted(store.open_run(run_id)), False
        except ValueError as exc:  # NotARunLog, a broken JSON file: one note, the rest go on
            result.unreadable[run_id] = str(exc).splitlines()[0][:300]
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
    """Whether ``record`` passes the filters read from its files (labels, knobs, log)."""
    if selection.labels and not _has_labels(record.labels, selection.labels):
        return False
    if not all(c.matches(record.config) for c in conditions):
        return False
    if status is not None and status not in (
        record.status.casefold(),
        (record.facts.status_detail or "").casefold(),
    ):
        return False
    return selection.contains_agent_id is None or (
        selection.contains_agent_id in record.facts.agents
    )
