"""The in-run judge: rules on one action, scripted offline or through a pydantic-ai agent."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, Field

from glossogen.engine._faults import MAX_ATTEMPTS, backoff_seconds, classify
from glossogen.eventlog import AgentRunCycleFailed, Event, JudgeCalled
from glossogen.pricing import price_answered, price_usage
from glossogen.scenario import JudgeDecision


class JudgeRuling(BaseModel):
    """What an LLM judge must answer: a boolean and a one-line reason."""

    success: bool = Field(description="True when the action does what the instructions require.")
    reason: str = Field(description="One sentence explaining the ruling.")


class RunJudge:
    """The judge of one run. Under ``provider="scripted"`` the scenario's check decides.

    Every ruling is logged as ``judge_called`` with its usage and USD cost (null when the model
    is not in the price catalogue). An attempt that fails after the model answered (its answer
    failed validation) still logs what it cost, on its ``agent_run_cycle_failed``.

    The run's spend cap binds the judge as it binds the agents: once ``call_allowed()`` says
    no, no judge request is made; the ruling is refused (``capped_in_round``: the round is void
    for the cap, and the run ends ``incomplete`` with the cap's reason).
    """

    def __init__(
        self,
        model: str,
        provider: str,
        model_settings: dict[str, Any],
        emit: Callable[[Event], None],
        capabilities: list[Any] | None = None,
        pause: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        """Set up the judge; the LLM agent is built on first use.

        ``pause`` waits on the run's clock between retries of a failed call.
        """
        self.capabilities = capabilities or []
        self.pause = pause or asyncio.sleep
        self.failed_in_round = False
        """True once a ruling of the current round failed after every retry."""
        self.capped_in_round = False
        """True once a ruling of the current round was refused by the run's spend cap."""
        self.call_allowed: Callable[[], bool] = lambda: True
        """False once the run's spend cap is reached (set by the session)."""
        self.model = model
        self.provider = provider
        self.model_settings = model_settings
        self.emit = emit
        self._agent: Any = None

    async def rule(
        self, question: str, instructions: str, scripted: Callable[[], JudgeDecision]
    ) -> JudgeDecision:
        """Return the ruling on ``question`` and log it."""
        if self.provider == "scripted":
            decision = scripted()
            self.emit(
                JudgeCalled(
                    model=self.model,
                    provider=self.provider,
                    instructions=instructions,
                    question=question,
                    success=decision.success,
                    reason=decision.reason,
                    cost_usd=0.0,
                )
            )
            return decision
        from pydantic_ai import Agent

        from glossogen.models import build_model

        if self._agent is None:
            self._agent = Agent(
                build_model(self.provider, self.model),
                output_type=JudgeRuling,
                name="judge",
                capabilities=self.capabilities,
                instructions="You are an impartial judge. Rule only on what the text shows.",
            )
        from pydantic_ai.usage import RunUsage

        from glossogen.tracing import agent_attributes

        settings = {"max_retries": 0, **self.model_settings}
        result = None
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if not self.call_allowed():  # the run's spend cap: no new judge request
                self.capped_in_round = True
                return JudgeDecision(False, "no ruling: the run's spend cap was reached")
            usage = RunUsage()  # what this attempt's answered requests used, even if it fails
            try:
                with agent_attributes("judge", "judge", self.model, self.provider):
                    result = await self._agent.run(
                        f"{instructions}\n\n{question}", model_settings=settings, usage=usage
                    )
                break
            except Exception as exc:  # a judge that fails must not be blamed on an agent
                fault = classify(exc)
                self.emit(
                    AgentRunCycleFailed(
                        agent_id="judge",
                        error_kind=fault.kind,
                        error=f"{type(exc).__name__}: {exc}"[:500],
                        attempts=attempt,
                        retryable=fault.retryable,
                        retry_after_seconds=fault.retry_after,
                        input_tokens=usage.input_tokens,
                        output_tokens=usage.output_tokens,
                        cost_usd=price_answered(self.provider, self.model, usage),
                    )
                )
                if not fault.retryable or attempt == MAX_ATTEMPTS:
                    self.failed_in_round = True
                    return JudgeDecision(False, f"judge unavailable ({fault.kind}); round void")
                await self.pause(backoff_seconds(attempt, fault, random.Random(attempt)))
        assert result is not None
        usage = result.usage
        ruling: JudgeRuling = result.output
        self.emit(
            JudgeCalled(
                model=self.model,
                provider=self.provider,
                instructions=instructions,
                question=question,
                success=ruling.success,
                reason=ruling.reason,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cost_usd=price_usage(self.provider, self.model, usage),
            )
        )
        return JudgeDecision(ruling.success, ruling.reason)
