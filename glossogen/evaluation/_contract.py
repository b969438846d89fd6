"""The metric contract: what a metric declares, what it is given, and what it returns.

A metric is an async function ``compute(ctx) -> Scored`` plus a :class:`Metric` record naming it,
its unit, its kind (``deterministic``, ``judged`` or ``model``), its version and the run hooks it
needs. A metric whose hooks a run lacks does not apply to it: it writes nothing (blank), never 0.
The same holds when ``compute`` raises :class:`NotApplicable` (e.g. no message to measure).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from glossogen.evaluation._judge import Judge
    from glossogen.evaluation._run import LoadedRun

MetricKind = Literal["deterministic", "judged", "model"]
"""``deterministic``: computed from the log alone; ``judged``: an LLM judge reads the messages;
``model``: the agents' own recorded models are asked (the protocol probe)."""

Hook = Literal["channels", "verdicts", "budget", "agent_history"]
"""What a run offers a metric. ``channels``: the scenario's primary channels (every scenario);
``verdicts``: round verdicts in the log; ``budget``: a per-round character budget on metered
channels (known from the log or from knobs that validate); ``agent_history``: the agents'
pydantic-ai histories (``agent_history_appended``; GlossoGen 0.5 logs carry none)."""

HOOK_EVENTS: dict[str, tuple[str, ...]] = {"agent_history": ("agent_history_appended",)}
"""Event types a hook is read from, beyond what a loaded run describes."""


class RoundObservation(BaseModel):
    """One round's value of a metric (``team_id`` null for a metric not per team)."""

    round_number: int
    value: float
    team_id: str | None = None
    note: str | None = None


class AgentObservation(BaseModel):
    """One agent's value of a metric."""

    agent_id: str
    value: float
    note: str | None = None


class JudgeInfo(BaseModel):
    """The model that scored a judged or probe metric, and the settings it was sent."""

    model: str
    provider: str
    settings: dict[str, Any] = {}


class MetricResult(BaseModel):
    """One metric's entry in ``<scenario>_report.json`` (the report contract, version 1)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: MetricKind
    version: int
    unit: str
    status: Literal["ok", "failed"]
    score: float | None
    summary: str
    rounds: int
    per_round: list[RoundObservation] = []
    per_agent: list[AgentObservation] = []
    replicas: int | None = None
    agreement: float | None = None
    judge: JudgeInfo | None = None
    cost_usd: float | None = 0.0
    sidecar: str | None = None
    error: str | None = None


@dataclass
class Scored:
    """What ``compute`` returns; the registry turns it into a :class:`MetricResult`.

    Attributes:
        score: The headline number.
        summary: One line a reader understands without the unit.
        rounds: Rounds behind the score (0: a run-level score).
        per_round: Observations per round measured.
        per_agent: Observations per agent.
        replicas: Judge or probe calls per item (judged and model metrics).
        agreement: Agreement of those replicas, in [0, 1]; None with one replica.
        cost_usd: Spend of the metric's model calls; None when some call was not costed.
        sidecar_rows: Per-message (or per-answer) rows for the metric's JSONL sidecar.
    """

    score: float
    summary: str
    rounds: int
    per_round: list[RoundObservation] = field(default_factory=list)
    per_agent: list[AgentObservation] = field(default_factory=list)
    replicas: int | None = None
    agreement: float | None = None
    cost_usd: float | None = 0.0
    sidecar_rows: list[dict[str, Any]] | None = None


class NotApplicable(Exception):  # noqa: N818 (a verdict, not an error)
    """Raised by ``compute`` when the run has nothing this metric can measure (left blank)."""


class MetricFailed(Exception):  # noqa: N818 (named for the report status it produces)
    """Raised by ``compute`` when it could not produce a score (e.g. every judge call failed).

    ``cost_usd`` is what the failed attempt still spent (None when not costed).
    """

    def __init__(self, message: str, cost_usd: float | None = 0.0) -> None:
        """Keep the one-line reason and the spend."""
        super().__init__(message)
        self.cost_usd = cost_usd


@dataclass
class MetricContext:
    """What a metric's ``compute`` is given.

    Attributes:
        run: The loaded run (events read once, scenario, primary channels).
        judge: The LLM judge for judged metrics (None when no ``--model`` was given).
        judge_replicas: Judge calls per item (``--judge-replicas``).
        probe_replicas: Calls per (agent, question) of the probe (``--probe-replicas``).
    """

    run: LoadedRun
    judge: Judge | None = None
    judge_replicas: int = 1
    probe_replicas: int = 1


Compute = Callable[[MetricContext], Awaitable[Scored]]


@dataclass(frozen=True)
class Metric:
    """A registered metric.

    Attributes:
        name: Registry name, the report key and the export's ``metric.<name>`` column.
        unit: What ``score`` counts (``characters per round``, ``bits per character``).
        kind: ``deterministic``, ``judged`` or ``model``.
        version: Bumped whenever the definition changes (part of the cache key).
        needs: The run hooks the metric reads (:data:`Hook`).
        compute: The async function computing it.
        sidecar: File name of its JSONL sidecar in the run folder, if it writes one.
        description: The docstring of ``compute`` (formula and source).
        scenarios: The only scenarios whose runs it measures (None: every scenario). On any
            other run ``--metrics all`` leaves it out altogether (no entry, no note, no
            export column), and naming it leaves it blank, saying which scenarios it is for.
        reads: The ``event_type`` of every event the metric reads from ``run.events`` (or
            through ``run.view``) beyond what a loaded run describes (seats, rounds, verdicts,
            messages, the ending); None: every event. The log's other lines are not parsed.
        usage: The ``event_type`` of the priced events the metric reads only the usage of
            (tokens and cost), through the run's spend (``run.view.spend``,
            ``spend_by_round``), never from ``run.events``: a model call's line is then not
            built into an event (:mod:`glossogen.eventlog._usage`) unless another metric
            scored with it reads the type whole.
    """

    name: str
    unit: str
    kind: MetricKind
    version: int
    needs: tuple[Hook, ...]
    compute: Compute
    sidecar: str | None = None
    description: str = ""
    scenarios: tuple[str, ...] | None = None

    def measures(self, scenario: str) -> bool:
        """Return True when the metric is meant for runs of ``scenario``."""
        return self.scenarios is None or scenario in self.scenarios

    reads: tuple[str, ...] | None = None
    usage: tuple[str, ...] = ()

    @property
    def event_types(self) -> frozenset[str] | None:
        """Event types scoring this metric parses (its reads and its hooks'); None: all."""
        if self.reads is None:
            return None
        return frozenset(self.reads).union(*(HOOK_EVENTS.get(h, ()) for h in self.needs))

    def applies(self, run: LoadedRun) -> bool:
        """Return True when ``run`` offers every hook this metric needs."""
        return set(self.needs) <= run.hooks

    def missing_hooks(self, run: LoadedRun) -> list[str]:
        """Return the hooks this metric needs that ``run`` lacks, in declared order."""
        return [h for h in self.needs if h not in run.hooks]

    @property
    def needs_judge(self) -> bool:
        """True for judged metrics (they need ``--model`` and ``--provider``)."""
        return self.kind == "judged"

    def result(self, scored: Scored, judge: JudgeInfo | None) -> MetricResult:
        """Return the report entry of a successful computation."""
        return MetricResult(
            name=self.name,
            kind=self.kind,
            version=self.version,
            unit=self.unit,
            status="ok",
            score=scored.score,
            summary=scored.summary,
            rounds=scored.rounds,
            per_round=scored.per_round,
            per_agent=scored.per_agent,
            replicas=scored.replicas,
            agreement=scored.agreement,
            judge=judge,
            cost_usd=scored.cost_usd,
            sidecar=self.sidecar if scored.sidecar_rows is not None else None,
        )

    def failure(
        self, error: str, judge: JudgeInfo | None, cost_usd: float | None = 0.0
    ) -> MetricResult:
        """Return the report entry of a failed computation (``score`` null, one-line error)."""
        line = " ".join(error.split())[:300] or "failed"
        return MetricResult(
            name=self.name,
            kind=self.kind,
            version=self.version,
            unit=self.unit,
            status="failed",
            score=None,
            summary=f"failed: {line}",
            rounds=0,
            judge=judge,
            cost_usd=cost_usd,
            error=line,
        )
