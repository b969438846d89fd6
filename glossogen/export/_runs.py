"""One export of runs to a folder or URL: the request, its checks, the writing, the result.

:func:`plan_export` does every check of an :class:`ExportRunsRequest` once (the zip options,
``max_runs``, the tables, ``out``, the runs directory, the selection, the raw zip's ceiling)
before anything is written (:func:`survey_export` keeps what a write would meet instead, for
REST's preview); ``_writing.py`` writes a plan. A refusal is an :class:`ExportRefused` carrying its
exit code and the request field at fault, which each surface words its own way.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from glossogen import exit_codes
from glossogen.export._knobfilter import SelectionError
from glossogen.export._record import RunRecord
from glossogen.export._select import (
    MAX_RUNS,
    SERVED_RUNS_DIR,
    RunsDirError,
    SelectedRuns,
    _check_limit,
    _checked,
    named_refusals,
    of_group,
    select_runs,
    served_refusal_line,
)
from glossogen.export._selection import Selection
from glossogen.refusals import Refusal, count_refused, worded
from glossogen.storage import StorageError


class ExportRunsRequest(BaseModel):
    """What an export writes: which runs, which tables, where, and the raw zip's options.

    Attributes:
        runs_dir: The runs directory (local path or fsspec URL).
        out: Where the files go (a folder or an fsspec URL, created as needed); None when the
            caller hands :func:`write_export` its own folder (REST's download, built in a
            temporary folder) or writes nothing (REST's preview).
        selection: Run ids or filters (:func:`selection_of`); None for every run.
        group: Only the runs of this group (the ``group_slug`` a run recorded,
            :data:`DEFAULT_GROUP` when none; REST's ``{slug}``): an explicit id of another
            group's run counts as one that no longer resolves, and ``max_runs`` applies to
            what remains. None: every group.
        frames: Tables to write; None for ``run_level``, ``round_level``, ``agent_level``.
        columns: Non-metric columns to keep (keys always kept); None keeps every column.
        metrics: Metrics whose columns to keep; None keeps every metric.
        repeat_run_columns: Copy the run context onto round, agent and message rows.
        include_metric_summaries: Add each metric's unit, summary and notes.
        max_runs: Ceiling on the runs selected.
        tables: Write the tables; False writes the raw zip alone (REST's ``/raw``; then a
            selection of one run always gets its ATIF trajectories).
        raw: Also write ``runs.zip`` of the run folders.
        include_logs: With ``raw``, keep the debug and stdout logs.
        include_atif: With ``raw``, add each agent's ATIF trajectory.
        max_raw_bytes: The raw zip's ceiling (bytes of run folders, estimated before
            anything is written); None for ``RAW_ZIP_MAX_BYTES`` (4 GiB).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    runs_dir: str
    out: str | None = None
    selection: Selection | None = None
    group: str | None = None
    frames: list[str] | None = None
    columns: list[str] | None = None
    metrics: list[str] | None = None
    repeat_run_columns: bool = True
    include_metric_summaries: bool = False
    max_runs: int = MAX_RUNS
    tables: bool = True
    raw: bool = False
    include_logs: bool = False
    include_atif: bool = False
    max_raw_bytes: int | None = None

    @property
    def picks(self) -> bool:
        """Whether the tables keep only some columns or metrics (built whole, not streamed)."""
        return self.columns is not None or self.metrics is not None


class ExportRefused(ValueError):
    """An export refused before (or while) writing: one line, its exit code, the field at fault.

    Attributes:
        exit_code: The DESIGN §9 code (64 usage, 65 refused, 66 unreadable, 69 storage).
        field: The request field at fault (``frames``, ``out``, ``runs_dir``, ``selection``,
            ``max_runs``, ``include_logs``), or None when the line names none.
        refusal: The refused value as data (a surface words it with its own names), or None.
        cause: The library error refused, or None.
        also: The request's other values refused, in the order checked (:func:`plan_export`
            gathers every refusal of the request's values; this one is the first): the CLI
            says the first alone, REST lists each under ``errors``, MCP joins each with ``; ``.
    """

    def __init__(
        self,
        line: str,
        exit_code: int,
        field: str | None = None,
        refusal: Refusal | None = None,
        cause: BaseException | None = None,
    ) -> None:
        """Keep the line (naming request fields), the exit code, the field and the refusal."""
        super().__init__(line)
        self.exit_code = exit_code
        self.field = field
        self.refusal = refusal
        self.cause = cause
        self.also: tuple[ExportRefused, ...] = ()

    @property
    def every(self) -> tuple[ExportRefused, ...]:
        """This refusal and :attr:`also`: every value of the request refused, in order."""
        return (self, *self.also)


def _together(refused: list[ExportRefused]) -> ExportRefused:
    """The first of ``refused`` carrying the others (:attr:`ExportRefused.also`)."""
    first = refused[0]
    first.also = tuple(refused[1:])
    return first


def served_line(exc: BaseException, runs_dir: str = "", names: dict[str, str] | None = None) -> str:
    """The one line a server's client (REST, MCP) is shown for a selection's or export's refusal.

    As :func:`~glossogen.refusals.worded` words it (``names``: the surface's name for each
    field), except that the server's runs directory, which the client neither gave nor can
    act on, is never named by its path: a runs directory that is missing or a file is
    ``the server's runs directory does not exist``; a scenario no run has, ``scenario 'x' has
    no run in the server's runs directory (scenarios there: ...)``; a storage failure's line
    names the runs dir ``runs_dir`` as the server's runs directory, and a file under it by its
    path within it (``veyru/1/veyru.jsonl``), as is a run file's that cannot be read. The
    CLI keeps the path (its user typed it).
    """
    if isinstance(exc, ExportRefused) and isinstance(exc.cause, (SelectionError, RunsDirError)):
        return served_line(exc.cause, runs_dir, names)
    if isinstance(exc, RunsDirError):
        return f"{SERVED_RUNS_DIR} {exc.reason}"
    if isinstance(exc, SelectionError) and exc.served is not None:
        return exc.served.worded(names)
    line = (worded(exc, names) or type(exc).__name__).splitlines()[0]
    return line if not runs_dir.strip() else served_refusal_line(exc, runs_dir, names)


@dataclass(frozen=True)
class ExportPlan:
    """A checked export: the request, the tables in canonical order, the runs selected.

    Attributes:
        request: The request planned.
        names: The tables to write, in canonical order (none when ``request.tables`` is off).
        selected: The runs selected (of the request's group), the ids that no longer resolve.
        raw_bytes: The raw zip's estimate (bytes of run folders) when ``request.raw``.
        refusals: What a write of this plan would be refused for (only :func:`survey_export`
            returns a plan holding any): ids that no longer resolve, ids naming runs that
            cannot be read, the run ceiling, column or metric picks the tables do not hold,
            the raw ceiling, in that order.
    """

    request: ExportRunsRequest
    names: list[str]
    selected: SelectedRuns
    raw_bytes: int | None = None
    refusals: tuple[ExportRefused, ...] = ()

    @property
    def records(self) -> list[RunRecord]:
        """The runs to export."""
        return self.selected.records


def plan_export(request: ExportRunsRequest) -> ExportPlan:
    """Check every value of ``request`` once and select its runs; nothing is written.

    Every value refused is named: the first refusal raised carries the others
    (:attr:`ExportRefused.also`) among the options, the tables, ``out`` and the selection (a
    knob value its runs cannot read included, so the runs are read even when a value before
    it is refused); a refusal past the selection (ids that no longer resolve, the ceilings,
    the picks) is reached only when these pass.

    Raises:
        ExportRefused: 64 for ``include_logs``/``include_atif`` without ``raw``, ``max_runs``
            below 1, an unknown table or none, an ``out`` that is (or lies under) a file; 66
            for a runs directory that is not a folder, run ids that no longer resolve, or
            run ids naming runs that cannot be read (``runs that cannot be read: veyru/<ts>:
            veyru/<ts>/labels.json is not UTF-8 text (...)``; found by filters, such a run is
            skipped and named in ``selected.unreadable``); 65
            for a selection refused (over ``max_runs``, an unknown scenario, a knob value not
            of the recorded type), column or metric picks the tables do not hold, or a raw
            zip over its ceiling; 69 for unreachable storage.
    """
    plan = _planned(request, survey=False)
    if plan.refusals:
        raise plan.refusals[0]
    return plan


def survey_export(request: ExportRunsRequest) -> ExportPlan:
    """Check ``request`` as :func:`plan_export` does, but keep what a write would meet.

    The run ceiling, ids that no longer resolve, column or metric picks and the raw ceiling
    are kept in :attr:`ExportPlan.refusals` (REST's preview lists them) rather than raised; the
    runs are selected whole (no ceiling stops the reading).

    Raises:
        ExportRefused: every other refusal of :func:`plan_export`.
    """
    return _planned(request, survey=True)


def value_refusals(request: ExportRunsRequest) -> list[ExportRefused]:
    """Every refusal of ``request``'s own values that reads no run, in the order checked.

    The zip's options and ``max_runs`` (:func:`_check_options`), the tables, ``out``: each
    check returns its refusal, none stops the next. :func:`plan_export` begins with these,
    then the selection; a surface that refuses the selection itself before the request is
    planned (MCP's arguments) names these beside it.
    """
    return _checked_values(request)[1]


def _checked_values(request: ExportRunsRequest) -> tuple[list[str], list[ExportRefused]]:
    """The tables asked (none when refused) and :func:`value_refusals`' refusals."""
    refused = []
    if request.out is not None:
        from glossogen.export._write import check_out

        try:
            check_out(request.out)
        except ValueError as exc:
            refused.append(ExportRefused(str(exc), exit_codes.USAGE, "out",
                                         getattr(exc, "refusal", None), exc))  # fmt: skip
    frames = _check_frames(request)  # checked for the raw zip alone too: one body, one verdict
    if isinstance(frames, tuple):
        refused += frames
    refused += _check_options(request)
    return ([] if isinstance(frames, tuple) else frames), refused


FIELD_ORDER = ("runs_dir", "out", "selection", "frames", "columns", "metrics", "max_runs", "raw",
               "include_logs")  # fmt: skip
"""The request's fields in the order its refusals are named (:class:`ExportRunsRequest`'s),
on every surface."""


def in_field_order(refused: list[ExportRefused]) -> list[ExportRefused]:
    """``refused`` in :data:`FIELD_ORDER`, a refusal naming no field last.

    Each field's own refusals stay in the order checked.
    """
    rank = {f: i for i, f in enumerate(FIELD_ORDER)}
    return sorted(refused, key=lambda r: rank.get(r.field or "", len(rank)))


def selection_refused(exc: SelectionError) -> list[ExportRefused]:
    """One export refusal per value of the selection refused (``exc`` and its ``also``).

    64 for a value malformed whatever the runs hold (a knob condition with no operator, a
    malformed run id), 65 for one the runs refuse (a ``status`` no run has, a scenario no
    run has, a knob value the recorded type cannot read, a selection over ``max_runs``).
    """
    codes = {True: exit_codes.USAGE, False: exit_codes.REFUSED}
    return [ExportRefused(worded(e), codes[e.usage], "selection", e.refusal, e) for e in exc.every]


def refused_with_selection(request: ExportRunsRequest, exc: SelectionError) -> ExportRefused:
    """The refusal of ``request`` whose selection a surface refused before planning it.

    A surface that builds the selection from its own inputs (the CLI's flags, MCP's
    arguments: ``selection_of``) and is refused there names the request's other values
    beside it (:func:`value_refusals`), in the request's fields' order, as
    :func:`plan_export` names them: one verdict for one request on every surface.
    """
    return _together(in_field_order([*value_refusals(request), *selection_refused(exc)]))


def _planned(request: ExportRunsRequest, survey: bool) -> ExportPlan:
    """The plan of ``request``: the refusals of its values raised together, a write's collected.

    First every value no run need be read for (``out``, the tables, the options, the
    selection's knob conditions, ``status`` and scenarios): each one refused is named
    together, in the request's fields' order, and no run is read. Only a request whose values
    all pass has its runs read (a knob value the recorded type cannot read, named runs that
    no longer resolve or cannot be read, the ceilings, the picks): each refused is named
    together. A runs directory or storage that cannot be read is raised alone when no value
    was refused.
    """
    asked, values = _checked_values(request)
    try:  # the selection's values the folder's names judge: no run is read
        _, listed = _checked(request.runs_dir, request.selection or {"kind": "filters"},
                             absent_scenarios=False)  # fmt: skip
    except SelectionError as exc:
        raise _together(in_field_order([*values, *selection_refused(exc)])) from None
    except (RunsDirError, StorageError):
        if values:
            raise _together(values) from None
        listed = None  # the selection's reading below refuses it, as it always has
    if values:
        raise _together(values)
    whole = survey or request.group is not None  # the group first, then the ceiling
    selected = _select(request, sys.maxsize if whole else request.max_runs, listed or None)
    names = asked if request.tables else []
    refusals: list[ExportRefused] = []
    for named in named_refusals(request.selection, selected):  # as a missing named run is, exit 66
        refusals.append(ExportRefused(str(named), exit_codes.UNREADABLE, "selection",
                                      cause=named))  # fmt: skip
    try:
        _check_limit(len(selected.records), request.max_runs)
        if request.picks:
            from glossogen.export._tables import check_picks

            check_picks(selected.records, asked, request.columns, request.metrics,
                        request.repeat_run_columns)  # fmt: skip
    except SelectionError as exc:
        refusals.append(ExportRefused(worded(exc), exit_codes.REFUSED, "selection",
                                      exc.refusal, exc))  # fmt: skip
    raw_bytes = None
    if request.raw and (survey or not refusals):
        raw_bytes, refused = _raw_size(request, selected.records)
        refusals += [refused] if refused else []
    if refusals and not survey:
        raise _together(refusals)
    return ExportPlan(request=request, names=names, selected=selected, raw_bytes=raw_bytes,
                      refusals=tuple(refusals))  # fmt: skip


def _check_options(request: ExportRunsRequest) -> list[ExportRefused]:
    """Refuse a ceiling out of 1..2**53-1, nothing to write, the zip's options without the zip.

    Returns:
        Each refusal (64, naming the field), in that order; none when all pass.
    """
    said: list[tuple[str, Refusal]] = []
    bound = count_refused(request.max_runs, "max_runs")  # the analysis's bound: one check
    if bound is not None:
        said.append(("max_runs", bound))
    if not request.tables and not request.raw:
        why = "is the only file left to write: the tables are off"
        said.append(("raw", Refusal(field="raw", reason=why, colon=True)))
    if (request.include_atif or request.include_logs) and not request.raw:
        said.append(("include_logs", Refusal(field="include_logs", also=("include_atif",),
                                             reason="apply to", listed=("raw",))))  # fmt: skip
    return [ExportRefused(r.worded(), exit_codes.USAGE, f, r) for f, r in said]


def _check_frames(request: ExportRunsRequest) -> list[str] | tuple[ExportRefused, ...]:
    """The tables asked, in canonical order, or their refusals.

    Returns:
        The tables, or an ``ExportRefused`` (64, field ``frames``) for each problem of the
        list (:func:`~glossogen.export.check_frames`): none named, an empty name, each table
        named twice, each unknown table.
    """
    from glossogen.export._tables import check_frames, frames_refused

    try:
        return check_frames(request.frames)
    except ValueError as exc:
        return tuple(ExportRefused(str(e), exit_codes.USAGE, "frames", cause=e)
                     for e in frames_refused(exc))  # fmt: skip


def _raw_size(
    request: ExportRunsRequest, records: list[RunRecord]
) -> tuple[int, ExportRefused | None]:
    """The raw zip's estimate, and its refusal when over the request's ceiling.

    Raises:
        ExportRefused: 69 for unreachable storage, 66 for a run folder gone.
    """
    from glossogen.export._raw import RAW_ZIP_MAX_BYTES, check_raw_size, estimate_raw_bytes

    try:
        estimate = estimate_raw_bytes(records, include_logs=request.include_logs)
    except StorageError as exc:
        raise ExportRefused(str(exc), exit_codes.TRANSPORT, cause=exc) from exc
    except FileNotFoundError as exc:
        line = f"not found: {exc.filename or exc}"
        raise ExportRefused(line, exit_codes.UNREADABLE, cause=exc) from exc
    try:
        check_raw_size(estimate, request.max_raw_bytes or RAW_ZIP_MAX_BYTES)
    except ValueError as exc:  # the raw ceiling (RawZipTooLarge)
        line = str(exc).splitlines()[0]
        return estimate, ExportRefused(line, exit_codes.REFUSED, "raw", cause=exc)
    return estimate, None


def _select(request: ExportRunsRequest, ceiling: int, listed: list[str] | None) -> SelectedRuns:
    """The runs ``request`` selects (of its group), up to ``ceiling`` while reading.

    ``listed``: the run ids the selection's check listed (the folder is not listed again).

    Raises:
        ExportRefused: see :func:`plan_export`.
    """
    selection = request.selection or {"kind": "filters"}
    try:
        selected = select_runs(request.runs_dir, selection, max_runs=ceiling, listed=listed)
    except SelectionError as exc:
        raise _together(selection_refused(exc)) from exc
    except RunsDirError as exc:
        raise ExportRefused(str(exc), exit_codes.UNREADABLE, "runs_dir", cause=exc) from exc
    except StorageError as exc:
        raise ExportRefused(str(exc), exit_codes.TRANSPORT, cause=exc) from exc
    except FileNotFoundError as exc:
        line = f"not found: {exc.filename or exc}"
        raise ExportRefused(line, exit_codes.UNREADABLE, cause=exc) from exc
    except ValueError as exc:  # a run file that cannot be read
        raise ExportRefused(str(exc).splitlines()[0], exit_codes.REFUSED, cause=exc) from exc
    if request.group is None:
        return selected
    return of_group(selected, request.selection, request.group)
