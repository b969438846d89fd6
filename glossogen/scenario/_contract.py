"""The scenario contract: what a scenario declares and what the engine offers it.

A scenario is a class with a ``name``, a knobs model, its agents and channels, per-round private
briefings, its own tools, a settled check, a round verdict and a scripted policy for the offline
``scripted`` provider. The engine creates one instance per run and calls it from one asyncio
loop, so scenario code needs no locks.
"""

from __future__ import annotations

import inspect
import random
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, Field

from glossogen.eventlog import Event, Verdict
from glossogen.knobs import BaseKnobs

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class AgentSpec:
    """One seat of a scenario.

    Attributes:
        agent_id: Stable id used in events, overrides (``agents.<id>.model``) and exports.
        role: The role's short name (``field_observer``).
        display_name: How other agents and the UI name it.
        team_id: The team whose verdict it shares.
        tools: Names of the scenario tools this seat may call (core tools are always given).
    """

    agent_id: str
    role: str
    display_name: str
    team_id: str = "team"
    tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChannelSpec:
    """A channel agents talk on.

    Attributes:
        channel_id: Stable id (``link``, ``postmortem``).
        metered: True when every character sent is charged to the round budget.
        phase: The phase in which the channel is open.
        members: Agent ids that may read and send; ``None`` means every agent.
    """

    channel_id: str
    metered: bool
    phase: Literal["main", "postmortem"] = "main"
    members: tuple[str, ...] | None = None


@dataclass(frozen=True)
class JudgeDecision:
    """A judge's ruling on one action: ``success`` and a one-line ``reason``."""

    success: bool
    reason: str


class ItemRuling(BaseModel):
    """A judge's ruling on a list of items against a numbered list of expected ones.

    Attributes:
        matched: The numbers (1-based) of the expected items the answer states, each once.
        false_positives: How many of the answer's items match no expected item (or are too
            ambiguous to tell which).
        reason: One sentence explaining the ruling.
    """

    matched: list[int] = Field(
        description="Numbers (1-based) of the expected items the answer clearly states."
    )
    false_positives: int = Field(
        ge=0, description="How many answer items match no expected item or are ambiguous."
    )
    reason: str = Field(description="One sentence explaining the ruling.")

    def within(self, expected_items: int) -> ItemRuling:
        """Return this ruling with ``matched`` sorted, deduplicated and in 1..``expected_items``."""
        kept = sorted({n for n in self.matched if 1 <= n <= expected_items})
        return self.model_copy(update={"matched": kept})

    def complete(self, expected_items: int) -> bool:
        """True when every expected item was matched and nothing else was claimed."""
        return self.matched == list(range(1, expected_items + 1)) and not self.false_positives


@dataclass(frozen=True)
class ScriptedMove:
    """What a scripted policy does in one model turn: call tools, or end the cycle with text.

    Attributes:
        tool_calls: ``(tool_name, args)`` pairs, called in order in one model response.
        text: Final text ending the agent's cycle (used when ``tool_calls`` is empty).
    """

    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    text: str = ""

    @classmethod
    def call(cls, tool_name: str, **args: Any) -> ScriptedMove:
        """Return a move that calls one tool with ``args``."""
        return cls(tool_calls=((tool_name, args),))

    @classmethod
    def finish(cls, text: str = "Done for now.") -> ScriptedMove:
        """Return a move that ends the cycle with ``text``."""
        return cls(text=text)


@dataclass(frozen=True)
class Observation:
    """One thing a scripted agent has seen this phase.

    Attributes:
        kind: ``briefing`` (an injection), ``notifications`` (messages and world events handed
            over as a new prompt) or ``tool_result``.
        tool_name: For ``tool_result``, the tool that returned.
        data: The structured payload: an injection's data (plus ``text``), a notification batch
            ``{"messages": [...], "events": [...]}``, or the tool's return value.
    """

    kind: Literal["briefing", "notifications", "tool_result"]
    data: dict[str, Any]
    tool_name: str = ""


@dataclass
class ScriptedView:
    """What a scripted policy sees when it is asked for its next move.

    Attributes:
        agent_id: The seat being played.
        round_number: Current round (1-based).
        phase: ``main`` or ``postmortem``.
        observations: Everything this agent was shown this phase, oldest first.
        misplay: True in the rounds the policy is to misplay (drawn from the seed).
        turn: How many model turns this agent already took this phase.
        rng: A random source seeded from (seed, agent, round, phase, turn).
    """

    agent_id: str
    round_number: int
    phase: Literal["main", "postmortem"]
    observations: list[Observation]
    misplay: bool
    turn: int
    rng: random.Random = field(repr=False)

    def tool_results(self, tool_name: str) -> list[dict[str, Any]]:
        """Return this phase's results of ``tool_name``, oldest first."""
        return [
            o.data
            for o in self.observations
            if o.kind == "tool_result" and o.tool_name == tool_name
        ]

    def briefings(self) -> list[dict[str, Any]]:
        """Return this phase's briefing payloads, oldest first."""
        return [o.data for o in self.observations if o.kind == "briefing"]

    def received_messages(self) -> list[dict[str, Any]]:
        """Return every message this agent received this phase (from waits and notifications).

        Each item is a dict with ``channel_id``, ``sender_id``, ``text`` (as delivered).
        """
        found: list[dict[str, Any]] = []
        for o in self.observations:
            if o.kind == "notifications" or (
                o.kind == "tool_result"
                and o.tool_name in ("wait_for_notifications", "send_message")
            ):
                found.extend(o.data.get("messages", []))
        return found

    def world_events(self) -> list[dict[str, Any]]:
        """Return the world events this agent was told this phase (``kind``, ``text``, ``data``)."""
        found: list[dict[str, Any]] = []
        for o in self.observations:
            if o.kind == "notifications" or (
                o.kind == "tool_result" and o.tool_name == "wait_for_notifications"
            ):
                found.extend(o.data.get("events", []))
        return found


class RoundContext(Protocol):
    """What the engine offers a scenario during a round."""

    round_number: int
    phase: Literal["main", "postmortem"]
    knobs: BaseKnobs

    def now(self) -> float:
        """Return game time in seconds (the run's clock)."""
        ...

    def emit(self, event: Event) -> None:
        """Append a scenario event to the log (envelope filled in by the engine)."""

    def brief(self, agent_id: str, text: str, data: dict[str, Any] | None = None) -> None:
        """Give ``agent_id`` a private briefing (logged as ``injection_delivered``)."""

    def notify(
        self, agent_id: str, kind: str, text: str, data: dict[str, Any] | None = None
    ) -> None:
        """Tell ``agent_id`` something mid-round (logged as ``world_event_delivered``)."""

    def judge(
        self, question: str, instructions: str, scripted: Callable[[], JudgeDecision]
    ) -> Awaitable[JudgeDecision]:
        """Have the run's judge rule on ``question`` (logged as ``judge_called``).

        Under the scripted judge provider ``scripted()`` decides; otherwise an LLM reads
        ``instructions`` and ``question`` cold.
        """

    def judge_items(
        self,
        question: str,
        instructions: str,
        scripted: Callable[[], ItemRuling],
        expected_items: int,
    ) -> Awaitable[ItemRuling]:
        """Have the run's judge say which of ``expected_items`` items ``question`` states.

        Logged as ``judge_called`` (``detail``: ``matched``, ``false_positives``). Under the
        scripted judge provider ``scripted()`` decides; otherwise an LLM reads ``instructions``
        (which number the expected items) and ``question`` cold.
        """

    def team_chars(self, team_id: str) -> int:
        """Return the characters ``team_id``'s members sent on metered channels this round.

        Composed text, counted whether or not the team has a budget (a shared channel counts
        each sender for its own team only).
        """
        ...

    def rng(self, *key: object) -> random.Random:
        """Return a random source seeded from the run's seed and ``key``."""

    def out_of_turns(self) -> list[str]:
        """Return the seats the turn cap (``max_agent_turns``) took out (no more requests).

        A round such a seat was cut off in is void (``turn_limit``) unless it settled: what the
        seat did not do was the cap, not a move, so a scenario that pays for moves pays nothing
        for it (prisoners_dilemma's ``payoffs``).
        """
        ...


@dataclass
class AgentDeps:
    """The run context an agent's tools receive: who is calling, and the round's context.

    The calling agent's identity comes from here, never from a tool argument.
    """

    agent_id: str
    round: RoundContext
    services: object = field(repr=False, default=None)
    """The engine playing the run; opaque to scenarios (their tools use ``round``)."""


if TYPE_CHECKING:
    from pydantic_ai import RunContext, Tool

    ToolContext = RunContext[AgentDeps]
    """Type of the first argument of every scenario tool function."""


def __getattr__(name: str) -> Any:
    """Build ``ToolContext`` (``RunContext[AgentDeps]``) on first use, importing pydantic-ai then.

    Reading runs (evaluate, export, the browser, MCP) loads scenario modules but never builds an
    agent, and importing pydantic-ai is the largest part of those commands' start-up; so this
    module imports it only when a tool is built or ``ToolContext`` is asked for at run time.
    """
    if name == "ToolContext":
        from pydantic_ai import RunContext

        return RunContext[AgentDeps]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def scenario_tool(function: Callable[..., Awaitable[Any]], **options: Any) -> Tool[AgentDeps]:
    """Return a scenario's tool ``function`` as a pydantic-ai ``Tool`` that takes the context.

    The rule: the function's first parameter receives the ``ToolContext`` (annotate it so, a
    module may import ``ToolContext`` under ``TYPE_CHECKING`` only); the other parameters, with
    their annotations and the docstring, make the tool's schema as pydantic-ai reads them.
    ``options`` are ``Tool``'s own (``name``, ``description``, ``prepare``...).

    Raises:
        TypeError: ``function`` takes no parameter to receive the context.
    """
    from pydantic_ai import RunContext
    from pydantic_ai import Tool as PydanticTool

    parameters = list(inspect.signature(function).parameters)
    if not parameters:
        raise TypeError(f"tool {function.__name__} takes no parameter for its ToolContext")
    # pydantic-ai resolves string annotations in the function's module; the context's is set to
    # the resolved type here, so it resolves wherever ToolContext was imported.
    function.__annotations__[parameters[0]] = RunContext[AgentDeps]
    return PydanticTool(function, takes_ctx=True, **options)


@dataclass(frozen=True)
class CostProfile:
    """How a scenario's seats use the model, for the launch estimate (``glossogen.launch``).

    Prompt sizes are not stated here: the estimate measures them from the scenario's own
    rendered system prompts, tool definitions and briefings. These are the figures a prompt
    cannot show, each with the reason a scenario's README or policy gives for it.

    Attributes:
        main_requests: Model requests one seat makes in a round's main phase (mean).
        postmortem_requests: Model requests one seat makes in a postmortem, when one is held.
        output_tokens: Tokens one answer writes (tool call arguments or text), before thinking.
        added_tokens: Tokens one request's cycle adds to the history besides its answer (tool
            results, the other seats' messages as notifications).
        judge_calls: In-run judge calls per round (0: the scenario rules rounds itself).
        judge_prompt_chars: Characters of one judge call's instructions and question.
        reason: Why the main phase's figures (printed with the dry run's assumptions).
        postmortem_reason: Why ``postmortem_requests`` (printed only when a postmortem is held).

    ``main_requests`` plus ``postmortem_requests`` (when the run holds postmortems) is also the
    figure the launch's ``max_agent_turns`` warning takes for a seat's requests a round: one
    source for both, checked against played runs (``tests/launch/test_requests_per_round.py``).
    """

    main_requests: float = 6.0
    postmortem_requests: float = 2.0
    output_tokens: int = 120
    added_tokens: int = 80
    judge_calls: float = 0.0
    judge_prompt_chars: int = 0
    reason: str = "the default profile: a few messages, a tool call and a stop per round"
    postmortem_reason: str = "a line and a stop"


class Scenario(ABC):
    """Base class of every scenario. Subclasses set the class attributes and the hooks below."""

    name: ClassVar[str]
    description: ClassVar[str]
    knobs_model: ClassVar[type[BaseKnobs]]
    events: ClassVar[tuple[type[Event], ...]] = ()
    ranking_events: ClassVar[tuple[type[Event], ...]] = ()
    """The events :meth:`round_winners` names winners in (none: the scenario ranks nothing),
    so a reader that parses only some of a log's lines (the export) knows which to parse."""
    case_event: ClassVar[type[Event] | None] = None
    """The event that logs a round's case, its answer key (None: the scenario logs none).
    ``check-scenario`` holds a judged scenario's judge prompts to the fields it marks hidden
    (:class:`Code`), and the run page shows it under its round."""
    ruling_events: ClassVar[tuple[type[Event], ...]] = ()
    """Events in which the scenario logs a ruling of its own (``success`` and ``reason``): the
    run page shows each as the judge's."""
    uses_judge: ClassVar[bool] = False
    """True when rounds are ruled by the in-run judge (its provider then needs credentials)."""
    scripted_latency_seconds: ClassVar[float] = 2.0
    """Game seconds a scripted model call takes on the clock."""
    probe_questions: ClassVar[dict[str, str]] = {}
    """The ``protocol_probe`` metric's question bank for this scenario (question id -> question,
    asked each seat after its whole history); empty: the metric's general bank."""

    def __init__(self, knobs: BaseKnobs) -> None:
        """Create the scenario for one run from its resolved knobs."""
        self.knobs = knobs

    @abstractmethod
    def agents(self) -> list[AgentSpec]:
        """Return the seats of this run, in registration order."""

    @abstractmethod
    def channels(self) -> list[ChannelSpec]:
        """Return the channels of this run (main-phase and postmortem)."""

    def cost_profile(self) -> CostProfile:
        """Return how this run's seats use the model (the launch estimate's figures).

        Called after :meth:`start_round` of round 1 (so the round's case is drawn, and judge
        instructions can be rendered and measured). The default suits a short exchange.
        """
        return CostProfile()

    def budget_chars(self) -> int | None:
        """Return the per-round character budget of the metered channels, or None for none."""
        return None

    def team_budget_chars(self) -> dict[str, int]:
        """Return each team's per-round character budget on the metered channels.

        A message on a metered channel is charged to the speaker's team, whoever else reads the
        channel: on a channel two teams share, each team pays only for its own members'
        characters. A team missing from the map is not capped (its messages are logged with
        ``charged_chars`` 0). The default gives every team ``budget_chars()`` (none when that
        is None or 0).
        """
        budget = self.budget_chars()
        if not budget:
            return {}
        return {agent.team_id: budget for agent in self.agents()}

    def launch_warnings(self) -> list[str]:
        """Return one line per knob setting this scenario plays poorly under (default none).

        Printed when a run derived from another is launched (``glossogen: warning: <line>``);
        never a refusal.
        """
        return []

    def budget_warning_shares(self) -> tuple[float, ...] | None:
        """Return the shares of the budget at which every member is warned, ascending.

        ``None`` (the default) keeps the engine's shares (50%, 80%, 100%).
        """
        return None

    @abstractmethod
    def system_prompt(self, agent: AgentSpec) -> str:
        """Return the standing instructions of ``agent`` (same every round)."""

    @abstractmethod
    def tools(self) -> list[Tool[AgentDeps]]:
        """Return the scenario's own tools; each seat gets the ones its ``AgentSpec`` names."""

    @abstractmethod
    def start_round(self, ctx: RoundContext) -> None:
        """Draw this round's case from the seed, log it, and brief every agent."""

    def on_scheduled_case(self, payload: dict[str, Any]) -> None:  # noqa: B027
        """Take an ``inject_case`` scheduled event's payload for the round about to open."""

    def on_budget_exceeded(self, ctx: RoundContext, channel_id: str, used_chars: int) -> None:  # noqa: B027
        """React to the round budget being overspent (default: nothing)."""

    def on_team_budget_exceeded(
        self, ctx: RoundContext, team_id: str, channel_id: str, used_chars: int
    ) -> None:
        """React to ``team_id`` overspending its round budget (once per team and round).

        ``used_chars`` is what that team was charged this round. The default calls
        :meth:`on_budget_exceeded`, so a one-team scenario need only override that.
        """
        self.on_budget_exceeded(ctx, channel_id, used_chars)

    def refuse_message(
        self, ctx: RoundContext, agent_id: str, channel_id: str, text: str
    ) -> str | None:
        """Return why ``agent_id`` may not send ``text`` on ``channel_id`` now, or None.

        Asked by the core ``send_message`` after its own checks (membership, phase, empty text)
        and before anything is metered or logged: a refused message is not sent, costs
        nothing, and the sender's tool result is ``{"status": "refused", "reason": ...}``.
        The default refuses nothing.
        """
        return None

    def reveal_results(self, ctx: RoundContext, verdicts: list[Verdict]) -> None:  # noqa: B027
        """Tell the seats what the round held back (called once the verdicts are recorded).

        The engine calls it after ``round_result_recorded`` and before the postmortem opens,
        so results a tool kept secret (a one-shot submission's ruling) can be told with
        ``ctx.notify`` when the round is over. The default tells nothing.
        """

    @abstractmethod
    def is_settled(self) -> bool:
        """Return True once this round's outcome can no longer change."""

    @abstractmethod
    def verdicts(self, ctx: RoundContext) -> list[Verdict]:
        """Return this round's verdict per team (called once, when the main phase ends)."""

    def postmortem_briefing(
        self, agent: AgentSpec, verdicts: list[Verdict], round_number: int
    ) -> str:
        """Return what ``agent`` is told as the postmortem of ``round_number`` opens."""
        outcome = "; ".join(
            f"team {v.team_id}: {'success' if v.success else 'failure'} ({v.reason})"
            for v in verdicts
        )
        return (
            f"Round over. Outcome: {outcome}. The postmortem channel is free of charge: agree on "
            "what to keep or change for the next round, then stop."
        )

    @classmethod
    def case_type(cls) -> str | None:
        """The ``event_type`` of :attr:`case_event`, or None when the scenario logs no case."""
        return None if cls.case_event is None else event_type_of(cls.case_event)

    @classmethod
    def ruling_types(cls) -> frozenset[str]:
        """The ``event_type`` of each of :attr:`ruling_events`."""
        return frozenset(event_type_of(e) for e in cls.ruling_events)

    @classmethod
    def round_winners(cls, event: Event) -> list[str] | None:
        """Return the teams ``event`` names as its round's winners, or None if it names none.

        A scenario whose verdict says only that a team was eligible, and which ranks the
        eligible teams in an event of its own, returns that event's winners (every tied team),
        so the console says who won the ranking rather than who was eligible. The default
        names none: a team whose verdict is a success won its round.
        """
        return None

    @abstractmethod
    def scripted_move(self, view: ScriptedView) -> ScriptedMove:
        """Return the scripted policy's next move for ``view.agent_id`` (deterministic)."""

    def misplayed_rounds(self) -> frozenset[int]:
        """Return the rounds the scripted policies misplay: ``scripted_misplay_share`` of them.

        The count is ``round(share * round_count)``, the rounds drawn from the seed.
        """
        k = round(self.knobs.scripted_misplay_share * self.knobs.round_count)
        rng = random.Random(f"{self.knobs.seed}:misplay:{self.name}")
        return frozenset(rng.sample(range(1, self.knobs.round_count + 1), k))


def outcome_word(
    success: bool, team_id: str, winners: list[str] | None
) -> Literal["won", "eligible", "lost"]:
    """How a team's verdict reads where a round is reported: ``won``, ``eligible`` or ``lost``.

    ``winners`` is what :meth:`Scenario.round_winners` read from the round's events (None when
    the scenario ranks nothing): a successful team it does not name was only ``eligible``.
    """
    if not success:
        return "lost"
    return "won" if winners is None or team_id in winners else "eligible"


@dataclass(frozen=True)
class TeamOutcome:
    """How one team's verdict of a round reads on every surface.

    Attributes:
        team_id: The team.
        outcome: ``won``, ``eligible`` (a success the scenario's ranking did not name the
            winner), ``lost``, or ``void`` (the round could not be played).
        success: The scenario's verdict as recorded (in a ranked scenario: eligible).
        reason: The verdict's reason.
    """

    team_id: str
    outcome: Literal["won", "eligible", "lost", "void"]
    success: bool
    reason: str

    @property
    def won(self) -> bool:
        """True when the team won the round (the ranking's winner, where there is one)."""
        return self.outcome == "won"


def round_outcomes(
    verdicts: list[tuple[str, bool, str]], void: bool, winners: list[str] | None
) -> list[TeamOutcome]:
    """Each team's outcome of one round from its verdicts ``(team_id, success, reason)``.

    ``winners`` is what :meth:`Scenario.round_winners` read from the round's events (None:
    not ranked); it decides only a round of several teams: there a successful team it does not
    name was ``eligible``. A void round is ``void`` for every team.
    """
    ranked = winners if len(verdicts) > 1 else None
    return [
        TeamOutcome(team, "void" if void else outcome_word(ok, team, ranked), ok, reason)
        for team, ok, reason in verdicts
    ]


def event_type_of(cls: type[Event]) -> str:
    """The ``event_type`` tag an event class logs (its field's default)."""
    return str(cls.model_fields["event_type"].default)


ScenarioFactory = Callable[[BaseKnobs], Scenario]
