"""The scoring tools: evaluate a run or a cohort, and export tables of runs.

A run is scored by the library's entry ``launch.evaluate_planned``, as ``glossogen evaluate
--run-dir`` scores it: in this process unless it calls a model and a Prefect API is configured
(then through the ``evaluate`` flow); no Prefect server is started for it. A cohort is checked
and scored by ``launch.check_cohort`` and ``launch.evaluate_cohort``, as ``glossogen evaluate
--runs-dir`` scores it: the ``evaluate-cohort`` flow (on a temporary local Prefect server when no
API is configured).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import StrictFloat, StrictInt

from glossogen.mcp._base import (
    ToolBase,
    flat_arguments,
    refuse,
)
from glossogen.mcp._results import (
    CohortEvaluated,
    CohortRunEvaluated,
    Evaluated,
    Exported,
)
from glossogen.storage import StorageError

if TYPE_CHECKING:
    from glossogen.evaluation import EvaluationRequest
    from glossogen.export import FilterSelection, RunIdSelection

JUDGE_ARGUMENTS = {"model": "judge_model", "provider": "judge_provider"}
"""``evaluate_run``'s argument for each judge field a refusal names."""


def served_refusal(exc: BaseException, runs_dir: str) -> ToolError:
    """The tool error of a cohort's refusal, never naming the server's runs directory by its path.

    A refused selection or runs directory (the error the cohort's entry refused, kept as the
    refusal's context) is worded as ``export.served_line`` words it for a client (``scenario
    'x' has no run in the server's runs directory``, ``the server's runs directory does not
    exist``); any other line has the runs dir cut from it (``without_runs_dir``).
    """
    from glossogen.export import RunsDirError, SelectionError, served_line

    cause = exc if isinstance(exc, SelectionError) else exc.__cause__ or exc.__context__
    if isinstance(cause, RunsDirError) or (
        isinstance(cause, SelectionError) and cause.served is not None
    ):
        return ToolError(served_line(cause, runs_dir, JUDGE_ARGUMENTS))
    return refuse(exc, JUDGE_ARGUMENTS, runs_dir)


@dataclasses.dataclass(frozen=True)
class JudgeArguments:
    """What ``evaluate_run`` and ``evaluate_runs`` both take: the metrics and their judge.

    The arguments of ``glossogen evaluate`` (``--metrics``, ``--model``, ``--provider``,
    ``--judge-settings`` as ``key=value`` items, ``--judge-replicas``, ``--probe-replicas``,
    ``--allow-incomplete``, ``--plot``, ``--judge-cache``), each under the tool argument's
    name. A tool takes them flat among its own arguments
    (:func:`~glossogen.mcp._base.flat_arguments`); :meth:`request` is the one request value
    they make.
    """

    metrics: list[str] | None = None
    judge_model: str | None = None
    judge_provider: str | None = None
    judge_settings: list[str] | None = None
    judge_replicas: StrictInt = 1
    probe_replicas: StrictInt = 1
    allow_incomplete: bool = False
    plot: bool = False
    judge_cache: str | None = None

    def request(self) -> EvaluationRequest:
        """The checked request (every metric when none is named).

        Raises:
            EvaluationError: as :func:`glossogen.evaluation.check_request` refuses it.
        """
        from glossogen.evaluation import check_request

        return check_request(
            "all" if self.metrics is None else self.metrics, self.judge_model, self.judge_provider,
            list(self.judge_settings or []), self.judge_replicas, self.probe_replicas,
            self.allow_incomplete, self.plot, self.judge_cache,
        )  # fmt: skip


@dataclasses.dataclass(frozen=True)
class SelectionArguments:
    """What ``evaluate_runs`` and ``export_runs`` both take: the export's selection of runs.

    ``run_ids``, or the filters (``scenario``, ``labels``, ``status``, ``run_id_contains``,
    ``contains_agent_id``, ``knob``), never both, as ``glossogen export`` and ``glossogen
    evaluate --runs-dir`` take them; :meth:`selection` is the one value they make.
    """

    scenario: list[str] | None = None
    labels: list[str] | None = None
    status: str | None = None
    run_id_contains: str | None = None
    contains_agent_id: str | None = None
    knob: list[str] | None = None
    run_ids: list[str] | None = None

    def selection(self, entry_checks: bool = False) -> RunIdSelection | FilterSelection:
        """The selection (``export.selection_of``; ``run_ids: []`` refused, not every run).

        ``entry_checks``: the knob conditions' syntax is left to the operation's entry, which
        names it beside every other value refused (``selection_of``'s).

        Raises:
            SelectionError: as :func:`glossogen.export.selection_of` refuses it.
        """
        from glossogen.export import selection_of

        return selection_of(self.run_ids, self.scenario, self.labels, self.run_id_contains,
                            self.status, self.contains_agent_id, self.knob,
                            entry_checks=entry_checks)  # fmt: skip


class Scoring(ToolBase):
    """Evaluating and exporting runs."""

    @flat_arguments(judge=JudgeArguments)
    async def evaluate_run(self, run_id: str, judge: JudgeArguments) -> Evaluated:
        """Score a finished run into its report and return the entries of the metrics asked.

        Takes what ``glossogen evaluate --run-dir`` takes: ``judge_settings`` as ``key=value``
        items, ``judge_replicas``, ``probe_replicas``, ``plot``, ``judge_cache``;
        ``allow_incomplete``: score a run that has not ended (still playing, or killed) on
        what it logged, as ``glossogen evaluate --allow-incomplete`` does.
        """
        from glossogen.evaluation import EvaluationError, plan_request, refusal
        from glossogen.export._select import without_runs_dir
        from glossogen.launch import evaluate_planned

        folder = self._folder(run_id)
        try:
            request = judge.request()
            plan = plan_request(folder.url, folder.scenario, request)
            done = await evaluate_planned(plan, request)
        except EvaluationError as exc:  # a report of another log is set aside, as the CLI does
            line = refusal(folder.url, folder.scenario, exc, JUDGE_ARGUMENTS)
            raise ToolError(without_runs_dir(line, self.runs_dir)) from None  # never its path
        except StorageError as exc:
            raise refuse(exc, runs_dir=self.runs_dir) from None
        report = done.report
        return Evaluated(
            run_id=folder.run_id,
            report=folder.within_runs_dir(folder.report_url),  # never the server's path
            entries={n: report.metrics[n].model_dump(mode="json") for n in done.scored},
            blank=dict(plan.blank) | done.blank,
            failed=done.failed,
            evaluation_cost_usd=report.evaluation_cost.total_usd,
        )

    @flat_arguments(judge=JudgeArguments, selection=SelectionArguments)
    async def evaluate_runs(
        self,
        judge: JudgeArguments,
        selection: SelectionArguments,
        spend_cap_usd: StrictFloat | None = None,
    ) -> CohortEvaluated:
        """Score every selected run into its report, as ``glossogen evaluate --runs-dir`` does.

        Takes what ``evaluate_run`` takes, the export's selection (``run_ids``, or the filters,
        never both) and ``spend_cap_usd`` (the cohort's judge spend); checked and played by the
        library's cohort entry (``launch.check_cohort``, ``launch.evaluate_cohort``: the
        ``evaluate-cohort`` flow), as the command's. A run up to date is skipped; one run's
        failure never stops the others.
        """
        from glossogen.evaluation import EvaluationError
        from glossogen.export import SERVED_RUNS_DIR, SelectionError
        from glossogen.export._select import without_runs_dir
        from glossogen.launch import check_cohort, cohort_summary, evaluate_cohort

        try:
            request = judge.request()
            cohort = check_cohort(self.runs_dir, selection.selection(True), request, spend_cap_usd)
            done = await evaluate_cohort(cohort)
        except (EvaluationError, SelectionError) as exc:  # never the server's runs dir's path
            every = exc.every  # each value refused, in the request's order, ``; ``-joined
            lines = (str(served_refusal(each, self.runs_dir)) for each in every)
            raise ToolError("; ".join(lines)) from None
        served = functools.partial(without_runs_dir, runs_dir=self.runs_dir)
        not_evaluated = {run_id: served(why) for run_id, why in done.unreadable.items()}
        not_evaluated |= dict.fromkeys(done.missing_run_ids, f"no such run in {SERVED_RUNS_DIR}")
        not_evaluated |= {o.run_id: served(o.said(JUDGE_ARGUMENTS)) for o in done.outcomes
                          if o.state in ("refused", "failed")}  # fmt: skip
        return CohortEvaluated(
            message=cohort_summary(done, None),  # never the server's runs directory's path
            scored=done.count("scored"),
            skipped=done.count("skipped"),
            not_evaluated=len(not_evaluated),  # the summary line's count, each run listed
            runs=[
                CohortRunEvaluated(
                    run_id=o.run_id,
                    state=o.state,
                    error=served(o.said(JUDGE_ARGUMENTS)) if o.error else None,
                    scored=o.scored,
                    failed=o.failed,
                    reused=o.reused,
                    cost_usd=o.cost_usd,
                )  # fmt: skip
                for o in done.outcomes
            ],
            not_evaluated_runs=not_evaluated,
            not_measured=done.not_measured,
            capped=done.capped.worded(JUDGE_ARGUMENTS) if done.capped else None,
            estimate_usd=done.estimate_usd,
            spent_usd=done.spent_usd,
        )

    @flat_arguments(selection=SelectionArguments)
    def export_runs(
        self,
        out: str,
        frames: list[str] | None = None,
        selection: SelectionArguments = SelectionArguments(),  # the fields, flat, in its place
        repeat_run_columns: bool = True,
        include_metric_summaries: bool = False,
        max_runs: StrictInt = 5000,
        raw: bool = False,
        include_logs: bool = False,
        include_atif: bool = False,
    ) -> Exported:
        """Write CSV tables of the selected runs to a folder or ``s3://`` URL.

        Takes what ``glossogen export`` takes: the selection (run ids, or the filters, never
        both: ``selection_of``), ``repeat_run_columns``, ``include_metric_summaries``,
        ``max_runs``, and ``raw`` (also ``runs.zip`` of the run folders; with it
        ``include_logs`` keeps the debug and stdout logs, ``include_atif`` adds ATIF
        trajectories), its ceiling checked before anything is written.
        """
        from glossogen.export import (
            ExportRefused,
            ExportRunsRequest,
            SelectionError,
            export_runs,
            refused_with_selection,
            served_line,
        )

        request = ExportRunsRequest(
            runs_dir=self.runs_dir, out=out, frames=frames, max_runs=max_runs, raw=raw,
            repeat_run_columns=repeat_run_columns, include_logs=include_logs,
            include_metric_summaries=include_metric_summaries, include_atif=include_atif,
        )  # fmt: skip

        def said(every: tuple[Exception, ...]) -> ToolError:  # never the server's runs dir
            return ToolError("; ".join(served_line(e, self.runs_dir) for e in every))

        try:  # every value refused, in the request's order, as the CLI and REST name them
            request = request.model_copy(update={"selection": selection.selection(True)})
            done = export_runs(request)
        except SelectionError as exc:  # the selection's own check: the others' refusals too
            raise said(refused_with_selection(request, exc).every) from None
        except ExportRefused as exc:
            raise said(exc.every) from None
        filled = {f"{t}.{c}": n for t, cells in done.coverage.items() for c, n in cells.items()}
        from glossogen.export._select import without_runs_dir

        skipped = {r: without_runs_dir(why, self.runs_dir) for r, why in done.unreadable.items()}
        return Exported(out=out, runs=done.runs, files=done.files, rows=done.rows, coverage=filled,
                        unreadable_runs=skipped)  # fmt: skip
