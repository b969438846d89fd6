"""Export: CSV tables (polars) over a selection of runs, read straight from the runs directory.

Select runs (:func:`select_runs` with a :data:`Selection`), then build tables in memory
(:func:`build_frames`, the REST path) or write them (:func:`write_tables`, the CLI path, which
streams the event-log tables one run at a time). The raw zip and ATIF trajectories live in
``_raw``/``_atif``.
"""

from glossogen.export._knobfilter import KnobCondition, SelectionError, parse_conditions
from glossogen.export._runlog import RUNNING, AgentFacts, LogFacts, read_log_facts
from glossogen.export._selection import (
    MAX_RUNS,
    FilterSelection,
    RunIdSelection,
    RunRecord,
    SelectedRuns,
    Selection,
    load_run,
    select_runs,
)
from glossogen.export._tables import (
    ALWAYS,
    DEFAULT_FRAMES,
    FRAMES,
    LOG_FRAMES,
    available_columns,
    build_frames,
    check_frames,
    coverage,
    csv_bytes,
    legend,
    publish,
    write_tables,
)

__all__ = [
    "ALWAYS",
    "DEFAULT_FRAMES",
    "FRAMES",
    "LOG_FRAMES",
    "MAX_RUNS",
    "RUNNING",
    "AgentFacts",
    "FilterSelection",
    "KnobCondition",
    "LogFacts",
    "RunIdSelection",
    "RunRecord",
    "SelectedRuns",
    "Selection",
    "SelectionError",
    "available_columns",
    "build_frames",
    "check_frames",
    "coverage",
    "csv_bytes",
    "legend",
    "load_run",
    "parse_conditions",
    "publish",
    "read_log_facts",
    "select_runs",
    "write_tables",
]
