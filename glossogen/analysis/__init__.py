"""Analysis: a cohort's grouped answers with honest intervals, from one typed query.

A :class:`Query` (the export's selection, a grain, at most two group keys, row filters,
measures with their aggregates, an optional two-arm comparison, sort and limit) is validated
when built; :func:`answer` reads the selected runs through the export's tables and returns a
:class:`Result` (every cell with its n, missing, and for means and rates a 95% interval).
The CLI (``glossogen analyze``) only translates flags to a query and the result to a table,
JSON or CSV; REST, MCP and the run browser's page do the same. Dashboards (``_dashboard.py``)
are files of named queries and charts, rendered as a static report. No Prefect, no server.
"""

from glossogen.analysis._checks import check_query, check_sort
from glossogen.analysis._engine import answer, answer_records, fields, fields_of
from glossogen.analysis._query import (
    AGGREGATES,
    BLANK,
    GRAINS,
    MAX_KEYS,
    Cell,
    Compare,
    Comparison,
    Dimension,
    Fields,
    Group,
    Interval,
    Measure,
    Query,
    QueryError,
    Result,
    RowFilter,
    query_error_of,
)
from glossogen.analysis._render import result_frame
from glossogen.analysis._rows import grain_frame
from glossogen.analysis._select import RunsMissing, selection_notes, skipped_notes

__all__ = [
    "AGGREGATES",
    "BLANK",
    "GRAINS",
    "MAX_KEYS",
    "Cell",
    "Compare",
    "Comparison",
    "Dimension",
    "Fields",
    "Group",
    "Interval",
    "Measure",
    "Query",
    "QueryError",
    "Result",
    "RowFilter",
    "RunsMissing",
    "answer",
    "answer_records",
    "query_error_of",
    "selection_notes",
    "skipped_notes",
    "check_query",
    "check_sort",
    "fields",
    "fields_of",
    "grain_frame",
    "result_frame",
]
