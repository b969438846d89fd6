"""The in-run judge: rules on one action, scripted offline or through a pydantic-ai agent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from glossogen.eventlog import Event, JudgeCalled
from glossogen.pricing import price_call
from glossogen.scenario import JudgeDecision


class JudgeRuling(BaseModel):
    """What an LLM judge must answer: a boolean and a one-line reason."""

    success: bool = Field(description="True when the action does what the instructions require.")
    reason: str = Field(description="One sentence explaining the ruling.")


class RunJudge:
    """The judge of one run. Under ``provider="scripted"`` the scenario's check decides.

    Every ruling is logged as ``judge_called`` with its usage and USD cost (null when the model
    is not in the price catalogue).
    """

    def __init__(
        self,
        model: str,
        provider: str,
        model_settings: dict[str, Any],
        emit: Callable[[Event], None],
        capabilities: list[Any] | None = None,
    ) -> None:
        """Set up the judge; the LLM agent is built on first use."""
        self.capabilities = capabilities or []
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
        from glossogen.tracing import agent_attributes

        with agent_attributes("judge", "judge", self.model, self.provider):
            result = await self._agent.run(
                f"{instructions}\n\n{question}", model_settings=self.model_settings or None
            )
        usage = result.usage
        ruling: JudgeRuling = result.output
        self.emit(
            JudgeCalled(
                model=self.model,
                provider=self.provider,
                question=question,
                success=ruling.success,
                reason=ruling.reason,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cost_usd=price_call(
                    self.provider,
                    self.model,
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    cache_read_tokens=usage.cache_read_tokens,
                    cache_write_tokens=usage.cache_write_tokens,
                ),
            )
        )
        return JudgeDecision(ruling.success, ruling.reason)
