"""Typed events of the run's event log: one envelope, one class per event type, one union.

Every line of a run's ``<scenario>.jsonl`` is one of these events serialised as a JSON object.
The envelope fields (``event_id``, ``event_type``, ``schema_version``, ``timestamp``,
``round_number``, ``phase``) are common to every event; each subclass adds its own payload and
fixes ``event_type`` with a ``Literal`` tag, so one discriminated union reads any line.

Scenarios add their own event classes with :func:`register_event`; the union used by
:func:`event_adapter` covers the core events and every registered one. The core classes are
``@final``: no other class carries their tag, so readers dispatch on the class
(``isinstance(e, SimulationStarted)``), never on the ``event_type`` string.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Annotated, Any, Literal, Union, final

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

SCHEMA_VERSION = 2
"""Schema version written into every event's envelope by this release.

2: ``simulation_started`` records every run limit (``run_timeout_seconds`` added,
``max_agent_turns`` always set) and ``run_resumed`` the limits a resume changed
(``limit_changes``). Version 1 lines are upcast by :meth:`SimulationStarted._upcast_v1`.
"""

DEFAULT_MAX_AGENT_TURNS = 200
"""The ``max_agent_turns`` every release before schema 2 played under when none was recorded."""

Phase = Literal["setup", "main", "postmortem"]

EndStatus = Literal["completed", "error", "interrupted", "incomplete"]
"""The statuses a ``simulation_ended`` records."""


def new_id() -> str:
    """Return a fresh random identifier (UUID4, 36 characters)."""
    return str(uuid.uuid4())


def utc_now() -> datetime:
    """Return the current time as a timezone-aware UTC datetime."""
    return datetime.now(UTC)


class Event(BaseModel):
    """Envelope shared by every event.

    Attributes:
        event_id: Unique id of this event (UUID4 string).
        event_type: The tag naming the event class.
        schema_version: Version of the event schema that wrote the line.
        timestamp: When the event happened, UTC (game clock's wall time).
        round_number: The round the event belongs to; 0 before the first round.
        phase: ``setup`` (before round 1), ``main`` or ``postmortem``.
    """

    model_config = ConfigDict(extra="allow", frozen=False)

    event_id: str = Field(default_factory=new_id)
    event_type: str
    schema_version: int = SCHEMA_VERSION
    timestamp: datetime = Field(default_factory=utc_now)
    round_number: int = 0
    phase: Phase = "main"


class Verdict(BaseModel):
    """The outcome of one round for one team."""

    team_id: str
    success: bool
    reason: str


TOKEN_FIELDS = (
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_1h_tokens",
    "output_tokens",
)
"""The token counts a priced call logs. Input counts every prompt token, cache reads and
writes included; cache writes count the one-hour ones."""

CACHE_TOKEN_FIELDS = ("cache_read_tokens", "cache_write_tokens", "cache_write_1h_tokens")
"""The cache counts among :data:`TOKEN_FIELDS`."""


@dataclass(kw_only=True)
class Tokens:
    """Tokens of a set of model calls (:data:`TOKEN_FIELDS`)."""

    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    output_tokens: int = 0

    def add_tokens(self, counted: Any) -> None:
        """Add the token counts of ``counted`` (a priced event, or other :class:`Tokens`).

        Each of :data:`TOKEN_FIELDS` by name (a loop of ``getattr``/``setattr`` cost a
        cohort's spend fold a tenth of its time).
        """
        self.input_tokens += counted.input_tokens
        self.cache_read_tokens += counted.cache_read_tokens
        self.cache_write_tokens += counted.cache_write_tokens
        self.cache_write_1h_tokens += counted.cache_write_1h_tokens
        self.output_tokens += counted.output_tokens

    @property
    def cached_share(self) -> float | None:
        """Share of input tokens served from the provider's cache (reads / input); None: none."""
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else None

    def summary(self) -> str:
        """One line of the counts, as the closing line shows them (``tokens`` + :meth:`counts`)."""
        return f"tokens {self.counts()}"

    def counts(self) -> str:
        """The counts alone, as the run page's ``tokens`` row shows them."""
        share = self.cached_share
        cached = "" if share is None else f", {share:.1%} of input from cache"
        return (
            f"{self.input_tokens} in ({self.cache_read_tokens} cache read, "
            f"{self.cache_write_tokens} cache write, {self.cache_write_1h_tokens} of it 1 h), "
            f"{self.output_tokens} out{cached}"
        )


class AgentCost(BaseModel):
    """Spend of one agent over a run, in USD; ``cost_usd`` is null when any call was not costed.

    ``input_tokens`` counts every prompt token, those the cache served (``cache_read_tokens``)
    and wrote (``cache_write_tokens``, of which ``cache_write_1h_tokens`` for one hour) included.
    """

    agent_id: str
    cost_usd: float | None
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0


@final
class SimulationStarted(Event):
    """The run began: its id, scenario, resolved knobs, default model and provider, lineage."""

    event_type: Literal["simulation_started"] = "simulation_started"
    phase: Phase = "setup"
    run_id: str
    scenario_name: str
    scenario_description: str = ""
    scenario_config: dict[str, Any]
    model: str
    provider: str
    channel_ids: list[str] = []
    versions: dict[str, str] = {}
    lineage: dict[str, Any] | None = None
    max_agent_turns: int = DEFAULT_MAX_AGENT_TURNS
    run_timeout_seconds: float | None = None
    spend_cap_usd: float | None = None
    """USD the run's own model calls may spend (``RunLimits.spend_cap_usd``); None: no cap."""
    group_slug: str | None = None
    clock: Literal["virtual", "real"] | None = None
    """The clock the process that logged it played on: ``virtual`` (game time moves only by
    the run's own waits: every seat and the judge scripted, or the test setting) or ``real``
    (every run of a hosted or local model). None on a line written before it was logged, and
    on a derived run's own start (its processes log theirs on ``run_resumed``)."""

    @model_validator(mode="before")
    @classmethod
    def _upcast_v1(cls, data: Any) -> Any:
        """Upcast a schema 1 (or 0.5.x) line.

        A missing or null ``max_agent_turns`` is the 200 every such run played under;
        ``run_timeout_seconds`` was not recorded there (None).
        """
        if isinstance(data, dict) and data.get("max_agent_turns") is None:
            data = {**data, "max_agent_turns": DEFAULT_MAX_AGENT_TURNS}
        return data


@final
class AgentRegistered(Event):
    """One agent joined the run with its role, model, provider, settings, tools and channels."""

    event_type: Literal["agent_registered"] = "agent_registered"
    phase: Phase = "setup"
    agent_id: str
    role: str
    display_name: str
    team_id: str
    model: str
    provider: str
    model_settings: dict[str, Any] = {}
    tools: list[str] = []
    channels: list[str] = []


@final
class RoundStarted(Event):
    """A round (``phase=main``) or its postmortem opened."""

    event_type: Literal["round_started"] = "round_started"


@final
class InjectionDelivered(Event):
    """A private briefing was given to one agent (the text it saw, plus structured data)."""

    event_type: Literal["injection_delivered"] = "injection_delivered"
    agent_id: str
    kind: str = "briefing"
    text: str
    data: dict[str, Any] = {}


@final
class WorldEventDelivered(Event):
    """Something the scenario told one agent mid-round (a new stage, a budget warning)."""

    event_type: Literal["world_event_delivered"] = "world_event_delivered"
    agent_id: str
    kind: str
    text: str
    data: dict[str, Any] = {}


@final
class MessageSent(Event):
    """A message went out on a channel.

    ``text`` is what the sender composed (and what the budget was charged for); ``delivered_text``
    is what recipients received after channel noise. ``chars`` counts ``text`` in characters;
    ``charged_chars`` is what the round budget was charged (0 on free channels).
    ``message_id`` is the log's own id; agents are shown ``short_id`` instead.
    """

    event_type: Literal["message_sent"] = "message_sent"
    message_id: str = Field(default_factory=new_id)
    short_id: str | None = None
    """The id the run's agents see and name the message by: ``m<n>``, the run's n-th message
    sent (a resume or fork continues the count). None in logs written before short ids."""
    channel_id: str
    sender_id: str
    text: str
    delivered_text: str
    chars: int
    charged_chars: int = 0
    budget_used_chars: int | None = None
    budget_chars: int | None = None
    charged_team_id: str | None = None
    """The team whose round budget was charged (the sender's), or None when nothing was."""


@final
class BudgetWarning(Event):
    """A team's round character budget passed a threshold (once per team and round, in order)."""

    event_type: Literal["budget_warning"] = "budget_warning"
    channel_id: str
    threshold: float
    used_chars: int
    budget_chars: int
    team_id: str | None = None
    """The team whose budget passed the mark (None in logs written before team budgets)."""


@final
class LlmResponseReceived(Event):
    """One model response of one agent cycle: its text, thinking, tool calls, usage and cost."""

    event_type: Literal["llm_response_received"] = "llm_response_received"
    agent_id: str
    model: str
    provider: str
    cycle: int
    text: str = ""
    thinking: str = ""
    tool_calls: list[dict[str, Any]] = []
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    """Of ``cache_write_tokens``, those written with a one-hour lifetime (priced apart)."""
    cost_usd: float | None = None
    request_id: str | None = None
    """The request this answers (its ``model_request_sent``); None for an unbilled seat and on
    lines written before requests were logged as sent."""
    request_sha256: str | None = None
    """An unbilled seat's request fingerprint, taken as it was sent (a billed request's is on
    its ``model_request_sent``); None for a billed seat and on lines written before it was
    recorded (:mod:`glossogen.engine._fingerprint`)."""


@final
class ToolCallInvoked(Event):
    """An agent called a tool (name, arguments, the model's tool-call id)."""

    event_type: Literal["tool_call_invoked"] = "tool_call_invoked"
    agent_id: str
    tool_name: str
    tool_call_id: str
    args: dict[str, Any] = {}


@final
class ToolResultReceived(Event):
    """A tool returned to the agent that called it."""

    event_type: Literal["tool_result_received"] = "tool_result_received"
    agent_id: str
    tool_name: str
    tool_call_id: str
    result: Any = None
    interrupted: bool = False
    """True when the phase ended before the tool returned (the agent is told so)."""
    refused: str | None = None
    """Why the engine answered the call without running the tool (a scenario tool called in a
    phase where it has no effect); the model's mistake of timing, not a model error."""


@final
class AgentRunCycleFailed(Event):
    """An agent cycle failed (provider error, bad tool call) after retries; logged loudly."""

    event_type: Literal["agent_run_cycle_failed"] = "agent_run_cycle_failed"
    agent_id: str
    error_kind: str
    error: str
    attempts: int = 1
    retryable: bool = True
    retry_after_seconds: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    """USD of the requests this failed attempt had answered that no other event prices (the
    judge's answers that failed validation); null when the model is not in the catalogue."""
    request_ids: list[str] = []
    """The sent requests (``model_request_sent``) this failure settles: the failed one, and a
    judge attempt's answered ones."""


@final
class ModelRequestAbandoned(Event):
    """A model request the engine stopped waiting for (its phase ended), and what it cost.

    The request is finished in the background: ``answered`` with its usage priced in
    ``cost_usd`` (USD), or failed (``error``, not billed, 0), or still unanswered when the run
    ended, or in flight when the process that sent it was killed (logged by the resume;
    ``cost_usd`` null: its spend is unknown, so the run's total is null).
    """

    event_type: Literal["model_request_abandoned"] = "model_request_abandoned"
    agent_id: str
    model: str
    provider: str
    sent_in_round: int
    answered: bool
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    """Of ``cache_write_tokens``, those written with a one-hour lifetime (priced apart)."""
    cost_usd: float | None = None
    error: str | None = None
    request_id: str | None = None
    """The request this settles (its ``model_request_sent``); None on older lines."""


@final
class ModelRequestSent(Event):
    """A billed model request is about to go to its provider (logged before any byte is sent).

    The write-ahead half of the request ledger: exactly one later event names ``request_id``
    and settles it (``llm_response_received``, ``agent_run_cycle_failed``, ``judge_called``
    or ``model_request_abandoned``). One no event settles was in flight when its process was
    killed: the resume logs it as abandoned, cost unknown. ``round_number`` is the round it
    was sent in.
    """

    event_type: Literal["model_request_sent"] = "model_request_sent"
    request_id: str
    agent_id: str
    """The seat that sent it, or ``judge``."""
    model: str
    provider: str
    call: int
    """The request's index: the seat's cycle (``llm_response_received.cycle`` of its answer),
    or the judge's count of requests in this process."""
    reserved_usd: float | None = None
    """The worst case the run's spend cap reserved for it (USD); None when the run has no cap.
    A resume counts it against the cap when the request was killed unsettled."""
    request_sha256: str | None = None
    """The request's fingerprint: SHA-256 of the canonical form of its messages and tools
    (:mod:`glossogen.engine._fingerprint`); None on lines written before it was recorded."""


@final
class ProbeRequestSettled(Event):
    """How one ``protocol_probe`` request ended (``glossogen evaluate``'s probe ledger).

    The probe's requests are accounted as a run's are, in the run folder's
    ``protocol_probe_requests.jsonl``: each logged ``model_request_sent`` (``agent_id`` the
    seat asked, ``call`` the job's index) before it is sent, then settled by exactly one of
    these: ``answered`` (its usage priced in ``cost_usd``; null when the model is not priced),
    ``failed`` (``error``; not billed, 0), or ``abandoned`` (cancelled unanswered, or in flight
    when the evaluate that sent it was killed, logged by the next probe; ``cost_usd`` null:
    its cost is unknown).
    """

    event_type: Literal["probe_request_settled"] = "probe_request_settled"
    request_id: str
    agent_id: str
    model: str
    provider: str
    outcome: Literal["answered", "failed", "abandoned"]
    cost_usd: float | None = None
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    """Of ``cache_write_tokens``, the one-hour writes (the answer's usage, as priced)."""


@final
class ModelRequestRefused(Event):
    """A model request the run's spend cap refused before it was sent: nothing was billed.

    Its worst case (``input_tokens_bound`` at the input rate plus ``max_tokens`` at the output
    rate, USD; null when the model is not priced) on top of what was ``spent_usd`` and
    ``reserved_usd`` for requests in flight would have passed ``cap_usd``. The caller (a seat,
    or ``judge``) sends nothing more, nor does any other: the run ends ``incomplete``.
    """

    event_type: Literal["model_request_refused"] = "model_request_refused"
    agent_id: str
    model: str
    provider: str
    input_tokens_bound: int
    max_tokens: int
    worst_case_usd: float | None
    spent_usd: float
    reserved_usd: float
    cap_usd: float


@final
class AgentTurnLimitReached(Event):
    """An agent used up ``max_agent_turns`` model requests and takes no further part in the run."""

    event_type: Literal["agent_turn_limit_reached"] = "agent_turn_limit_reached"
    agent_id: str
    max_agent_turns: int


@final
class AgentSwappedMidRun(Event):
    """A scheduled swap moved one seat to another model at a round boundary."""

    event_type: Literal["agent_swapped_mid_run"] = "agent_swapped_mid_run"
    agent_id: str
    old_model: str
    old_provider: str
    model: str
    provider: str


@final
class ScheduledEventFired(Event):
    """A ``scheduled_events`` entry fired at a round boundary (in declared order)."""

    event_type: Literal["scheduled_event_fired"] = "scheduled_event_fired"
    kind: str
    detail: dict[str, Any] = {}


@final
class JudgeCalled(Event):
    """The in-run judge scored one action: model, provider, decision, usage and cost (USD)."""

    event_type: Literal["judge_called"] = "judge_called"
    model: str
    provider: str
    instructions: str = ""
    question: str
    success: bool
    reason: str
    detail: dict[str, Any] = {}
    """What an item ruling found (``matched`` item numbers, ``false_positives``); else empty."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    """Of ``cache_write_tokens``, those written with a one-hour lifetime (priced apart)."""
    cost_usd: float | None = None
    request_ids: list[str] = []
    """The sent requests (``model_request_sent``) this ruling settles."""
    cached: bool = False
    """Answered from the judge cache (``--judge-cache``): no request sent, priced $0."""
    cache_key: str | None = None
    """A cached ruling's judge cache key (the SHA-256 of the judge model, its settings, system
    prompt and question: what would have been sent); a replay checks it as a request's
    fingerprint. None on a ruling asked of the judge, and in logs written before it was kept."""


@final
class RoundEnded(Event):
    """A phase of a round closed.

    ``trigger``: ``settled`` (the scenario says so), ``all_idle`` (every agent idle past the
    quiet floor), ``timeout`` (phase time limit from phase start), ``turn_limit`` (every agent
    used ``max_agent_turns``) or ``agents_failed`` (every agent out after repeated failures).
    """

    event_type: Literal["round_ended"] = "round_ended"
    trigger: Literal["settled", "all_idle", "timeout", "turn_limit", "agents_failed"]
    elapsed_seconds: float | None


@final
class RoundResultRecorded(Event):
    """The verdict of one round for one team, recorded before any postmortem."""

    event_type: Literal["round_result_recorded"] = "round_result_recorded"
    team_id: str
    success: bool
    reason: str
    void: bool = False
    """True when the round could not be played (every agent failed or hit its turn limit):
    not a team's loss, and left out of win rates."""


@final
class PostmortemStarted(Event):
    """The postmortem of a round opened on the free channel."""

    event_type: Literal["postmortem_started"] = "postmortem_started"
    phase: Phase = "postmortem"
    channel_id: str


@final
class PostmortemEnded(Event):
    """The postmortem of a round closed; ``trigger`` as for ``round_ended``."""

    event_type: Literal["postmortem_ended"] = "postmortem_ended"
    phase: Phase = "postmortem"
    trigger: Literal["settled", "all_idle", "timeout", "turn_limit", "agents_failed"]
    elapsed_seconds: float | None


@final
class AgentHistoryAppended(Event):
    """Messages an agent's pydantic-ai history gained in the phase that just ended.

    ``messages`` is pydantic-ai's ``ModelMessagesTypeAdapter`` JSON form. Concatenated in log
    order they are the agent's exact history, which resume, fork and swap rebuild from.
    """

    event_type: Literal["agent_history_appended"] = "agent_history_appended"
    agent_id: str
    messages: list[dict[str, Any]]
    from_index: int | None = None
    """Where ``messages`` start in the history: they replace everything from there. pydantic-ai
    merges a new prompt into a history's trailing request, so the last message already logged
    can change; it is then logged again. None means "append"."""


@final
class RoundCompleted(Event):
    """Round ``round_number`` is over, postmortem included: a boundary a run can resume from."""

    event_type: Literal["round_completed"] = "round_completed"
    process_seconds: float | None = None
    """Wall-clock seconds the process playing the run had played it when the round completed
    (a killed process's share of the run's duration); None on lines before schema 2."""


@final
class RunResumed(Event):
    """The run continues in this process after the last completed round.

    ``reopened_round`` is the round that was cut off and is played again from its start (its
    earlier events, after the last ``round_completed``, are superseded); with
    ``postmortem_only`` the cut-off round's verdict stands and only its postmortem is played.
    """

    event_type: Literal["run_resumed"] = "run_resumed"
    phase: Phase = "setup"
    after_round: int
    reopened_round: int | None
    postmortem_only: bool = False
    config_changes: dict[str, Any] = {}
    limit_changes: dict[str, Any] = {}
    """``{"max_agent_turns" | "run_timeout_seconds" | "model" | "provider" | "group_slug":
    {"recorded": old, "now": new}}`` for every limit, default model or group this resume
    changed."""
    clock: Literal["virtual", "real"] | None = None
    """The clock this process played on (as ``simulation_started.clock``); None on a line
    written before it was logged."""


@final
class SimulationEnded(Event):
    """The run ended: status, message count, total and per-agent cost (USD), duration (seconds).

    ``total_cost_usd`` is agents plus the in-run judge, this run's own calls (a derived run's
    copied rounds are ``inherited_cost_usd``); null when some call was not costed.
    This release always writes every count; they are null only on a line upcast from a
    GlossoGen 0.5.x log that did not carry them (``status_detail`` keeps that log's reason).
    """

    event_type: Literal["simulation_ended"] = "simulation_ended"
    status: EndStatus
    rounds_played: int | None
    rounds_won: int | None
    total_messages: int | None
    total_chars: int | None
    total_cost_usd: float | None
    judge_cost_usd: float | None = 0.0
    agent_costs: list[AgentCost] = []
    judge_tokens: Tokens | None = None
    """Tokens of the in-run judge's calls (null on a line written before it was recorded)."""
    duration_seconds: float | None
    error: str | None = None
    status_detail: str | None = None
    process_seconds: float | None = None
    """Seconds this process played (``duration_seconds`` is every process's, summed; on a line
    without ``process_seconds``, written before schema 2, it was this process's alone)."""
    inherited_cost_usd: float | None = 0.0
    """Spend (USD) of the rounds a derived run copied from its source: paid by the source, not
    counted in ``total_cost_usd`` (null when some copied call was not costed)."""
    model_errors: dict[str, int] = {}
    """This run's ``agent_run_cycle_failed`` events by ``error_kind`` (own rounds only)."""
    stopped_after_events: int | None = None
    """For a process a stop cut off inside a phase (``interrupted``): how many events the log
    held (from its first line) when the stop cut the seats off; what follows, up to this line,
    the stop logged (the seats' closed tool calls, the requests left open). What a replay cuts
    at (``glossogen replay``). Null otherwise, and on a line written before it was recorded."""
    cost_note: str | None = None
    """Why ``total_cost_usd`` is null, when it is."""
    priced_cost_usd: float | None = None
    """When ``total_cost_usd`` is null: this run's calls whose cost is known, summed (USD), the
    total's lower bound, so ``glossogen verify`` can still hold every priced event to it. Null
    when the total is known (it is that sum), and on a line written before it was recorded."""


CORE_EVENTS: tuple[type[Event], ...] = (
    SimulationStarted,
    AgentRegistered,
    RoundStarted,
    InjectionDelivered,
    WorldEventDelivered,
    MessageSent,
    BudgetWarning,
    LlmResponseReceived,
    ToolCallInvoked,
    ToolResultReceived,
    AgentRunCycleFailed,
    ModelRequestAbandoned,
    ModelRequestSent,
    ModelRequestRefused,
    ProbeRequestSettled,
    AgentTurnLimitReached,
    AgentSwappedMidRun,
    ScheduledEventFired,
    JudgeCalled,
    RoundEnded,
    RoundResultRecorded,
    PostmortemStarted,
    PostmortemEnded,
    AgentHistoryAppended,
    RoundCompleted,
    RunResumed,
    SimulationEnded,
)

_registered: dict[str, type[Event]] = {}
_classes: dict[str, type[Event]] = {}
"""What :func:`event_classes` answers, built once (emptied when an event is registered)."""


def _tag(cls: type[Event]) -> str:
    return cls.model_fields["event_type"].default


def register_event(cls: type[Event]) -> type[Event]:
    """Add a scenario's event class to the union every reader uses (usable as a decorator).

    Raises:
        ValueError: if another class already uses the same ``event_type`` tag.
    """
    tag = _tag(cls)
    known = {_tag(c): c for c in CORE_EVENTS} | _registered
    if tag in known and known[tag] is not cls:
        raise ValueError(f"event type {tag!r} is already registered by {known[tag].__name__}")
    _registered[tag] = cls
    _classes.clear()
    _adapter.cache_clear()
    return cls


_scenarios_loaded: set[str] = set()
"""The ``GLOSSOGEN_SCENARIO_PATH`` values under which every scenario's events were loaded."""


def _load_scenario_events() -> None:
    """Register the events of every installed scenario (and those on the scenario path).

    A reader must know a scenario's events whether or not something imported that scenario
    before it read (an MCP server's first call, an export): so the first lookup of the known
    classes loads every scenario, once per value of ``GLOSSOGEN_SCENARIO_PATH``. A scenario
    that fails to load adds nothing here (its events read as unknown lines); naming it is
    ``load_scenario``'s job when a command asks for it.
    """
    key = os.environ.get("GLOSSOGEN_SCENARIO_PATH", "")
    if key in _scenarios_loaded:
        return
    _scenarios_loaded.add(key)  # first: a scenario module that reads events does not recurse
    # The registry sits above this module (it registers into it): imported here, when asked.
    from glossogen.scenario._registry import load_scenario, scenario_names

    for name in scenario_names():
        try:
            load_scenario(name)
        except Exception:  # noqa: BLE001, S112  # a broken plug-in: its events stay unknown
            continue


def event_classes() -> dict[str, type[Event]]:
    """Return every known event class by its ``event_type`` tag (core and registered).

    Registered means every installed scenario's events (loaded on the first call, see
    :func:`_load_scenario_events`) and any class passed to :func:`register_event`.
    """
    _load_scenario_events()
    return registered_event_classes()


def event_adapter() -> TypeAdapter[Any]:
    """Return a TypeAdapter over the discriminated union of all known events."""
    _load_scenario_events()
    return _adapter()


def scenario_events_loaded() -> bool:
    """Whether every scenario's events are registered (under this ``GLOSSOGEN_SCENARIO_PATH``)."""
    return os.environ.get("GLOSSOGEN_SCENARIO_PATH", "") in _scenarios_loaded


def registered_event_classes() -> dict[str, type[Event]]:
    """The event classes known so far: core, and those registered (no scenario loaded for it).

    A reader starts from these (a run's own scenario registered its events when it loaded) and
    asks :func:`event_classes` only for a line whose type none of them has.
    """
    if not _classes:  # built once, emptied when an event is registered
        _classes.update({_tag(c): c for c in CORE_EVENTS} | _registered)
    return dict(_classes)


def registered_event_adapter() -> TypeAdapter[Any]:
    """A TypeAdapter over the union of :func:`registered_event_classes`.

    Cached until the next :func:`register_event`.
    """
    return _adapter()


@cache
def _adapter() -> TypeAdapter[Any]:
    classes = tuple(registered_event_classes().values())
    members = Union[classes]  # type: ignore[valid-type]  # built at run time  # noqa: UP007
    return TypeAdapter(Annotated[members, Field(discriminator="event_type")])
