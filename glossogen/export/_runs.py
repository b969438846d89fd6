"""One export of runs to a folder or URL: the request, its checks, the writing, the result.

:func:`plan_export` does every check of an :class:`ExportRunsRequest` once (the zip options,
``max_runs``, the tables, ``out``, the runs directory, the selection, the raw zip's ceiling)
before anything is written; :func:`write_export` writes the tables, the legend and the raw zip
of a plan; :func:`export_runs` is both. A refusal is an :class:`ExportRefused` carrying its
exit code and the request field at fault, which each surface words its own way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from glossogen import exit_codes
from glossogen.export._knobfilter import SelectionError
from glossogen.export._selection import (
    MAX_RUNS,
    SERVED_RUNS_DIR,
    RunRecord,
    RunsDirError,
    SelectedRuns,
    Selection,
    select_runs,
    without_runs_dir,
)
from glossogen.refusals import Refusal, worded
from glossogen.storage import StorageError


class ExportRunsRequest(BaseModel):
    """What an export writes: which runs, which tables, where, and the raw zip's options.

    Attributes:
        runs_dir: The runs directory (local path or fsspec URL).
        out: Where the tables go (a folder or an fsspec URL, created as needed).
        selection: Run ids or filters (:func:`selection_of`); None for every run.
        frames: Tables to write; None for ``run_level``, ``round_level``, ``agent_level``.
        repeat_run_columns: Copy the run context onto round, agent and message rows.
        include_metric_summaries: Add each metric's unit, summary and notes.
        max_runs: Ceiling on the runs selected.
        raw: Also write ``runs.zip`` of the run folders.
        include_logs: With ``raw``, keep the debug and stdout logs.
        include_atif: With ``raw``, add each agent's ATIF trajectory.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    runs_dir: str
    out: str
    selection: Selection | None = None
    frames: list[str] | None = None
    repeat_run_columns: bool = True
    include_metric_summaries: bool = False
    max_runs: int = MAX_RUNS
    raw: bool = False
    include_logs: bool = False
    include_atif: bool = False


class ExportRefused(ValueError):
    """An export refused before (or while) writing: one line, its exit code, the field at fault.

    Attributes:
        exit_code: The DESIGN §9 code (64 usage, 65 refused, 66 unreadable, 69 storage).
        field: The request field at fault (``frames``, ``out``, ``runs_dir``, ``selection``,
            ``max_runs``, ``include_logs``), or None when the line names none.
        refusal: The refused value as data (a surface words it with its own names), or None.
        cause: The library error refused, or None.
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
    own = isinstance(exc, ExportRefused) and exc.field == "out"  # the client's own folder
    return line if own or not runs_dir.strip() else without_runs_dir(line, runs_dir)


@dataclass(frozen=True)
class ExportPlan:
    """A checked export: the request, the tables in canonical order, the runs selected."""

    request: ExportRunsRequest
    names: list[str]
    selected: SelectedRuns

    @property
    def records(self) -> list[RunRecord]:
        """The runs to export."""
        return self.selected.records


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote: the runs, the rows per table, the files, the columns filled."""

    out: str
    runs: int
    rows: dict[str, int]
    files: list[str]
    coverage: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per table, each column's non-empty cells."""


def plan_export(request: ExportRunsRequest) -> ExportPlan:
    """Check every value of ``request`` once and select its runs; nothing is written.

    Raises:
        ExportRefused: 64 for ``include_logs``/``include_atif`` without ``raw``, ``max_runs``
            below 1, an unknown table or none, an ``out`` that is (or lies under) a file; 66
            for a runs directory that is not a folder or run ids that no longer resolve; 65
            for a selection refused (over ``max_runs``, an unknown scenario, a knob value not
            of the recorded type) or a raw zip over its ceiling; 69 for unreachable storage.
    """
    from glossogen.export._tables import check_frames
    from glossogen.export._write import check_out

    if (request.include_atif or request.include_logs) and not request.raw:
        said = Refusal(field="include_logs", also=("include_atif",), reason="apply to",
                       listed=("raw",))  # fmt: skip
        raise ExportRefused(said.worded(), exit_codes.USAGE, "include_logs", said)
    if request.max_runs < 1:
        said = Refusal(field="max_runs", reason=f"must be at least 1, got {request.max_runs}")
        raise ExportRefused(said.worded(), exit_codes.USAGE, "max_runs", said)
    try:
        names = check_frames(request.frames)
    except ValueError as exc:
        raise ExportRefused(str(exc), exit_codes.USAGE, "frames", cause=exc) from exc
    try:
        check_out(request.out)
    except ValueError as exc:
        raise ExportRefused(str(exc), exit_codes.USAGE, "out", cause=exc) from exc
    selected = _select(request)
    if request.raw:
        from glossogen.export._raw import check_raw_size, estimate_raw_bytes

        try:
            estimate = estimate_raw_bytes(selected.records, include_logs=request.include_logs)
            check_raw_size(estimate)
        except StorageError as exc:
            raise ExportRefused(str(exc), exit_codes.TRANSPORT, cause=exc) from exc
        except ValueError as exc:  # the raw ceiling (RawZipTooLarge)
            line = str(exc).splitlines()[0]
            raise ExportRefused(line, exit_codes.REFUSED, "raw", cause=exc) from exc
    return ExportPlan(request=request, names=names, selected=selected)


def _select(request: ExportRunsRequest) -> SelectedRuns:
    """The runs ``request`` selects, every run id it names resolved.

    Raises:
        ExportRefused: see :func:`plan_export`.
    """
    selection = request.selection or {"kind": "filters"}
    try:
        selected = select_runs(request.runs_dir, selection, max_runs=request.max_runs)
    except SelectionError as exc:
        refused = ExportRefused(worded(exc), exit_codes.REFUSED, "selection", exc.refusal, exc)
        raise refused from exc
    except RunsDirError as exc:
        raise ExportRefused(str(exc), exit_codes.UNREADABLE, "runs_dir", cause=exc) from exc
    except StorageError as exc:
        raise ExportRefused(str(exc), exit_codes.TRANSPORT, cause=exc) from exc
    except FileNotFoundError as exc:
        line = f"not found: {exc.filename or exc}"
        raise ExportRefused(line, exit_codes.UNREADABLE, cause=exc) from exc
    except ValueError as exc:  # a run file that cannot be read
        raise ExportRefused(str(exc).splitlines()[0], exit_codes.REFUSED, cause=exc) from exc
    if selected.missing_run_ids:
        line = f"run ids that no longer resolve: {', '.join(selected.missing_run_ids)}"
        missing = SelectionError(line, "run_ids")
        raise ExportRefused(line, exit_codes.UNREADABLE, "selection", cause=missing)
    return selected


def write_export(plan: ExportPlan) -> ExportResult:
    """Write the plan's tables, the legend (two tables or more) and, asked, the raw zip.

    Raises:
        ExportRefused: 69 for unreachable storage or a write failing after the checks (disk
            full, a race), 66 for a run file gone since it was selected, 65 for a run file
            that cannot be read.
    """
    from glossogen.export._write import write_raw_export, write_tables
    from glossogen.storage import join

    request = plan.request
    out = request.out
    files = [join(out, f"{n}.csv") for n in plan.names]
    if len(plan.names) > 1:
        files.append(join(out, "columns.csv"))
    coverage: dict[str, dict[str, int]] = {}
    try:
        rows = write_tables(
            plan.records, plan.names, out, repeat_run_columns=request.repeat_run_columns,
            include_metric_summaries=request.include_metric_summaries, filled=coverage,
        )  # fmt: skip
        if request.raw:
            files.append(write_raw_export(plan.records, out, include_logs=request.include_logs,
                                          include_atif=request.include_atif))  # fmt: skip
    except StorageError as exc:
        raise ExportRefused(str(exc), exit_codes.TRANSPORT, cause=exc) from exc
    except FileNotFoundError as exc:
        line = f"not found: {exc.filename or exc}"
        raise ExportRefused(line, exit_codes.UNREADABLE, cause=exc) from exc
    except OSError as exc:
        line = f"cannot write to {out}: {exc}"
        raise ExportRefused(line, exit_codes.TRANSPORT, cause=exc) from exc
    except ValueError as exc:
        raise ExportRefused(str(exc).splitlines()[0], exit_codes.REFUSED, cause=exc) from exc
    return ExportResult(out=out, runs=len(plan.records), rows=rows, files=files,
                        coverage=coverage)  # fmt: skip


def export_runs(request: ExportRunsRequest) -> ExportResult:
    """Check ``request`` (:func:`plan_export`) and write its export (:func:`write_export`).

    Raises:
        ExportRefused: see :func:`plan_export` and :func:`write_export`.
    """
    return write_export(plan_export(request))
