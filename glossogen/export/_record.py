"""One run as a selection reads it: its folder's files and its log's head and tail.

:func:`load_folder` reads a run folder into a :class:`RunRecord` (``load_run`` by id in a runs
store); :func:`queued_run` a claim whose log has not begun. Every selection of runs
(:func:`~glossogen.export.select_runs`) and the run browser read runs through these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from glossogen.eventlog import QUEUED, RESUMABLE, live_status
from glossogen.export._runlog import AgentFacts, LogFacts, read_log_facts, read_log_head
from glossogen.knobs import lift_legacy_knobs
from glossogen.refusals import shown
from glossogen.storage import RunFolder, RunStore, resolved

DEFAULT_GROUP = "local"
"""The group of a run that recorded no ``group_slug`` (GlossoGen 0.5 runs included)."""


def group_of(started: Mapping[str, Any] | None) -> str:
    """The group that owns a run: the ``group_slug`` its ``simulation_started`` recorded.

    ``started``: that event's fields (a record's ``facts.started``, or a log's head read
    alone); None when there is none yet (a queued run). :data:`DEFAULT_GROUP` when it recorded
    none. The one rule of a run's group: :attr:`RunRecord.group` and the live routes' run
    folder alike.
    """
    return (started or {}).get("group_slug") or DEFAULT_GROUP


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
        labels: ``labels.json``: a str value is a ``key=value`` label (a number read as its JSON
            text, ``800``), ``True`` a bare flag; ``false`` is no label.
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
    not_labels: dict[str, str] = field(default_factory=dict)
    """Keys of ``labels.json`` whose value is no label, with what each holds (``a list``)."""

    def place(self) -> str:
        """The run folder's one spelling (:func:`~glossogen.storage.resolved`).

        Two names of one folder (a link into the runs dir) are one place.
        """
        return resolved(self.run_url)

    @property
    def status(self) -> str:
        """The run's status (:data:`~glossogen.export._runlog.RUNNING` when unfinished)."""
        return self.facts.status

    @property
    def group(self) -> str:
        """The group that owns the run (:func:`group_of` its ``simulation_started``)."""
        return group_of(self.facts.started)

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


class NotARunLog(ValueError):
    """A folder whose ``<scenario>.jsonl`` is not a run's event log; one line saying why."""


def label_notes(records: Sequence[RunRecord]) -> list[str]:
    """One note per run whose ``labels.json`` holds a value that is no label (every surface).

    ``veyru/1796431758: labels.json's 'lst' holds a list, not a label (a label's value is
    text, a number, true or false)``.
    """
    notes = []
    for record in records:
        for key, held in record.not_labels.items():
            notes.append(f"{record.run_id}: labels.json's {shown(key)} holds {held}, not a label "
                         "(a label's value is text, a number, true or false)")  # fmt: skip
    return notes


_NOT_LABELS = {list: "a list", dict: "an object", type(None): "null"}


def _labels(raw: Any, config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A run's labels (``labels.json``, else the config's ``labels``), and its keys that are not.

    The keys whose value is not a label come with what each holds (``a list``, ``an object``,
    ``null``, ``a number that is not finite``).
    A text value is the label ``key=value``; a number is one too, as it reads once parsed
    (``800``, ``0.5``; ``1e3`` reads ``1000.0``); ``true`` is the bare tag ``key``; ``false``
    is the tag not carried (no label).
    """
    import json
    import math

    if not isinstance(raw, dict):
        raw = config.get("labels") if isinstance(config.get("labels"), dict) else {}
    labels: dict[str, Any] = {}
    not_labels: dict[str, str] = {}
    for key, value in raw.items():
        if value is True or isinstance(value, str):
            labels[str(key)] = value
        elif isinstance(value, float) and not math.isfinite(value):  # NaN, Infinity, 1e400
            not_labels[str(key)] = "a number that is not finite"
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            labels[str(key)] = json.dumps(value)
        elif value is not False:
            not_labels[str(key)] = _NOT_LABELS.get(type(value), type(value).__name__)
    return labels, not_labels


def load_run(store: RunStore, run_id: str, head_only: bool = False) -> RunRecord:
    """Read the folder of ``run_id`` in ``store`` into a :class:`RunRecord` (:func:`load_folder`).

    Raises:
        FileNotFoundError: if the run has no event log.
        ValueError: if ``config.json``, ``labels.json`` or ``lineage.json`` is not valid JSON.
        StorageError: if the storage is unreachable.
    """
    return load_folder(store.open_run(run_id), head_only)


def load_folder(folder: RunFolder, head_only: bool = False) -> RunRecord:
    """Read one run folder into a :class:`RunRecord` (folder files and log head and tail).

    A run named by its folder (``glossogen verify RUN_DIR``) and one selected under its runs
    directory are read alike, so both get the same verdict. ``head_only``: of the log, its head
    alone (:func:`~glossogen.export._runlog.read_log_head`: its facts ``head_only``, the status
    unread); every folder file is read as otherwise, so the same runs are refused, alike.

    Raises:
        FileNotFoundError: if the run has no event log, or an empty one its live writer is
            about to begin (:meth:`~glossogen.storage.RunFolder.unbegun`: a queued run).
        ValueError: if the log is not a run's (:class:`NotARunLog`), or ``config.json``,
            ``labels.json``, ``lineage.json`` or a report is not a JSON object (naming it).
        StorageError: if the storage is unreachable.
    """
    run_id, scenario, url = folder.run_id, folder.scenario, folder.url
    try:
        facts = (read_log_head if head_only else read_log_facts)(folder.log_url)
    except (IsADirectoryError, NotADirectoryError):
        raise NotARunLog(f"{folder.log_url} is a folder, not an event log") from None
    if facts.started is None:
        if folder.unbegun():  # empty while its live writer is about to begin it: as no log
            raise FileNotFoundError(folder.log_url)
        reason = "no simulation_started event" if folder.has_log() else "empty"
        raise NotARunLog(folder.not_a_run_log(reason))
    if not head_only and (facts.ended_status is None or facts.ended_status in RESUMABLE):
        # liveness decides (a head alone leaves the status unread)
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

    labels, not_labels = _labels(folder.read_object("labels.json"), config)
    return RunRecord(
        run_id=run_id,
        scenario=scenario,
        run_url=url,
        log_url=folder.log_url,
        config=config,
        labels=labels,
        not_labels=not_labels,
        lineage=lineage if isinstance(lineage, dict) else None,
        facts=facts,
        report=report if isinstance(report, dict) else None,
        judge_flips=flips_of(folder),
    )


def claimed_knobs(
    folder: RunFolder,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]] | None:
    """The knobs and labels a run's claim recorded (``config.json``, ``labels.json``); no log.

    The knobs as a record holds them (a legacy ``agent_max_tokens`` lifted); None when the
    folder has no ``config.json`` (a run older than the claim's files records its knobs in
    its log alone).

    Raises:
        ValueError: ``config.json`` or ``labels.json`` is not a JSON object (naming it).
        StorageError: the storage is unreachable.
    """
    config = folder.read_object("config.json")
    if config is None:
        return None
    labels, not_labels = _labels(folder.read_object("labels.json"), config)
    return lift_legacy_knobs(config), labels, not_labels


def log_refused(folder: RunFolder) -> str | None:
    """Why a read naming the run in ``folder`` refuses it: its log is no run's.

    The note a listing skips the folder with (:func:`load_folder`'s), the file within the runs
    directory: ``veyru/<ts>/veyru.jsonl is not a run log (empty)`` for an empty log no process
    holds (:meth:`~glossogen.storage.RunFolder.empty_log_refused`), ``(no simulation_started
    event)`` for one whose head holds none (a truncated first line, another file's bytes), ``is
    a folder, not an event log``. None for a run's log, no log, or one its live writer has not
    begun (:meth:`~glossogen.storage.RunFolder.unbegun`). The run page, REST's run routes, MCP's
    tools and ``stop`` refuse a run in these words, as the listings skip it.

    Raises:
        StorageError: if the storage is unreachable.
    """
    state = folder.log_state()  # read once: unbegun() and empty_log_refused() would each again
    if state == "missing":
        return None
    if state == "folder":
        return folder.within_runs_dir(f"{folder.log_url} is a folder, not an event log")
    if state == "empty":
        return None if folder.is_locked() else folder.within_runs_dir(folder.not_a_run_log("empty"))
    try:
        started = read_log_head(folder.log_url).started
    except FileNotFoundError:  # removed since: as no log
        return None
    if started is not None:
        return None
    return folder.within_runs_dir(folder.not_a_run_log("no simulation_started event"))


def queued_run(folder: RunFolder) -> RunRecord | None:
    """The record of a claimed folder whose player has not begun its log (``queued``), else None.

    Not begun is :meth:`~glossogen.storage.RunFolder.unbegun`: no log yet, or an empty one a
    live process is about to write; an empty log no process holds is no run's (not queued).

    Read from the claim's JSON files alone (``config.json``, ``labels.json``): there is no log,
    so its facts are empty. :func:`select_runs` never loads one by default (an export has
    nothing to export of it); the run browser lists it.

    Raises:
        ValueError: ``config.json`` or ``labels.json`` is not valid JSON.
        StorageError: the storage is unreachable.
    """
    if not folder.unbegun():
        return None
    claimed = claimed_knobs(folder)
    if claimed is None:
        return None  # not a claim (a stray folder)
    return RunRecord(
        run_id=folder.run_id,
        scenario=folder.scenario,
        run_url=folder.url,
        log_url=folder.log_url,
        config=claimed[0],
        labels=claimed[1],
        not_labels=claimed[2],
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
