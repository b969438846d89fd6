"""Evaluate one run end to end from a small handle, and what a cohort of runs needs around it.

A cohort (``glossogen evaluate --runs-dir``) hands its runs over in batches of
:class:`CohortRun` (a folder URL, scenario and run id: never a parsed log) with one checked
:class:`EvaluationRequest`; :func:`evaluate_batch` reads each run's log once (hashed and parsed
from the same bytes), skips a run whose report is up to date (:func:`cached_run`, from the
report alone), and otherwise :func:`evaluate_run` scores what is not up to date
(:func:`~glossogen.evaluation._evaluate.up_to_date`), writes its report and returns a
:class:`RunOutcome` of a few fields. A run whose every planned metric is up to date is
``skipped`` and nothing is written; a run that cannot be evaluated is ``refused`` with its
one-line reason; neither stops the others. A refused run's report of another log (it was
scored before its log was cut, resumed or replaced) is set aside, never left beside a log it
does not describe (:func:`~glossogen.evaluation._report.set_aside_stale_report`), and the
reason says so.

:func:`estimate_judge_usd` prices the judge calls a run would make before any is made (the
cohort's ``spend_cap_usd`` admits a run only while spent + in flight + its estimate stays
within the cap).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from glossogen import exit_codes
from glossogen.evaluation._evaluate import (
    Evaluation,
    EvaluationPlan,
    check_replicas,
    judge_half_given,
    needs_a_judge,
    parse_metric_names,
    plan_evaluation,
    score_all,
    summarise,
    write_outcomes,
)
from glossogen.evaluation._judge import check_judge_provider, parse_judge_settings
from glossogen.evaluation._read import no_collection
from glossogen.evaluation._report import LogLinesSkipped, set_aside_stale_report
from glossogen.evaluation._run import (
    EvaluationError,
    RunLog,
    log_digest,
    open_folder,
)
from glossogen.pricing import price_call
from glossogen.refusals import Refusal, worded
from glossogen.storage import StorageError

USAGE = int(exit_codes.USAGE)


@dataclass(frozen=True)
class JudgeTokens:
    """Token counts assumed for one judge call before it is made (an estimate, not a bill).

    Input: the instructions plus the round's text at ``chars_per_token`` characters per token
    and ``per_message`` tokens of framing per message; output: ``output_base`` plus
    ``output_per_message`` tokens per message judged.
    """

    instructions: int = 400
    per_message: int = 20
    chars_per_token: float = 4.0
    output_base: int = 40
    output_per_message: int = 25

    def for_round(self, messages: int, chars: int) -> tuple[int, int]:
        """Return ``(input_tokens, output_tokens)`` of one call on a round's messages."""
        text = int(chars / self.chars_per_token) + self.per_message * messages
        return self.instructions + text, self.output_base + self.output_per_message * messages


JUDGE_TOKENS = JudgeTokens()
"""The assumption :func:`estimate_judge_usd` prices."""


class EvaluationRequest(BaseModel):
    """What to score on every run of an evaluation, checked once (:func:`check_request`).

    ``metrics`` is None for ``all``; ``judge_settings`` are the validated pydantic-ai settings.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    metrics: list[str] | None = None
    model: str | None = None
    provider: str | None = None
    judge_settings: dict[str, Any] = {}
    judge_replicas: int = 1
    probe_replicas: int = 1
    allow_incomplete: bool = False
    plot: bool = False
    judge_cache: str | None = None
    """A judge cache folder asked before the judge (``--judge-cache``); None: none."""

    @property
    def metric_arg(self) -> str | list[str]:
        """The ``metrics`` argument of :func:`plan_evaluation`."""
        return "all" if self.metrics is None else list(self.metrics)

    @property
    def calls_models(self) -> bool:
        """Whether scoring may call a model: a judge, or a probe of the agents' own models."""
        from glossogen.evaluation._registry import get_metric, metric_names

        names = metric_names() if self.metrics is None else self.metrics
        return self.model is not None or any(get_metric(n).kind == "model" for n in names)


def check_request(
    metrics: str | list[str] = "all",
    model: str | None = None,
    provider: str | None = None,
    judge_settings: dict[str, Any] | list[str] | None = None,
    judge_replicas: int = 1,
    probe_replicas: int = 1,
    allow_incomplete: bool = False,
    plot: bool = False,
    judge_cache: str | None = None,
) -> EvaluationRequest:
    """Check the flags that do not depend on a run (64 usage, with the bad value named).

    Raises:
        EvaluationError: 64 for an unknown metric, a judge half given, a bad judge setting or
            provider, replicas below 1, a judged metric named without a judge, or a judge
            cache that is a file (``exc.refusal`` names the request field).
    """
    from glossogen.evaluation._registry import get_metric
    from glossogen.storage import path_kind

    if judge_cache is not None and (not judge_cache.strip() or path_kind(judge_cache) == "file"):
        refused = Refusal(field="judge_cache", value=repr(judge_cache), reason="not a folder")
        raise EvaluationError(refusal=refused, exit_code=USAGE)

    check_replicas("judge_replicas", judge_replicas)
    check_replicas("probe_replicas", probe_replicas)
    names = parse_metric_names(metrics)
    if (model is None) != (provider is None):
        raise judge_half_given()
    settings: dict[str, Any] = {}
    if isinstance(judge_settings, list):
        settings = parse_judge_settings(judge_settings)
    elif judge_settings:
        settings = dict(judge_settings)
    if provider is not None:
        check_judge_provider(provider)
    if names is not None and model is None:
        judged = [n for n in names if get_metric(n).needs_judge]
        if judged:
            raise needs_a_judge(judged)
    return EvaluationRequest(
        metrics=names, model=model, provider=provider, judge_settings=settings,
        judge_replicas=judge_replicas, probe_replicas=probe_replicas,
        allow_incomplete=allow_incomplete, plot=plot, judge_cache=judge_cache,
    )  # fmt: skip


class CohortRun(BaseModel):
    """A run of a cohort as a task parameter: where it is (its log is read in the task)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    run_url: str
    scenario: str


class RunHandle(BaseModel):
    """A run as a task parameter: where it is and which log was seen (never the parsed log)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    run_url: str
    scenario: str
    log_sha256: str


def run_handle(run_url: str, scenario: str, run_id: str | None = None) -> RunHandle:
    """Return the handle of the ``scenario`` run in ``run_url`` (its log hashed once).

    Raises:
        EvaluationError: 65/66 as :func:`~glossogen.evaluation._run.log_digest`.
    """
    folder = open_folder(run_url, scenario)
    return RunHandle(
        run_id=run_id or folder.run_id,
        run_url=folder.url,
        scenario=scenario,
        log_sha256=log_digest(folder),
    )


OutcomeState = Literal["scored", "skipped", "refused", "failed"]


class RunOutcome(BaseModel):
    """What evaluating one run of a cohort did (a task's small return value).

    Attributes:
        run_id: The run.
        state: ``scored`` (the report written, some metrics maybe ``failed``), ``skipped``
            (every planned entry up to date, nothing written), ``refused`` (the run cannot be
            evaluated as asked: ``error`` says why) or ``failed`` (the report could not be
            written, or a fault).
        exit_code: The exit code the run alone would have given.
        error: Why the run was refused or failed, a refused request value named by its field.
        refusal: The refused request value behind ``error`` (None: no request value refused),
            for a surface to name its field its own way (:meth:`said`).
        scored: Metrics computed now; ``failed``: those of them that failed, with the error.
        reused: Metrics whose up-to-date entry was kept.
        cost_usd: Evaluation spend of the metrics computed now (None: some call not costed).
        log_lines_skipped: The run's report's count of log lines the metrics could not read
            (``scored`` and ``skipped`` runs; zero for the others).
    """

    run_id: str
    state: OutcomeState
    exit_code: int = 0
    error: str | None = None
    refusal: Refusal | None = None
    scored: list[str] = []
    failed: dict[str, str] = {}
    reused: list[str] = []
    cost_usd: float | None = 0.0
    log_lines_skipped: LogLinesSkipped = Field(default_factory=LogLinesSkipped)

    def said(self, names: Mapping[str, str] | None = None) -> str:
        """Return ``error``, the refused request value named as ``names`` says (its field)."""
        error = self.error or ""
        if self.refusal is None:
            return error
        return self.refusal.worded(names) + error.removeprefix(self.refusal.worded())


def plan_request(
    run_url: str, scenario: str | None, request: EvaluationRequest, log: RunLog | None = None
) -> EvaluationPlan:
    """Plan ``request`` on the run in ``run_url`` (see :func:`plan_evaluation` for refusals).

    ``log``: the run's log as read already (not read again).
    """
    return plan_evaluation(
        run_url,
        request.metric_arg,
        request.model,
        request.provider,
        dict(request.judge_settings),
        request.judge_replicas,
        request.probe_replicas,
        request.allow_incomplete,
        scenario=scenario,
        plot=request.plot,
        log=log,
        judge_cache=request.judge_cache,
    )


async def run_evaluation(
    plan: EvaluationPlan, plot: bool = False, reuse_all: bool = False, now: datetime | None = None
) -> Evaluation:
    """Score what the plan does not reuse, write the sidecars, the report (and ``report.html``).

    Raises:
        StorageError: the run folder cannot be written.
    """
    from glossogen.evaluation._plot import write_html

    outcomes = await score_all(plan, reuse_all)
    report = write_outcomes(plan, outcomes, now)
    if plot:
        write_html(plan.run.run_dir, report)
    done = summarise(plan, outcomes, report, reuse_all)
    answers = plan.judge.answers if plan.judge is not None else None
    if answers is not None:
        done.judge_cache_hits, done.judge_cache_misses = answers.hits, answers.misses
        done.judge_cache_kept = answers.kept
    return done


def _spend(evaluation: Evaluation) -> float | None:
    from glossogen.pricing import add_costs

    return add_costs([evaluation.report.metrics[n].cost_usd for n in evaluation.scored])


async def evaluate_run(
    handle: RunHandle,
    request: EvaluationRequest,
    log: RunLog | None = None,
    now: datetime | None = None,
) -> RunOutcome:
    """Evaluate one run of a cohort; never raises for a problem of this run alone.

    Every up-to-date entry is reused (deterministic ones too); a run with nothing to compute
    is ``skipped`` and its report is left as it is. A refused run whose report describes
    another log has it set aside (:func:`_refused`). ``log``: the run's log as read already
    (its SHA-256 the handle's); ``now``: the report's ``updated_at`` (default: the time).
    """
    try:
        plan = plan_request(handle.run_url, handle.scenario, request, log)
    except EvaluationError as exc:
        return _refused(handle, exc)
    except StorageError as exc:
        return RunOutcome(run_id=handle.run_id, state="refused",
                          exit_code=int(exit_codes.TRANSPORT), error=str(exc))  # fmt: skip
    skipped = plan.previous.log_lines_skipped if plan.previous else LogLinesSkipped()
    if not plan.to_score(reuse_all=True):
        return RunOutcome(run_id=handle.run_id, state="skipped", reused=plan.reused(True),
                          log_lines_skipped=skipped)  # fmt: skip
    try:
        done = await run_evaluation(plan, request.plot, reuse_all=True, now=now)
    except StorageError as exc:
        return RunOutcome(run_id=handle.run_id, state="failed",
                          exit_code=int(exit_codes.TRANSPORT),
                          error=f"cannot write the report: {exc}")  # fmt: skip
    failed = done.failed
    return RunOutcome(
        run_id=handle.run_id,
        state="scored",
        exit_code=int(exit_codes.EVALUATIONS_FAILED if failed else exit_codes.OK),
        scored=done.scored,
        failed=failed,
        reused=done.reused,
        cost_usd=_spend(done),
        log_lines_skipped=done.report.log_lines_skipped,
    )


class BatchOutcome(BaseModel):
    """What :func:`evaluate_batch` did: one outcome per run taken, and the runs not taken.

    ``unreadable``: run id -> why its log could not be read at all (missing, a folder).
    """

    outcomes: list[RunOutcome] = []
    unreadable: dict[str, str] = {}


async def evaluate_batch(
    runs: list[CohortRun],
    request: EvaluationRequest,
    on_outcome: Callable[[RunOutcome], None] | None = None,
    now: datetime | None = None,
) -> BatchOutcome:
    """Evaluate ``runs`` one after the other, each log read once; never raises for one run.

    A run's log is read, hashed and (when it is scored) parsed from the same bytes. A run
    whose report is up to date for the whole request is ``skipped`` from the report alone
    (:func:`cached_run`), its log not parsed; any other is :func:`evaluate_run`'s.
    ``on_outcome`` is called with each outcome as it is known; ``now`` is the reports'
    ``updated_at`` (default: the time each is written). The cyclic garbage collector is paused
    while a run is scored (:func:`~glossogen.evaluation._read.no_collection`): what a run builds
    lives until its report is written and is freed by reference counting after it, so a
    collection in the middle finds nothing to free and costs about a seventh of the run.
    """
    done = BatchOutcome()
    for run in runs:
        try:
            folder = open_folder(run.run_url, run.scenario)
            log = RunLog.read(folder)
        except EvaluationError as exc:
            done.unreadable[run.run_id] = str(exc)
            continue
        handle = RunHandle(
            run_id=run.run_id, run_url=folder.url, scenario=run.scenario, log_sha256=log.sha256
        )
        outcome = cached_run(handle, request)
        if outcome is None:
            with no_collection():
                outcome = await evaluate_run(handle, request, log, now)
        done.outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return done


def refusal(
    run_url: str, scenario: str, exc: EvaluationError, names: Mapping[str, str] | None = None
) -> str:
    """Return the one-line reason a run is refused, after setting aside a report of another log.

    The run is not scored now, so a report beside its log whose ``log_sha256`` is not the
    log's hash (taken now: the log may have changed since it was selected) describes a log
    that is gone: it is moved aside, bytes kept
    (:func:`~glossogen.evaluation._report.set_aside_stale_report`), and the reason names
    where. A log that cannot be read leaves the report alone. A refused request value is
    named as ``names`` says (the CLI's flag, MCP's argument; default: the request field).
    """
    try:
        folder = open_folder(run_url, scenario)
        aside = set_aside_stale_report(folder.url, scenario, log_digest(folder))
    except (EvaluationError, StorageError):
        aside = None
    said = worded(exc, names)
    if aside is None:
        return said
    return f"{said}; its report described another log and was moved aside to {aside}"


def _refused(handle: RunHandle, exc: EvaluationError) -> RunOutcome:
    """The ``refused`` outcome of ``handle`` (its reason from :func:`refusal`)."""
    return RunOutcome(run_id=handle.run_id, state="refused", exit_code=exc.exit_code,
                      error=refusal(handle.run_url, handle.scenario, exc),
                      refusal=exc.refusal)  # fmt: skip


def cached_run(handle: RunHandle, request: EvaluationRequest) -> RunOutcome | None:
    """Return the ``skipped`` outcome when ``handle``'s report is up to date for all of ``request``.

    The outcome keeps the report's metrics and its count of skipped log lines.

    Read from the report alone, no log parsed: every metric asked (``all``: every registered
    one, the judged ones only with a judge; ``--plot`` adds the charted ones) must have an
    up-to-date entry or be noted ``left_blank`` by the same version for the handle's log
    (:func:`~glossogen.evaluation._evaluate.up_to_date`). A report of a run that had not ended
    is never enough without ``allow_incomplete``. None when the run must be planned.
    """
    from glossogen.evaluation._evaluate import PLOT_METRICS, up_to_date
    from glossogen.evaluation._judge import Judge
    from glossogen.evaluation._registry import get_metric, metric_names
    from glossogen.evaluation._report import read_report

    folder = open_folder(handle.run_url, handle.scenario)
    try:
        previous = read_report(folder.url, handle.scenario)
    except (StorageError, OSError):
        return None
    if previous is None or previous.log_sha256 != handle.log_sha256:
        return None
    if previous.run_status is None and not request.allow_incomplete:
        return None
    judge = None
    if request.model is not None and request.provider is not None:
        judge = Judge(request.model, request.provider, dict(request.judge_settings))
    names = list(request.metrics) if request.metrics is not None else metric_names()
    if request.plot:
        names += [n for n in PLOT_METRICS if n not in names]
    metrics = [get_metric(n) for n in names]
    metrics = [m for m in metrics if m.measures(handle.scenario)]
    if request.metrics is None and judge is None:
        metrics = [m for m in metrics if not m.needs_judge]
    for m in metrics:
        fresh = up_to_date(previous, handle.log_sha256, folder, m, judge,
                           request.judge_replicas, request.probe_replicas)  # fmt: skip
        if not fresh:
            return None
    kept = [m.name for m in metrics if m.name in previous.metrics]
    return RunOutcome(run_id=handle.run_id, state="skipped", reused=kept,
                      log_lines_skipped=previous.log_lines_skipped)  # fmt: skip


def estimate_judge_usd(plan: EvaluationPlan) -> float | None:
    """Estimated USD of the judge calls scoring ``plan`` would make now (0.0 with none).

    One call per round with primary-channel messages and judged metric, times
    ``--judge-replicas``, each priced with genai-prices at :data:`JUDGE_TOKENS`' assumed
    token counts for the round's text. None when the judge model is not in the catalogue.
    """
    judged = [m for m in plan.to_score(reuse_all=True) if m.kind == "judged"]
    if not judged or plan.judge is None:
        return 0.0
    by_round: dict[int, int] = {}
    chars: dict[int, int] = {}
    for message in plan.run.messages:
        by_round[message.round_number] = by_round.get(message.round_number, 0) + 1
        chars[message.round_number] = chars.get(message.round_number, 0) + len(message.text)
    total = 0.0
    for round_number, count in by_round.items():
        input_tokens, output_tokens = JUDGE_TOKENS.for_round(count, chars[round_number])
        price = price_call(
            plan.judge.provider, plan.judge.model,
            input_tokens=input_tokens, output_tokens=output_tokens,
        )  # fmt: skip
        if price is None:
            return None
        total += price
    return total * len(judged) * plan.judge_replicas
