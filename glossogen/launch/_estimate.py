"""The launch estimate of a run's spend: one function for the dry run, MCP, sweeps and the cap.

:func:`estimate_cost` plays a run on paper, request by request, for each seat:

- **Prompt sizes, measured**: the seat's rendered system prompt and tool definitions (the core
  tools and the scenario's, as pydantic-ai sends them), round 1's briefing as the scenario's
  ``start_round`` gives it (every round assumed alike) and its postmortem briefing, counted at
  :data:`CHARS_PER_TOKEN` characters per token (no tokenizer file is needed offline).
- **Requests and growth**: the scenario's :class:`~glossogen.scenario.CostProfile` (requests
  per seat in the main phase and the postmortem, tokens each answer writes and each cycle adds
  to the history). Request n reads the fixed prompt and the whole history before it.
- **Output cap**: an answer writes the profile's tokens plus, with ``thinking`` set, the
  reasoning tokens of its level (:data:`THINKING_TOKENS`), at most the seat's ``max_tokens``.
- **Turn cap**: a seat makes at most ``max_agent_turns`` requests in the run; the rounds past
  it are not played, so neither their judge calls nor their postmortems are priced.
- **Postmortems**: held in the rounds where ``postmortem_enabled`` (as scheduled
  ``set_postmortem`` events leave it) holds and the scenario has a postmortem channel.
- **Caching**: with ``cache`` on (the default) on a provider that caches (Anthropic, OpenAI,
  OpenRouter), a request reads its previous request's prompt from cache (the seat's prefix is
  stable) at the cache-read rate; on Anthropic the new part is written (five-minute rate, or the
  one-hour rate with ``cache="1h"``); OpenAI writes are free and its reads come in 128-token
  steps from 1024 tokens. Other providers are priced with no cache.
- **Judge**: the profile's judge calls per round (drive_module_repair: one per vote) of its
  measured prompt, uncached, with :data:`JUDGE_OUTPUT_TOKENS` tokens out, for the rounds the
  seats play: a round the turn cap cuts off counts in the share of its main-phase requests
  the seats still make.

:func:`round_requests` is the one reading of a seat's requests a round; the launch's
``max_agent_turns`` warning (``glossogen.launch._turns``) takes its figure from it too.

No credential is read. A model genai-prices does not know makes its part None ("not costed").
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from glossogen.engine import FRAMING_TOKENS, LONG_CACHE, Seat, worst_case_usd
from glossogen.eventlog import Event, Verdict
from glossogen.knobs import DEFAULT_MAX_TOKENS
from glossogen.launch._plan import RunConfig
from glossogen.pricing import price_call, price_usage
from glossogen.scenario import AgentSpec, CostProfile, Scenario, load_scenario

CHARS_PER_TOKEN = 4.0
"""Characters per token of prompts and answers: OpenAI's and Anthropic's rule of thumb for
English text (the o200k tokenizer reads this project's prompts at 3.6-4.2)."""
JUDGE_OUTPUT_TOKENS = 80
"""Tokens of one judge ruling (a verdict and a one-line reason)."""
THINKING_TOKENS: dict[object, int] = {
    "minimal": 128,
    "low": 512,
    "medium": 1024,
    True: 1024,
    "high": 2048,
    "xhigh": 4096,
    "max": 8192,
}
"""Reasoning tokens one answer adds at each ``thinking`` level (output-priced; a guess: providers
spend what a question needs, up to a budget several times these)."""
OPENAI_CACHE_MIN, OPENAI_CACHE_STEP = 1024, 128
"""OpenAI caches a prompt from 1024 tokens, in steps of 128 tokens."""
ANTHROPIC_CACHE_MIN = 1024
"""Anthropic's shortest cacheable prompt (Sonnet; tokens)."""
WRITE_PRICED = frozenset({"anthropic"})
"""Providers that bill cache writes (at their own rate) as well as reads."""
READ_ONLY_CACHE = frozenset({"openai", "openrouter"})
"""Providers that cache a stable prefix by themselves and bill no write."""


def chars_to_tokens(chars: int) -> int:
    """Tokens of ``chars`` characters at :data:`CHARS_PER_TOKEN`."""
    return round(chars / CHARS_PER_TOKEN)


class _Recorder:
    """A round context that only records what ``start_round`` briefs each seat."""

    def __init__(self, knobs: Any, round_number: int) -> None:
        self.round_number = round_number
        self.phase: Literal["main", "postmortem"] = "main"
        self.knobs = knobs
        self.briefed: dict[str, list[str]] = {}

    def now(self) -> float:
        return 0.0

    def emit(self, event: Event) -> None:
        """Nothing is logged on paper."""

    def brief(self, agent_id: str, text: str, data: dict[str, Any] | None = None) -> None:
        self.briefed.setdefault(agent_id, []).append(text)

    def notify(
        self, agent_id: str, kind: str, text: str, data: dict[str, Any] | None = None
    ) -> None:
        self.briefed.setdefault(agent_id, []).append(text)

    def team_chars(self, team_id: str) -> int:
        return 0

    def out_of_turns(self) -> list[str]:
        return []

    def rng(self, *key: object) -> random.Random:
        # the engine's seeding (glossogen.engine), so the case drawn is the run's round 1
        return random.Random(":".join(str(k) for k in (self.knobs.seed, self.round_number, *key)))

    async def judge(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - never judged
        raise NotImplementedError

    async def judge_items(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
        raise NotImplementedError


def postmortems_held(config: RunConfig, scenario: Scenario) -> list[bool]:
    """For rounds 1..``round_count``: whether each holds a postmortem.

    ``postmortem_enabled`` as the run's scheduled ``set_postmortem`` events leave it when the
    round opens, and only when the scenario has a postmortem channel (the engine's rule).
    """
    knobs = config.knobs
    has_channel = any(c.phase == "postmortem" for c in scenario.channels())
    enabled, held = knobs.postmortem_enabled, []
    toggles = {e.round: e.enabled for e in knobs.scheduled_events if e.kind == "set_postmortem"}
    for round_number in range(1, knobs.round_count + 1):
        if round_number in toggles:
            enabled = bool(toggles[round_number])
        held.append(enabled and has_channel)
    return held


class RoundRequests(NamedTuple):
    """One seat's requests in one round: its main phase's and its postmortem's (0: none held)."""

    main: int
    postmortem: int

    @property
    def total(self) -> int:
        """Both phases' requests."""
        return self.main + self.postmortem


def round_requests(profile: CostProfile, held: list[bool]) -> list[RoundRequests]:
    """A seat's requests in each round, from ``profile`` (``held``: the postmortems held).

    A fractional mean spreads its requests over the rounds (2.5 a round: 2, 3, 2, 3, ...).
    """
    carry = {"main": 0.0, "postmortem": 0.0}

    def take(phase: str, mean: float) -> int:
        carry[phase] += mean
        n = int(carry[phase] + 1e-9)
        carry[phase] -= n
        return n

    return [
        RoundRequests(
            take("main", profile.main_requests),
            take("postmortem", profile.postmortem_requests) if pm else 0,
        )
        for pm in held
    ]


@dataclass(frozen=True)
class SeatPrompts:
    """A seat's measured prompts (tokens): system, tools, round and postmortem briefings."""

    system_tokens: int
    tools_tokens: int
    briefing_tokens: int
    postmortem_tokens: int


@dataclass(frozen=True)
class Measured:
    """A scenario's measured prompts per seat and its cost profile."""

    seats: dict[str, SeatPrompts]
    profile: CostProfile
    postmortems: list[bool]
    unmeasured: str = ""

    @property
    def rounds(self) -> list[RoundRequests]:
        """A seat's requests in each round of the run (:func:`round_requests`)."""
        return round_requests(self.profile, self.postmortems)


def measure_prompts(config: RunConfig) -> Measured:
    """Render every seat's system prompt, tools and round-1 briefing, and measure them."""
    from glossogen.engine._tools import core_tools

    scenario: Scenario = load_scenario(config.scenario)(config.knobs)
    specs: dict[str, AgentSpec] = {a.agent_id: a for a in scenario.agents()}
    recorder = _Recorder(config.knobs, 1)
    unmeasured = ""
    try:
        scenario.start_round(recorder)  # a RoundContext, on paper
    except Exception as exc:  # noqa: BLE001 - a scenario's hook asked for more than paper has
        unmeasured = f"round briefings not measured (start_round on paper: {type(exc).__name__})"
        scenario = load_scenario(config.scenario)(config.knobs)
        recorder.briefed.clear()
    profile = scenario.cost_profile()
    core = core_tools(None)  # type: ignore[arg-type,unused-ignore]  # definitions only
    scenario_tools = {t.name: t for t in scenario.tools()}
    verdicts = [Verdict(team_id=a.team_id, success=True, reason="") for a in specs.values()]
    seats: dict[str, SeatPrompts] = {}
    for agent_id, spec in specs.items():
        tools = [*core, *(scenario_tools[n] for n in spec.tools if n in scenario_tools)]
        definitions = [
            {
                "name": t.tool_def.name,
                "description": t.tool_def.description,
                "parameters": t.tool_def.parameters_json_schema,
            }
            for t in tools
        ]
        briefing = "\n\n".join(recorder.briefed.get(agent_id, []))
        postmortem = scenario.postmortem_briefing(spec, verdicts[:1], 1)
        seats[agent_id] = SeatPrompts(
            system_tokens=chars_to_tokens(len(scenario.system_prompt(spec))),
            tools_tokens=chars_to_tokens(len(json.dumps(definitions))),
            briefing_tokens=chars_to_tokens(len(briefing)),
            postmortem_tokens=chars_to_tokens(len(postmortem)),
        )
    return Measured(seats, profile, postmortems_held(config, scenario), unmeasured)


@dataclass
class _Bill:
    """Token counts summed over requests, priced once (a price is linear in each count)."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0

    def add(self, prompt: int, output: int, read: int, write: int, long_lived: bool) -> None:
        self.requests += 1
        self.input_tokens += prompt
        self.output_tokens += output
        self.cache_read_tokens += read
        self.cache_write_tokens += write
        self.cache_write_1h_tokens += write if long_lived else 0

    def usd(self, provider: str, model: str) -> float | None:
        return price_usage(provider, model, self) if self.requests else 0.0


@dataclass(frozen=True)
class SeatEstimate:
    """One seat's estimated requests, tokens and USD over the rounds estimated.

    ``played`` is, per round estimated, the share of its main-phase requests the turn cap lets
    the seat make (1.0: the whole round; 0.0: none).
    """

    agent_id: str
    requests: int
    input_tokens: int
    cache_read_tokens: int
    output_tokens: int
    usd: float | None
    turn_capped: bool
    played: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class RunCostEstimate:
    """The estimate of the rounds ahead of a run (USD; None where a model is not costed).

    Attributes:
        rounds: Rounds estimated (the rounds still to play).
        seats: Per seat.
        judge_calls: Judge calls over the rounds the seats play (the turn cap may end them).
        judge_usd: Their USD (0.0 without a judge).
        total_usd: Seats and judge (None when any part is not costed).
        assumptions: One line per assumption, as the dry run prints them.
    """

    rounds: int
    seats: list[SeatEstimate]
    judge_calls: int
    judge_usd: float | None
    total_usd: float | None
    assumptions: list[str] = field(default_factory=list)

    @property
    def rounds_played(self) -> float:
        """Rounds the seats play within the turn cap (a cut-off round in its played share)."""
        shares = zip(*(s.played for s in self.seats), strict=True)
        return sum(max(share, default=0.0) for share in shares)

    @property
    def per_round_usd(self) -> float | None:
        """The total spread over the rounds the seats play (None: not costed; no round: 0).

        Every round asked, or under a turn cap that binds, the share of them it reaches.
        """
        if self.total_usd is None:
            return None
        played = min(self.rounds_played, self.rounds) if self.seats else self.rounds
        return self.total_usd / played if played else 0.0


def _cache_mode(seat: Seat) -> str | None:
    """``"write"``/``"read"`` caching the seat's provider does with its settings, else None."""
    cache = seat.model_settings.get("cache", True)
    if cache is False:
        return None
    if seat.provider in WRITE_PRICED:
        return "write"
    if seat.provider in READ_ONLY_CACHE:
        return "read"
    return None


def _seat(
    seat: Seat, prompts: SeatPrompts, measured: Measured, config: RunConfig, done: int
) -> SeatEstimate:
    """Play the seat's requests on paper: rounds 1..round_count, billed from round done+1."""
    profile = measured.profile
    fixed = prompts.system_tokens + prompts.tools_tokens
    max_tokens = seat.model_settings.get("max_tokens") or DEFAULT_MAX_TOKENS
    thinking = seat.model_settings.get("thinking")
    reasoning = 0 if thinking is None or thinking is False else THINKING_TOKENS.get(thinking, 0)
    output = min(profile.output_tokens + reasoning, max_tokens)
    # reasoning is billed but not sent back: the history grows by the answer's visible part
    growth = min(profile.output_tokens, max_tokens) + profile.added_tokens
    mode = _cache_mode(seat)
    long_lived = seat.model_settings.get("cache") == "1h"
    turns_left = config.limits.max_agent_turns
    bill = _Bill()
    history, previous = 0, 0
    played: list[float] = []
    for round_number, wanted in enumerate(measured.rounds, start=1):
        phases = [(wanted.main, prompts.briefing_tokens)]
        if wanted.postmortem:
            phases.append((wanted.postmortem, prompts.postmortem_tokens))
        if round_number > done:
            made = min(wanted.main, max(0, turns_left))
            played.append(made / wanted.main if wanted.main else float(turns_left > 0))
        for n, briefing in phases:
            history += briefing
            for _ in range(n):
                prompt = fixed + history
                history += growth
                if round_number <= done:
                    previous = prompt
                    continue
                if turns_left <= 0:
                    continue
                turns_left -= 1
                read = write = 0
                if mode == "write" and prompt >= ANTHROPIC_CACHE_MIN:
                    read = previous if previous >= ANTHROPIC_CACHE_MIN else 0
                    write = prompt - read
                elif mode == "read" and previous >= OPENAI_CACHE_MIN:
                    steps = (previous - OPENAI_CACHE_MIN) // OPENAI_CACHE_STEP
                    read = OPENAI_CACHE_MIN + steps * OPENAI_CACHE_STEP
                bill.add(prompt, output, read, write, long_lived)
                previous = prompt
    wanted_total = sum(r.total for r in measured.rounds[done:])
    return SeatEstimate(
        agent_id=seat.agent_id,
        requests=bill.requests,
        input_tokens=bill.input_tokens,
        cache_read_tokens=bill.cache_read_tokens,
        output_tokens=bill.output_tokens,
        usd=bill.usd(seat.provider, seat.model),
        turn_capped=bill.requests < wanted_total,
        played=played,
    )


def estimate_cost(config: RunConfig, rounds_done: int = 0) -> RunCostEstimate:
    """Estimate the spend of the rounds ``config`` has still to play (see the module docstring).

    Args:
        config: The planned run (its seats, knobs and ``max_agent_turns``).
        rounds_done: Rounds already played (a resume's): their history is read, not billed.
            The turn cap is counted from the resume point on (a resume's turns so far are in
            its log, not in ``config``), so a resume's estimate is an upper bound.
    """
    measured = measure_prompts(config)
    profile = measured.profile
    knobs = config.knobs
    rounds = max(0, knobs.round_count - rounds_done)
    seats = [
        _seat(seat, measured.seats[seat.agent_id], measured, config, rounds_done)
        for seat in config.seats
    ]
    judge_calls, judge_usd = 0, 0.0
    judge: float | None = 0.0
    if config.judge is not None and profile.judge_calls:
        played = RunCostEstimate(rounds, seats, 0, 0.0, 0.0).rounds_played
        judge_calls = round(profile.judge_calls * played)
        judge = price_call(
            config.judge.provider,
            config.judge.model,
            input_tokens=chars_to_tokens(profile.judge_prompt_chars),
            output_tokens=JUDGE_OUTPUT_TOKENS,
        )
        judge_usd = 0.0 if judge is None else judge * judge_calls
    parts = [s.usd for s in seats] + [None if judge is None else judge_usd]
    total = None if any(p is None for p in parts) else sum(p or 0.0 for p in parts)
    estimate = RunCostEstimate(
        rounds=rounds,
        seats=seats,
        judge_calls=judge_calls,
        judge_usd=None if judge is None else judge_usd,
        total_usd=total,
    )
    estimate.assumptions.extend(_assumptions(config, measured, estimate, rounds_done))
    return estimate


def _assumptions(
    config: RunConfig, measured: Measured, estimate: RunCostEstimate, done: int
) -> list[str]:
    p = measured.profile
    first = next(iter(measured.seats.values()))
    sizes = ", ".join(
        f"{agent_id} {s.system_tokens}+{s.tools_tokens}+{s.briefing_tokens}"
        for agent_id, s in measured.seats.items()
    )
    ahead = measured.postmortems[done:]
    held = sum(ahead)
    if not held:
        postmortem = "no postmortem"
    else:
        which = "each postmortem" if held == len(ahead) else f"each of {held} postmortems"
        postmortem = (
            f"{p.postmortem_requests:g} in {which} ({first.postmortem_tokens} tokens briefed; "
            f"{p.postmortem_reason})"
        )
    words = {"write": "reads and writes", "read": "reads", None: "none"}
    cached = [f"{s.agent_id} {words[_cache_mode(s)]}" for s in config.seats]
    cap = config.limits.max_agent_turns
    wanted = round(sum(r.total for r in measured.rounds[done:]))
    rounds = estimate.rounds
    turns = f"turn cap: at most {cap} requests per seat, where the {rounds} rounds take {wanted}"
    if any(s.turn_capped for s in estimate.seats):
        priced = [
            *(["their judge calls"] if config.judge is not None and p.judge_calls else []),
            *(["a postmortem only where one is reached"] if held else []),
        ]
        turns += (
            f": the seats play about {estimate.rounds_played:.1f} rounds, and only those are "
            "priced" + (f" ({', and '.join(priced)})" if priced else "")
        )
    lines = [
        f"prompts measured at {CHARS_PER_TOKEN:g} characters per token: system + tools + "
        f"round briefing tokens per seat: {sizes}",
        f"per seat: {p.main_requests:g} requests in a round's main phase ({p.reason}); "
        f"{postmortem}",
        f"each answer {p.output_tokens} tokens, plus reasoning at each seat's thinking level "
        f"(at most max_tokens); each cycle adds {p.added_tokens} more to the history",
        turns,
        "cache (a request reads its previous request's prompt): " + ", ".join(cached),
    ]
    thinking = [
        f"{s.agent_id} {s.model_settings['thinking']} "
        f"(+{THINKING_TOKENS.get(s.model_settings['thinking'], 0)} tokens an answer)"
        for s in config.seats
        if s.model_settings.get("thinking") not in (None, False)
    ]
    if thinking:
        lines.append("reasoning: " + ", ".join(thinking))
    if measured.unmeasured:
        lines.append(measured.unmeasured)
    if config.judge is not None:
        lines.append(
            f"judge: {p.judge_calls:g} calls per round played of "
            f"{chars_to_tokens(p.judge_prompt_chars)} input and {JUDGE_OUTPUT_TOKENS} output "
            "tokens, uncached"
        )
    return lines


@dataclass(frozen=True)
class LeastRequest:
    """The least worst case any seat's request reserves against a spend cap (a floor, USD).

    Attributes:
        agent_id: The seat whose request it is.
        provider: Its provider.
        model: Its model.
        input_tokens: A floor of the request's input bound: its system prompt's UTF-8 bytes
            plus :data:`~glossogen.engine.FRAMING_TOKENS` (every request carries both).
        max_tokens: Its output cap (the seat's ``max_tokens``, else the default under a cap).
        usd: That request's worst case (``glossogen.engine.worst_case_usd``).
    """

    agent_id: str
    provider: str
    model: str
    input_tokens: int
    max_tokens: int
    usd: float


def least_request(config: RunConfig) -> LeastRequest | None:
    """The cheapest worst case a billed seat's request of ``config`` reserves under a cap.

    A run whose hard cap is below it is refused at its first request, whichever seat sends
    it: the cap's reservation (``glossogen.engine._spend``) bounds a request's input by its
    whole body, which holds at least the seat's system prompt, plus the framing allowance, and
    its output by ``max_tokens``. None when no seat is billed or a model is not priced.
    """
    scenario = load_scenario(config.scenario)(config.knobs)
    prompts = {a.agent_id: scenario.system_prompt(a) for a in scenario.agents()}
    least: LeastRequest | None = None
    for seat in config.seats:
        if seat.provider in ("scripted", "local"):
            continue
        tokens = FRAMING_TOKENS + len(prompts[seat.agent_id].encode())
        max_tokens = seat.model_settings.get("max_tokens") or DEFAULT_MAX_TOKENS
        long_cache = seat.model_settings.get("cache") in LONG_CACHE
        usd = worst_case_usd(seat.provider, seat.model, tokens, max_tokens, long_cache)
        if usd is None:
            return None
        if least is None or usd < least.usd:
            least = LeastRequest(seat.agent_id, seat.provider, seat.model, tokens, max_tokens, usd)
    return least
