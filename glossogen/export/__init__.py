"""Export: CSV tables (polars) over a selection of runs, read straight from the runs directory.

One export to a folder or URL is :func:`export_runs` of an :class:`ExportRunsRequest` (every
check once in :func:`plan_export`, then :func:`write_export`; a refusal is an
:class:`ExportRefused`): the CLI, MCP and the export flow take it. Underneath, select runs
(:func:`select_runs` with a :data:`Selection`), then build tables in memory
(:func:`build_frames`, the REST path) or write them (:func:`write_tables`, the CLI path, which
streams every table: the event-log tables one run's log at a time, the default tables in
batches of runs under a header fixed by a first pass over the records). The raw zip and ATIF
trajectories live in ``_raw``/``_atif``.
"""

from typing import TYPE_CHECKING

from glossogen.export._knobfilter import (
    KnobCondition,
    NamedRunsRefused,
    RunsMissing,
    RunsUnreadable,
    SelectionError,
    parse_conditions,
)
from glossogen.export._lines import damaged_note
from glossogen.export._record import (
    DEFAULT_GROUP,
    RunRecord,
    damaged_line_notes,
    group_of,
    label_notes,
    load_folder,
    load_run,
    log_refused,
    queued_run,
)
from glossogen.export._runlog import RUNNING, AgentFacts, LogFacts, read_log_facts
from glossogen.export._select import (
    MAX_RUNS,
    SERVED_RUNS_DIR,
    RunsDirError,
    SelectedRuns,
    check_runs_dir,
    check_selection,
    named_refusals,
    not_begun_line,
    of_group,
    select_runs,
)
from glossogen.export._selection import (
    FilterSelection,
    RunIds,
    RunIdSelection,
    Selection,
    selection_of,
)

if TYPE_CHECKING:  # imported on first use at run time (``__getattr__`` below)
    from glossogen.export._atif import build_trajectories, trajectory_json
    from glossogen.export._raw import (
        RAW_ZIP_MAX_BYTES,
        RawZipResult,
        RawZipTooLarge,
        check_raw_size,
        estimate_raw_bytes,
        write_raw_zip,
    )
    from glossogen.export._runs import (
        ExportPlan,
        ExportRefused,
        ExportRunsRequest,
        plan_export,
        refused_with_selection,
        served_line,
        survey_export,
        value_refusals,
    )
    from glossogen.export._tables import (
        ALWAYS,
        DEFAULT_FRAMES,
        FRAMES,
        LOG_FRAMES,
        TablesMisnamed,
        available_columns,
        build_frames,
        check_frames,
        check_picks,
        coverage,
        legend,
    )
    from glossogen.export._write import (
        RAW_ZIP,
        check_out,
        csv_bytes,
        publish,
        write_legend,
        write_raw_export,
        write_table,
        write_tables,
    )
    from glossogen.export._writing import (
        ExportResult,
        export_runs,
        write_export,
        write_export_raw,
        write_export_table,
    )

_RAW_NAMES = {
    "RAW_ZIP_MAX_BYTES",
    "RawZipResult",
    "RawZipTooLarge",
    "check_raw_size",
    "estimate_raw_bytes",
    "write_raw_zip",
}
_RUNS_NAMES = {
    "ExportPlan",
    "ExportRefused",
    "ExportRunsRequest",
    "plan_export",
    "refused_with_selection",
    "served_line",
    "survey_export",
    "value_refusals",
}
_WRITING_NAMES = {
    "ExportResult",
    "export_runs",
    "write_export",
    "write_export_raw",
    "write_export_table",
}
_ATIF_NAMES = {"build_trajectories", "trajectory_json"}
_TABLE_NAMES = {
    "ALWAYS",
    "DEFAULT_FRAMES",
    "FRAMES",
    "LOG_FRAMES",
    "TablesMisnamed",
    "available_columns",
    "build_frames",
    "check_frames",
    "check_picks",
    "coverage",
    "legend",
}
_WRITE_NAMES = {
    "RAW_ZIP",
    "check_out",
    "csv_bytes",
    "publish",
    "write_legend",
    "write_raw_export",
    "write_table",
    "write_tables",
}


def __getattr__(name: str) -> object:
    """Import the tables, writing, raw zip and ATIF names on first use.

    Selecting runs needs none of them (``glossogen verify`` imports no polars); the atif package
    is not needed for CSV.
    """
    if name in _TABLE_NAMES:
        from glossogen.export import _tables

        return getattr(_tables, name)
    if name in _WRITE_NAMES:
        from glossogen.export import _write

        return getattr(_write, name)
    if name in _RAW_NAMES:
        from glossogen.export import _raw

        return getattr(_raw, name)
    if name in _RUNS_NAMES:
        from glossogen.export import _runs

        return getattr(_runs, name)
    if name in _WRITING_NAMES:
        from glossogen.export import _writing

        return getattr(_writing, name)
    if name in _ATIF_NAMES:
        from glossogen.export import _atif

        return getattr(_atif, name)
    raise AttributeError(f"module 'glossogen.export' has no attribute {name!r}")


__all__ = [
    "ExportPlan",
    "ExportRefused",
    "ExportResult",
    "ExportRunsRequest",
    "export_runs",
    "plan_export",
    "refused_with_selection",
    "served_line",
    "survey_export",
    "value_refusals",
    "write_export",
    "write_export_table",
    "write_export_raw",
    "RAW_ZIP_MAX_BYTES",
    "RawZipResult",
    "RawZipTooLarge",
    "build_trajectories",
    "check_raw_size",
    "estimate_raw_bytes",
    "trajectory_json",
    "write_raw_zip",
    "ALWAYS",
    "DEFAULT_FRAMES",
    "FRAMES",
    "LOG_FRAMES",
    "TablesMisnamed",
    "DEFAULT_GROUP",
    "MAX_RUNS",
    "RUNNING",
    "SERVED_RUNS_DIR",
    "NamedRunsRefused",
    "RunsMissing",
    "RunsUnreadable",
    "named_refusals",
    "not_begun_line",
    "of_group",
    "AgentFacts",
    "FilterSelection",
    "KnobCondition",
    "LogFacts",
    "RunIdSelection",
    "RunIds",
    "RunRecord",
    "RunsDirError",
    "SelectedRuns",
    "Selection",
    "SelectionError",
    "available_columns",
    "build_frames",
    "check_frames",
    "check_out",
    "check_picks",
    "check_runs_dir",
    "damaged_line_notes",
    "group_of",
    "label_notes",
    "damaged_note",
    "coverage",
    "csv_bytes",
    "legend",
    "load_folder",
    "load_run",
    "log_refused",
    "queued_run",
    "parse_conditions",
    "publish",
    "read_log_facts",
    "check_selection",
    "select_runs",
    "selection_of",
    "write_legend",
    "write_table",
    "write_tables",
    "write_raw_export",
    "RAW_ZIP",
]
