"""How the run engine seats an agent: its pydantic-ai agent, model, hooks and scripted policy.

:class:`Seating` owns the seats' runners and takes what it needs of the run as explicit values
(the scenario, the setup, where the run is, the clock, the request ledger, the spend cap, the
core tools). Rules: a seat's agent gets the core tools plus the scenario tools its spec allows; a
scenario tool acts in the main phase only; a hosted model's request is opened in the run's
:class:`~glossogen.engine.RequestLedger` before it is sent, so it ends in the log in exactly one
way whatever cuts its seat off (:mod:`glossogen.engine._requests`); a scripted seat plays
the scenario's ``scripted_move`` after its ``scripted_latency_seconds`` on the game clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.capabilities import Hooks
from pydantic_ai.capabilities.abstract import WrapModelRequestHandler
from pydantic_ai.exceptions import SkipToolExecution
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models import Model, ModelRequestContext
from pydantic_ai.tools import ToolDefinition

from glossogen.engine._agent import AgentRunner
from glossogen.engine._fingerprint import request_fingerprint
from glossogen.engine._requests import UNBILLED
from glossogen.engine._roster import Seat
from glossogen.scenario import AgentDeps, AgentSpec, ScriptedMove, ScriptedView
from glossogen.tracing import TracingHandle, tracing_capabilities

if TYPE_CHECKING:
    import random
    from collections.abc import Mapping

    from glossogen.engine._clock import Clock
    from glossogen.engine._position import Position
    from glossogen.engine._requests import RequestLedger
    from glossogen.engine._spend import SpendReservations
    from glossogen.engine._state import RunState
    from glossogen.scenario import Scenario


class SeatSetup(Protocol):
    """What seating reads of the run's :class:`~glossogen.engine.RunSetup`."""

    tracing: TracingHandle | None
    agent_models: dict[str, Model]
    run_id: str
    max_agent_turns: int


@dataclass(eq=False)
class Seating:
    """Build each seat's agent, model, hooks and scripted view; own the seats' runners.

    Built from the run's parts; no seat is built until :meth:`seat`.
    """

    scenario: Scenario
    setup: SeatSetup
    position: Position
    clock: Clock
    requests: RequestLedger
    spend: SpendReservations
    rng: Callable[..., random.Random]
    tool_calls: Mapping[str, int] = field(default_factory=dict)
    """Each seat's scripted call ids so far (a resume's, from its state)."""
    misplayed: frozenset[int] = field(init=False)
    specs: dict[str, AgentSpec] = field(init=False)
    runners: dict[str, AgentRunner] = field(init=False, default_factory=dict)
    """Each seat's runner, by agent id, in seat order."""
    tools: list[Tool[AgentDeps]] = field(init=False, default_factory=list)
    """The core tools every seat's agent gets."""
    scenario_tools: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        """Read the scenario's seats, its tools and the rounds its scripted seats misplay."""
        self.misplayed = self.scenario.misplayed_rounds()
        self.specs = {spec.agent_id: spec for spec in self.scenario.agents()}
        self.scenario_tools = frozenset(t.name for t in self.scenario.tools())

    def seat(self, seats: list[Seat], tools: list[Tool[AgentDeps]]) -> None:
        """Build a runner for each of ``seats``; every agent gets ``tools`` (the core tools)."""
        self.tools = list(tools)
        for seat in seats:
            self.runners[seat.agent_id] = self._make_runner(seat)

    def restore(self, state: RunState) -> None:
        """Continue each seat from ``state``: its history, cycles and requests made."""
        for agent_id, runner in self.runners.items():
            runner.history = list(state.histories.get(agent_id, []))
            runner.logged = list(runner.history)
            runner.turns = state.turns.get(agent_id, 0)
            runner.made = max(runner.turns, state.made.get(agent_id, 0))
            runner.out = runner.made >= self.setup.max_agent_turns

    @property
    def any_agent_failed(self) -> bool:
        """True when some agent was taken out by failures (not by its turn limit)."""
        return any(r.out and r.failures for r in self.runners.values())

    @property
    def out_of_turns(self) -> list[str]:
        """Seats taken out by ``max_agent_turns`` (they make no more requests in this run)."""
        limit = self.setup.max_agent_turns
        return [r.spec.agent_id for r in self.runners.values() if r.out and r.made >= limit]

    @property
    def every_agent_out(self) -> bool:
        """True when no agent can take part any more (turn limit or repeated failures)."""
        return all(r.out for r in self.runners.values())

    def swap(self, agent_id: str, provider: str, model: str) -> None:
        """Play ``agent_id`` with ``model`` of ``provider`` from its next request on."""
        runner = self.runners[agent_id]
        runner.agent = self.agent(runner.spec, provider, model)
        runner.model, runner.provider = model, provider

    def agent(self, spec: AgentSpec, provider: str, model: str) -> Agent[AgentDeps, str]:
        """Build the pydantic-ai agent of a seat: its model, instructions and allowed tools."""
        allowed = set(spec.tools)
        tools: list[Tool[AgentDeps]] = [*self.tools]
        tools += [t for t in self.scenario.tools() if t.name in allowed]
        return Agent(
            self._model_for(spec.agent_id, provider, model),
            deps_type=AgentDeps,
            instructions=self.scenario.system_prompt(spec),
            tools=tools,
            name=spec.agent_id,
            capabilities=[
                *tracing_capabilities(self.setup.tracing),
                self._hooks(spec.agent_id, provider, model),
                self.spend.hooks(spec.agent_id, provider, model),  # inside: wraps the HTTP call
                self.requests.hooks(),  # innermost: logs model_request_sent before it goes
            ],
        )

    def _hooks(self, agent_id: str, provider: str, model: str) -> Hooks[AgentDeps]:
        """The engine's hooks around one seat's tool calls and model requests.

        - A tool that ran is remembered with its result, so a phase end that cuts the cycle off
          still hands the agent (and the log) what the tool returned.
        - A scenario tool acts in the main phase only (the verdicts are read when it ends): in
          the postmortem it is not run, and the model is told so (logged as ``refused``).
        - A hosted model's request is opened in the run's ledger before it is sent: one the
          phase end cuts off finishes in the background and is logged as
          ``model_request_abandoned`` with what it cost.
        """

        async def before_tool_execute(
            ctx: RunContext[AgentDeps], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any
        ) -> Any:
            phase = self.position.phase
            if call.tool_name in self.scenario_tools and phase != "main":
                reason = (
                    f"{call.tool_name} has no effect in the {phase}: round "
                    f"{self.position.round_number} was already scored; nothing was done"
                )
                result = {"status": "refused", "reason": reason}
                runner = self.runners[agent_id]
                runner.returned[call.tool_call_id] = result
                runner.refused[call.tool_call_id] = reason
                raise SkipToolExecution(result)
            return args

        async def after_tool_execute(
            ctx: RunContext[AgentDeps],
            *,
            call: ToolCallPart,
            tool_def: ToolDefinition,
            args: Any,
            result: Any,
        ) -> Any:
            self.runners[agent_id].returned[call.tool_call_id] = result
            return result

        return Hooks[AgentDeps](
            before_tool_execute=before_tool_execute,
            after_tool_execute=after_tool_execute,
            model_request=self.watched(agent_id, model, provider),
        )

    def watched(self, agent_id: str, model: str, provider: str) -> Any:
        """A ``wrap_model_request`` hook that opens each billed request in the run's ledger.

        The request is in the ledger before it is sent, and ends in the log in exactly one way
        (:mod:`glossogen.engine._requests`); a cancellation does not drop it.
        """

        async def wrap_model_request(
            ctx: RunContext[Any],
            *,
            request_context: ModelRequestContext,
            handler: WrapModelRequestHandler,
        ) -> ModelResponse:
            if provider in UNBILLED:  # on this process's clock, not billed
                if (runner := self.runners.get(agent_id)) is not None:  # logged with its answer
                    runner.asking = False
                    runner.sent_sha256 = request_fingerprint(
                        request_context.messages, request_context.model_request_parameters
                    )
                return await handler(request_context)
            runner = self.runners.get(agent_id)  # the judge has none: the ledger counts its calls
            call = runner.turns if runner is not None else None
            sender = (agent_id, model, provider, self.position.round_number, call)
            # No game time passes while the seat waits for its answer. A failed call keeps the
            # hold until the seat's cycle has logged the failure (AgentRunner.held), so another
            # seat's sleep cannot end the phase in between. A call the phase end cut off is no
            # longer waited for: game time goes on while it finishes in the background.
            release: Callable[[], None] | None = self.clock.hold()
            try:
                return await self.requests.send(handler(request_context), sender)
            except Exception:
                if agent_id in self.runners and release is not None:
                    self.runners[agent_id].held.append(release)
                    release = None
                raise
            finally:
                if release is not None:
                    release()

        return wrap_model_request

    def _make_runner(self, seat: Seat) -> AgentRunner:
        spec = self.specs[seat.agent_id]
        agent = self.agent(spec, seat.provider, seat.model)
        runner = AgentRunner(
            spec,
            agent,
            seat.model,
            seat.provider,
            seat.model_settings,
            cache_key=f"{self.setup.run_id}:{spec.agent_id}",
        )
        runner.tool_calls = self.tool_calls.get(spec.agent_id, 0)
        return runner

    def _model_for(self, agent_id: str, provider: str, model: str) -> Model:
        from glossogen.models import build_model, scripted_model

        if agent_id in self.setup.agent_models:
            return self.setup.agent_models[agent_id]
        if provider != "scripted":
            return build_model(provider, model)

        async def policy() -> ScriptedMove:
            await self.clock.sleep(self.scenario.scripted_latency_seconds)
            return self.scenario.scripted_move(self.scripted_view(agent_id))

        runner = self.runners.get(agent_id)  # a swap continues the seat's call ids
        calls = runner.tool_calls if runner is not None else self.tool_calls.get(agent_id, 0)
        return scripted_model(model, agent_id, policy, calls)

    def scripted_view(self, agent_id: str) -> ScriptedView:
        """Return what ``agent_id`` has seen this phase, for its scripted policy."""
        runner = self.runners[agent_id]
        phase: Literal["main", "postmortem"] = (
            "postmortem" if self.position.phase == "postmortem" else "main"
        )
        round_number = self.position.round_number
        return ScriptedView(
            agent_id=agent_id,
            round_number=round_number,
            phase=phase,
            observations=list(runner.observations),
            misplay=round_number in self.misplayed,
            turn=runner.phase_turns,
            rng=self.rng("scripted", agent_id, phase, runner.phase_turns),
        )
