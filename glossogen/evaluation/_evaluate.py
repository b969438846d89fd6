"""Plan an evaluation (every check before anything is spent or written), score, and report.

The CLI and the ``evaluate`` flow share these steps: :func:`plan_evaluation` refuses bad input
with the exit code to return, :func:`score_metric` computes one metric, and
:func:`write_outcomes` writes the sidecars and merges the report.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from glossogen import exit_codes
from glossogen.catalog import Provider, missing_env_vars
from glossogen.evaluation._contract import (
    Metric,
    MetricContext,
    MetricFailed,
    MetricResult,
    NotApplicable,
)
from glossogen.evaluation._judge import (
    JUDGE_ENV_VARS,
    Judge,
    check_judge_provider,
    parse_judge_settings,
)
from glossogen.evaluation._registry import UnknownMetricError, get_metric, metric_names
from glossogen.evaluation._report import (
    LeftBlank,
    Report,
    merge_report,
    read_report,
    stale_entries,
    write_report,
    write_sidecar,
)
from glossogen.evaluation._run import (
    EvaluationError,
    LoadedRun,
    RunLog,
    find_scenario,
    load_run,
    resolve_run_dir,
)
from glossogen.refusals import LOGGED_INT_MAX, Refusal
from glossogen.storage import RunFolder

USAGE = int(exit_codes.USAGE)

PLOT_METRICS = ("mean_chars_per_round", "round_success", "budget_utilisation")
"""The metrics ``report.html`` charts; ``--plot`` scores those that apply."""


@dataclass
class EvaluationPlan:
    """A checked evaluation request.

    Attributes:
        run: The loaded run.
        metrics: The metrics to score, in request order.
        blank: ``(name, reason)`` of requested metrics that do not apply to this run.
        judge: The judge, when ``--model`` and ``--provider`` were given.
        judge_replicas: Judge calls per item.
        probe_replicas: Probe calls per (agent, question).
        previous: The run's report as it was when the plan was made (None when it had none).
        fresh: Names of planned metrics whose entry in ``previous`` is up to date
            (:func:`up_to_date`), in plan order.
    """

    run: LoadedRun
    metrics: list[Metric]
    blank: list[tuple[str, str]] = field(default_factory=list)
    judge: Judge | None = None
    judge_replicas: int = 1
    probe_replicas: int = 1
    previous: Report | None = None
    fresh: list[str] = field(default_factory=list)
    unfit: dict[str, str] = field(default_factory=dict)
    """Requested metrics that do not apply to this log (it lacks their hooks), with why."""

    @property
    def calls_models(self) -> bool:
        """True when scoring it calls a model: a judged or model metric not up to date."""
        return any(m.kind != "deterministic" and m.name not in self.fresh for m in self.metrics)

    def context(self) -> MetricContext:
        """Return what each metric's ``compute`` is given."""
        return MetricContext(self.run, self.judge, self.judge_replicas, self.probe_replicas)

    def to_score(self, reuse_all: bool = False) -> list[Metric]:
        """The planned metrics to compute now, in plan order.

        An up-to-date entry of a metric that spends (``judged``, ``model``) is always reused,
        never paid for twice; with ``reuse_all`` (a cohort) deterministic ones are reused too.
        """
        return [
            m
            for m in self.metrics
            if m.name not in self.fresh or not (reuse_all or m.kind != "deterministic")
        ]

    def reused(self, reuse_all: bool = False) -> list[str]:
        """Names of the planned metrics whose report entry stands (not computed now)."""
        now = {m.name for m in self.to_score(reuse_all)}
        return [m.name for m in self.metrics if m.name not in now]


@dataclass
class Outcome:
    """One metric's outcome: an entry for the report, or blank with a reason."""

    name: str
    result: MetricResult | None = None
    blank: str | None = None
    sidecar_rows: list[dict[str, Any]] | None = None


def up_to_date(
    previous: Report | None,
    log_sha256: str,
    folder: RunFolder,
    metric: Metric,
    judge: Judge | None,
    judge_replicas: int,
    probe_replicas: int,
) -> bool:
    """True when ``previous`` holds an entry of ``metric`` that scoring again would reproduce.

    The cache key lives in the report itself, so it holds with or without Prefect: the same
    log (``log_sha256``), an ``ok`` entry of the same metric ``version``; for a judged metric
    the same judge (model, provider, settings) and ``replicas``; for a model metric the same
    ``replicas``; and the entry's sidecar file still in the run folder. A metric the report
    notes as ``left_blank`` by the same version is up to date too (it found nothing to
    measure on this log, or did not apply to it).
    """
    if previous is None or previous.log_sha256 != log_sha256:
        return False
    entry = previous.metrics.get(metric.name)
    if entry is None:
        noted = previous.left_blank.get(metric.name)
        return noted is not None and noted.version == metric.version
    if entry.status != "ok" or entry.version != metric.version:
        return False
    if metric.kind == "judged":
        if judge is None or entry.judge != judge.info or entry.replicas != judge_replicas:
            return False
    if metric.kind == "model" and entry.replicas != probe_replicas:
        return False
    return entry.sidecar is None or folder.exists(entry.sidecar)


def scenario_of(run_dir: str) -> str:
    """Return the scenario of the run in ``run_dir`` (see :func:`find_scenario`).

    Its ``<name>.jsonl`` log names it when ``<name>`` is an installed scenario, wherever the
    folder is stored; otherwise the parent folder's name (``<runs_dir>/<scenario>/<ts>``).
    """
    return find_scenario(resolve_run_dir(run_dir))


def check_replicas(field: str, value: int) -> None:
    """Refuse fewer than 1 call per item, or more than a 64-bit integer (64).

    ``judge_replicas``, ``probe_replicas``: the report records them, and its readers parse
    signed 64-bit integers (:data:`~glossogen.refusals.LOGGED_INT_MAX`).
    """
    if not 1 <= value <= LOGGED_INT_MAX:
        bound = "must be at least 1" if value < 1 else f"must be at most {LOGGED_INT_MAX}"
        raise EvaluationError(
            refusal=Refusal(field=field, value=str(value), reason=bound),
            exit_code=USAGE,
        )


def judge_half_given() -> EvaluationError:
    """The refusal of a judge's model without its provider, or the other way round (64)."""
    return EvaluationError(
        refusal=Refusal(field="model", also=("provider",), reason="go together (the judge)"),
        exit_code=USAGE,
    )


def needs_a_judge(judged: list[str]) -> EvaluationError:
    """The refusal of judged metrics named without a judge (64): it asks for one."""
    verb = "needs" if len(judged) == 1 else "need"
    return EvaluationError(
        refusal=Refusal(
            field="model",
            also=("provider",),
            reason=f"{', '.join(judged)} {verb} a judge",
            asks=True,
        ),
        exit_code=USAGE,
    )


def parse_metric_names(metrics: str | list[str]) -> list[str] | None:
    """Return the requested names in order (duplicates dropped), or None for ``all``.

    Raises:
        EvaluationError: 64 for an empty list or an unknown name (naming it and the known ones).
    """
    items = metrics if isinstance(metrics, list) else metrics.split(",")
    names = list(dict.fromkeys(n.strip() for n in items if n.strip()))
    if not names:
        raise EvaluationError(
            refusal=Refusal(field="metrics", reason="names no metric"), exit_code=USAGE
        )
    if names == ["all"]:
        return None
    for name in names:
        try:
            get_metric(name)
        except UnknownMetricError as exc:
            refusal = Refusal(field="metrics", reason=str(exc), colon=True)
            raise EvaluationError(refusal=refusal, exit_code=USAGE) from None
    return names


def _check_credentials(plan: EvaluationPlan, environ: dict[str, str] | None) -> None:
    """Refuse (77) when a judge or probe call would lack its key; names variables, never values.

    ``environ`` None: the process environment and nearest ``.env``, read only when some planned
    metric calls a model (a cohort of deterministic metrics reads no ``.env`` per run).
    """
    if not any(m.kind in ("judged", "model") for m in plan.metrics):
        return
    if environ is None:
        from glossogen.environment import load_environment

        environ = load_environment()
    missing: list[str] = []
    if plan.judge is not None and any(m.kind == "judged" for m in plan.metrics):
        var = JUDGE_ENV_VARS[plan.judge.provider]
        if not environ.get(var):
            missing.append(f"{var} (judge provider {plan.judge.provider})")
    if any(m.kind == "model" for m in plan.metrics):
        for seat in plan.run.seats.values():
            try:
                provider = Provider(seat.provider)
            except ValueError:
                missing.append(f"provider {seat.provider!r} of agent {seat.agent_id} is unknown")
                continue
            for var in missing_env_vars(provider, environ):
                missing.append(f"{var} (probe of agent {seat.agent_id}, provider {seat.provider})")
    if missing:
        raise EvaluationError(
            "missing credentials: " + "; ".join(dict.fromkeys(missing)),
            int(exit_codes.CREDENTIALS),
        )


def plan_evaluation(
    run_dir: str | RunFolder,
    metrics: str | list[str] = "all",
    model: str | None = None,
    provider: str | None = None,
    judge_settings: dict[str, Any] | list[str] | None = None,
    judge_replicas: int = 1,
    probe_replicas: int = 1,
    allow_incomplete: bool = False,
    scenario: str | None = None,
    environ: dict[str, str] | None = None,
    plot: bool = False,
    log: RunLog | None = None,
    judge_cache: str | None = None,
) -> EvaluationPlan:
    """Check an evaluation request and load its run; spend and write nothing.

    ``--metrics all`` selects every metric that applies to the run; without a judge it leaves
    out the judged ones (listed in ``blank``). A metric named explicitly that does not apply is
    blank too; a judged metric named explicitly without ``--model``/``--provider`` is refused.

    Args:
        run_dir: The run folder.
        metrics: ``"all"``, comma-separated names, or a list of names.
        model: Judge model.
        provider: Judge provider (``anthropic``, ``huggingface``, ``openai``).
        judge_settings: pydantic-ai settings for the judge, as a dict or ``key=value`` items.
        judge_replicas: Judge calls per item (at least 1).
        probe_replicas: Probe calls per (agent, question) (at least 1).
        allow_incomplete: Score a run whose log has no ``simulation_ended``.
        scenario: The scenario named on the command line (default: the installed scenario
            whose ``<name>.jsonl`` the folder holds, else the folder's parent's name).
        environ: Environment to check credentials in (default: process env and nearest .env).
        plot: Also score the metrics ``report.html`` charts (:data:`PLOT_METRICS`) that apply.
        log: The run's log as read already; read from the folder when None. Only
            the event types the requested metrics read are parsed (:func:`reads_of`).
        judge_cache: A judge cache folder the judge asks first (hits cost $0; None: none).

    Raises:
        EvaluationError: 64 usage (unknown metric, judge half given, bad settings, replicas
            below 1), 65 refused (incomplete run, wrong scenario), 66 unreadable log or not a
            run log, 77 missing credentials.
    """
    check_replicas("judge_replicas", judge_replicas)
    check_replicas("probe_replicas", probe_replicas)
    names = parse_metric_names(metrics)
    judge = _judge_of(model, provider, judge_settings)
    if judge is not None and judge_cache is not None:
        from glossogen.rejudge._cache import JudgeCache  # the cache alone: rejudge imports us

        judge.answers = JudgeCache(judge_cache)
    requested = [get_metric(n) for n in (names if names is not None else metric_names())]
    if plot:
        requested += [get_metric(n) for n in PLOT_METRICS if get_metric(n) not in requested]
    if names is not None and judge is None:
        judged = [m.name for m in requested if m.needs_judge]
        if judged:
            raise needs_a_judge(judged)
    run = load_run(run_dir, scenario, log, reads_of(requested), usage_of(requested))
    if run.status is None and not allow_incomplete:
        raise EvaluationError(
            refusal=Refusal(
                field="allow_incomplete",
                reason=f"{run.run_id} has no simulation_ended (still playing, or killed): pass "
                "{name} to score what it logged",
                inline=True,
            )
        )
    plan = EvaluationPlan(
        run=run, metrics=[], judge=judge, judge_replicas=judge_replicas,
        probe_replicas=probe_replicas, previous=read_report(run.run_dir, run.scenario),
    )  # fmt: skip
    for m in requested:
        if not m.measures(run.scenario):
            if names is not None and m.name in names:  # named: blank, saying why
                only = ", ".join(m.scenarios or ())
                plan.blank.append((m.name, f"does not apply: a metric of {only} runs only"))
            continue  # not a metric of this scenario: no entry, no note
        if names is None and m.needs_judge and judge is None:
            plan.blank.append((m.name, "needs a judge (model, provider)"))
        elif not m.applies(run):
            if plot and names is not None and m.name not in names:
                continue  # a chart's metric the user did not ask for: no chart, no note
            reason = f"does not apply: run lacks {', '.join(m.missing_hooks(run))}"
            plan.blank.append((m.name, reason))
            plan.unfit[m.name] = reason
        else:
            plan.metrics.append(m)
            fresh = up_to_date(
                plan.previous, run.log_sha256, run.folder, m, judge, judge_replicas,
                probe_replicas,
            )  # fmt: skip
            if fresh:
                plan.fresh.append(m.name)
    _check_credentials(plan, environ)
    return plan


def _judge_of(
    model: str | None,
    provider: str | None,
    judge_settings: dict[str, Any] | list[str] | None,
) -> Judge | None:
    """Return the judge a request names, its settings checked (None: no judge named).

    Raises:
        EvaluationError: (64) only one of model and provider, an unknown provider, or
            settings that do not parse.
    """
    if (model is None) != (provider is None):
        raise judge_half_given()
    settings: dict[str, Any] = {}
    if isinstance(judge_settings, list):
        settings = parse_judge_settings(judge_settings)
    elif judge_settings:
        settings = parse_judge_settings([f"{k}={_json(v)}" for k, v in judge_settings.items()])
    if model is None or provider is None:
        return None
    check_judge_provider(provider)
    return Judge(model, provider, settings)


def reads_of(metrics: list[Metric]) -> frozenset[str] | None:
    """Event types scoring ``metrics`` parses (:attr:`Metric.event_types`); None: every one."""
    reads: set[str] = set()
    for m in metrics:
        types = m.event_types
        if types is None:
            return None
        reads |= types
    return frozenset(reads)


def usage_of(metrics: list[Metric]) -> frozenset[str]:
    """Priced event types scoring ``metrics`` reads for their usage alone (:attr:`Metric.usage`)."""
    return frozenset(t for m in metrics for t in m.usage)


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


async def score_metric(plan: EvaluationPlan, metric: Metric) -> Outcome:
    """Compute ``metric`` on the plan's run.

    Returns:
        The outcome: an ``ok`` entry, or blank with a reason (:class:`NotApplicable`).

    Raises:
        MetricFailed: the metric could not produce a score (every judge call failed, ...);
            any other exception is a fault of the metric. Callers turn both into ``failed``
            entries with :func:`failed_outcome`.
    """
    try:
        scored = await metric.compute(plan.context())
    except NotApplicable as exc:
        return Outcome(name=metric.name, blank=str(exc))
    judge = plan.judge.info if plan.judge is not None and metric.kind == "judged" else None
    return Outcome(
        name=metric.name,
        result=metric.result(scored, judge),
        sidecar_rows=scored.sidecar_rows,
    )


def failed_outcome(plan: EvaluationPlan, metric: Metric, exc: BaseException) -> Outcome:
    """Return the ``failed`` entry for ``metric`` after ``exc`` (one line, its spend kept)."""
    judge = plan.judge.info if plan.judge is not None and metric.kind == "judged" else None
    if isinstance(exc, MetricFailed):
        return Outcome(metric.name, metric.failure(str(exc), judge, exc.cost_usd))
    return Outcome(metric.name, metric.failure(f"{type(exc).__name__}: {exc}", judge, None))


async def _score_safely(plan: EvaluationPlan, metric: Metric) -> Outcome:
    try:
        return await score_metric(plan, metric)
    except Exception as exc:  # noqa: BLE001 (one metric's fault must not lose the others)
        return failed_outcome(plan, metric, exc)


async def score_all(plan: EvaluationPlan, reuse_all: bool = False) -> list[Outcome]:
    """Score the planned metrics not reused (:meth:`EvaluationPlan.to_score`).

    Judge and probe calls of different metrics overlap (those metrics run concurrently); the
    deterministic ones, which call nothing, are scored in turn without giving the event loop
    away, so a cohort's batches never interleave their runs' deterministic work (each run's
    pause of the cyclic garbage collector, ``_cohort.evaluate_batch``, then holds: interleaved,
    one run's end resumed it while another's events were live, and every collection walked
    them). A metric that fails becomes its ``failed`` outcome and never stops the others.
    Outcomes come back in plan order.
    """
    metrics = plan.to_score(reuse_all)
    calling = [i for i, m in enumerate(metrics) if m.kind != "deterministic"]
    outcomes = [await _score_safely(plan, m) if m.kind == "deterministic" else None
                for m in metrics]  # fmt: skip
    if calling:
        called = await asyncio.gather(*(_score_safely(plan, metrics[i]) for i in calling))
        for i, outcome in zip(calling, called, strict=True):
            outcomes[i] = outcome
    return [o for o in outcomes if o is not None]


def write_outcomes(
    plan: EvaluationPlan, outcomes: list[Outcome], now: datetime | None = None
) -> Report:
    """Write the sidecars, then merge and write ``<scenario>_report.json`` atomically.

    Returns:
        The report as written.

    Raises:
        StorageError: the run folder cannot be written.
    """
    for outcome in outcomes:
        metric = get_metric(outcome.name)
        if outcome.sidecar_rows is not None and metric.sidecar:
            write_sidecar(plan.run.run_dir, metric.sidecar, outcome.sidecar_rows)
    blank = [name for name, _ in plan.blank] + [o.name for o in outcomes if o.blank is not None]
    results = [o.result for o in outcomes if o.result is not None]
    noted = {
        name: LeftBlank(version=get_metric(name).version, reason=reason)
        for name, reason in [
            *plan.unfit.items(),
            *((o.name, o.blank) for o in outcomes if o.blank is not None),
        ]
    }
    report = merge_report(
        read_report(plan.run.run_dir, plan.run.scenario), plan.run, results, blank, now, noted
    )
    write_report(plan.run.run_dir, report)
    return report


@dataclass
class Evaluation:
    """What an evaluation did: the report as written, and the metrics left blank, with why.

    Attributes:
        report: The merged report.
        scored: Names of the metrics scored now (``ok`` or ``failed``), in request order.
        blank: Metric name -> reason it has no entry (did not apply, nothing to measure).
        dropped: Entries of the previous report that were dropped because the log changed
            since they were scored (sorted; the ones scored again now are not listed).
        dropped_log_sha256: The SHA-256 of the log those entries described, when any.
    """

    report: Report
    scored: list[str]
    blank: dict[str, str]
    dropped: list[str] = field(default_factory=list)
    dropped_log_sha256: str | None = None
    reused: list[str] = field(default_factory=list)
    """Planned metrics whose up-to-date report entry was kept rather than computed again."""
    judge_cache_hits: int | None = None
    """Judge answers served by the judge cache ($0, nothing sent); None without a cache."""
    judge_cache_misses: int | None = None
    """Judge questions the cache lacked (asked and priced); None without a cache."""
    judge_cache_kept: int | None = None
    """Answers of those written to the cache (a failed or unusable one is not); None without."""

    @property
    def failed(self) -> dict[str, str]:
        """Metric name -> one-line error, for the metrics scored now that failed."""
        return {
            n: self.report.metrics[n].error or "failed"
            for n in self.scored
            if self.report.metrics[n].status == "failed"
        }


def summarise(
    plan: EvaluationPlan, outcomes: list[Outcome], report: Report, reuse_all: bool = False
) -> Evaluation:
    """Return the :class:`Evaluation` of ``outcomes`` written as ``report``."""
    blank = dict(plan.blank)
    reused = plan.reused(reuse_all)
    blank.update({n: report.left_blank[n].reason for n in reused if n in report.left_blank})
    blank.update({o.name: o.blank for o in outcomes if o.blank is not None})
    dropped = [n for n in stale_entries(plan.previous, plan.run) if n not in report.metrics]
    return Evaluation(
        report=report,
        scored=[o.name for o in outcomes if o.result is not None],
        blank=blank,
        dropped=dropped,
        dropped_log_sha256=plan.previous.log_sha256 if dropped and plan.previous else None,
        reused=[n for n in reused if n in report.metrics],
    )


def headline_rows(report: Report, names: list[str]) -> list[dict[str, Any]]:
    """Return one row per metric scored now: name, score, unit, rounds, status, summary."""
    rows = []
    for name in names:
        entry = report.metrics.get(name)
        if entry is None:
            continue
        rows.append(
            {
                "metric": name,
                "score": entry.score,
                "unit": entry.unit,
                "rounds": entry.rounds,
                "status": entry.status,
                "summary": entry.summary,
            }
        )
    return rows
