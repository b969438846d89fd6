"""Analysis: a cohort's grouped answers with honest intervals, from one typed query.

A :class:`Query` (the export's selection, a grain, at most two group keys, row filters,
measures with their aggregates, an optional two-arm comparison, sort and limit) is validated
when built; :func:`answer` reads the selected runs through the export's tables and returns a
:class:`Result` (every cell with its n, missing, and for means and rates a 95% interval).
The CLI (``glossogen analyze``) only translates flags to a query and the result to a table,
JSON or CSV; REST, MCP and the run browser's page do the same. Dashboards (``_dashboard.py``)
are files of named queries and charts, rendered as a static report. No Prefect, no server.
"""

from typing import TYPE_CHECKING

from glossogen._lazy import first_use
from glossogen.analysis._query import MAX_KEYS, Query
from glossogen.analysis._result import (
    BLANK,
    Cell,
    Comparison,
    Dimension,
    Fields,
    Group,
    Interval,
    Result,
)
from glossogen.analysis._terms import (
    AGGREGATES,
    GRAINS,
    Compare,
    Measure,
    QueryError,
    RowFilter,
    query_error_of,
)

if TYPE_CHECKING:
    from glossogen.analysis._checks import check_query, check_sort
    from glossogen.analysis._engine import answer, fields
    from glossogen.analysis._render import result_frame
    from glossogen.analysis._rows import grain_frame
    from glossogen.analysis._select import (
        NamedRunsRefused,
        RunsMissing,
        skipped_notes,
    )

_HOME = {
    "check_query": "glossogen.analysis._checks",
    "check_sort": "glossogen.analysis._checks",
    "answer": "glossogen.analysis._engine",
    "fields": "glossogen.analysis._engine",
    "result_frame": "glossogen.analysis._render",
    "grain_frame": "glossogen.analysis._rows",
    "NamedRunsRefused": "glossogen.analysis._select",
    "RunsMissing": "glossogen.analysis._select",
    "skipped_notes": "glossogen.analysis._select",
}
"""The names whose modules read runs with polars, each imported on first use (PEP 562): the
query's typed values above are what MCP's and REST's schemas need, and a server that builds
its tools must not pay for the engine before a question is asked."""

__getattr__ = first_use(__name__, _HOME)

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
    "NamedRunsRefused",
    "RunsMissing",
    "answer",
    "query_error_of",
    "skipped_notes",
    "check_query",
    "check_sort",
    "fields",
    "grain_frame",
    "result_frame",
]
