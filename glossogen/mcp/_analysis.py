"""The analysis tools: ``analyze_runs`` and ``list_analysis_fields``.

Each translates its arguments into a :class:`~glossogen.analysis.Query` (the selection typed as
the query and the export routes take it; measures, filters and the comparison in the command
line's grammar: ``FIELD[:AGG]``, ``FIELD<op>VALUE``, ``KEY=A,B``) and returns the engine's typed
answer unchanged; a refusal is the engine's one line, worded without command-line flags.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import StrictInt, ValidationError

from glossogen.analysis import Fields, Result
from glossogen.export import FilterSelection, Selection
from glossogen.mcp._base import ToolBase

T = TypeVar("T")

DESCRIPTIONS = {
    "analyze_runs": (
        "Answer a grouped question over runs: selection {'kind': 'run_ids', 'run_ids': [...]} "
        "or {'kind': 'filters', scenario, labels, status, run_id_contains, contains_agent_id, "
        "knob} (the list_runs filters; default every run; without kind: filters, or run_ids "
        "when run_ids are given); "
        "grain (run, round, agent, message, call, observation with metric), up to two group "
        "keys (by), measures 'FIELD[:AGG]' (agg mean, median, sum, count, min, max, stddev, "
        "sem, rate; default mean), filters 'FIELD<op>VALUE' (op = != >= <= > <; a blank cell "
        "never matches), compare 'KEY=A,B' (B - A, paired by seed or fork when the runs pair). "
        "Every cell has value (null: no value, never 0), n, missing and, for mean and rate, a "
        "95% interval with its method (wilson for a rate of runs, else a bootstrap resampling "
        "whole runs). Use list_analysis_fields for the names."
    ),
    "list_analysis_fields": (
        "The fields of a grain's rows over the runs a selection picks (as analyze_runs): run "
        "fields, metric.*, knob.*, label.*, lineage.*, agent_model.*, round, seat, model, "
        "..., each with its dtype, coverage (rows and runs that carry it) and up to 20 "
        "distinct values."
    ),
}


class Analysis(ToolBase):
    """The analysis engine over the served runs directory."""

    def analyze_runs(
        self,
        measures: list[str],
        grain: str = "run",
        by: list[str] | None = None,
        filters: list[str] | None = None,
        compare: str | None = None,
        metric: str | None = None,
        sort: str | None = None,
        limit: StrictInt | None = None,
        seed: StrictInt = 0,
        resamples: StrictInt = 2000,
        max_runs: StrictInt = 5000,
        selection: Selection | None = None,
    ) -> Result:
        """The engine's answer to the query these arguments make."""
        from glossogen.analysis import Compare, Measure, Query, RowFilter, answer

        def query() -> Query:
            return Query.model_validate({
                "selection": selection or FilterSelection(),
                "grain": grain, "metric": metric, "by": by or [],
                "filters": [RowFilter.parse(f) for f in filters or []],
                "measures": [Measure.parse(m) for m in measures],
                "compare": Compare.parse(compare) if compare else None,
                "sort": sort, "limit": limit, "seed": seed, "resamples": resamples,
                "max_runs": max_runs,
            })  # fmt: skip

        return _refused(lambda: answer(self.runs_dir, _refused(query)), self.runs_dir)

    def list_analysis_fields(
        self,
        grain: str = "run",
        metric: str | None = None,
        max_runs: StrictInt = 5000,
        selection: Selection | None = None,
    ) -> Fields:
        """The fields of ``grain``'s rows over the selected runs, with coverage and values."""
        from glossogen.analysis import Measure, Query, fields

        def query() -> Query:  # the query's own checks of grain, metric and max_runs
            return Query.model_validate({
                "selection": selection or FilterSelection(), "grain": grain, "metric": metric,
                "measures": [Measure(field="run_id", agg="count")], "max_runs": max_runs,
            })  # fmt: skip

        checked = _refused(query)
        return _refused(
            lambda: fields(
                self.runs_dir, checked.selection, checked.grain, checked.metric, checked.max_runs
            ),
            self.runs_dir,
        )


def _refused(step: Callable[[], T], runs_dir: str = "") -> T:
    """Run ``step``; a refusal of the query, the selection or the storage is one tool error.

    Its line never names the server's runs directory ``runs_dir`` by its path
    (:func:`~glossogen.export.served_line`): the client did not give it.
    """
    from glossogen.analysis import QueryError, query_error_of
    from glossogen.export import RunsDirError, SelectionError, served_line
    from glossogen.refusals import unknown_key_line, validator_line
    from glossogen.storage import StorageError

    try:
        return step()
    except QueryError as exc:  # each value refused, ``; ``-joined (one alone: its line)
        each = (e.message if isinstance(e, QueryError) else served_line(e, runs_dir)
                for e in exc.every)  # fmt: skip
        raise ToolError("; ".join(each)) from None
    except SelectionError as exc:  # each value of the selection refused, ``; ``-joined
        raise ToolError("; ".join(served_line(e, runs_dir) for e in exc.every)) from None
    except (RunsDirError, StorageError) as exc:
        raise ToolError(served_line(exc, runs_dir)) from None
    except ValidationError as exc:
        ours = query_error_of(exc)
        if ours is not None:  # a query's own check: its line, as the engine's other refusals
            raise ToolError(ours.message) from None
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "query"
        if first["type"] == "extra_forbidden":  # the value echoed, as REST and a dashboard
            raise ToolError(unknown_key_line(where, first.get("input"))) from None
        raise ToolError(f"{where}: {validator_line(first)}") from None


def functions(runs_dir: str) -> list[Callable[..., Result | Fields]]:
    """The analysis tools' functions, serving ``runs_dir`` (registered by ``_server``)."""
    tools = Analysis(runs_dir)
    return [tools.analyze_runs, tools.list_analysis_fields]


__all__ = ["DESCRIPTIONS", "Analysis", "functions"]
