"""Evaluation: metrics over a run's event log, LLM judges, and the run's report.

Metric authors import :func:`metric`, :class:`MetricContext`, :class:`Scored`,
:class:`RoundObservation`, :class:`AgentObservation`, :class:`NotApplicable` and
:class:`MetricFailed` from here; plug-ins register through the ``glossogen.metrics``
entry-point group.
"""

from glossogen.evaluation._contract import (
    AgentObservation,
    JudgeInfo,
    Metric,
    MetricContext,
    MetricFailed,
    MetricKind,
    MetricResult,
    NotApplicable,
    RoundObservation,
    Scored,
)
from glossogen.evaluation._evaluate import (
    PLOT_METRICS,
    Evaluation,
    EvaluationPlan,
    Outcome,
    failed_outcome,
    headline_rows,
    parse_metric_names,
    plan_evaluation,
    scenario_of,
    score_all,
    score_metric,
    summarise,
    write_outcomes,
)
from glossogen.evaluation._judge import Judge, parse_judge_settings
from glossogen.evaluation._measures import (
    GZIP_LEVEL,
    character_entropy_bits,
    gzip_compression_ratio,
)
from glossogen.evaluation._plot import REPORT_HTML, write_html
from glossogen.evaluation._registry import (
    ENTRY_POINT_GROUP,
    UnknownMetricError,
    get_metric,
    metric,
    metric_names,
)
from glossogen.evaluation._report import (
    REPORT_VERSION,
    EvaluationCost,
    LogLinesSkipped,
    Report,
    read_report,
    report_name,
    stale_entries,
)
from glossogen.evaluation._run import (
    EvaluationError,
    LoadedRun,
    SkippedLines,
    find_scenario,
    load_run,
    resolve_run_dir,
)

__all__ = [
    "PLOT_METRICS",
    "Evaluation",
    "summarise",
    "ENTRY_POINT_GROUP",
    "GZIP_LEVEL",
    "REPORT_HTML",
    "REPORT_VERSION",
    "AgentObservation",
    "EvaluationCost",
    "EvaluationError",
    "EvaluationPlan",
    "Judge",
    "JudgeInfo",
    "LoadedRun",
    "LogLinesSkipped",
    "SkippedLines",
    "Metric",
    "MetricContext",
    "MetricFailed",
    "MetricKind",
    "MetricResult",
    "NotApplicable",
    "Outcome",
    "Report",
    "RoundObservation",
    "Scored",
    "UnknownMetricError",
    "character_entropy_bits",
    "failed_outcome",
    "find_scenario",
    "get_metric",
    "gzip_compression_ratio",
    "headline_rows",
    "load_run",
    "metric",
    "metric_names",
    "parse_judge_settings",
    "parse_metric_names",
    "plan_evaluation",
    "read_report",
    "report_name",
    "resolve_run_dir",
    "scenario_of",
    "score_all",
    "score_metric",
    "stale_entries",
    "write_html",
    "write_outcomes",
]
