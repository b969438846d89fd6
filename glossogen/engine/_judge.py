"""The in-run judge: rules on one action, scripted offline or through a pydantic-ai agent."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from glossogen.engine._faults import MAX_ATTEMPTS, backoff_seconds, classify, cost_of_failed
from glossogen.engine._requests import asking
from glossogen.engine._runner import SpendCapReached
from glossogen.eventlog import AgentRunCycleFailed, Event, JudgeCalled
from glossogen.pricing import price_answered, price_usage
from glossogen.rejudge._cache import JudgeCache, cache_key
from glossogen.scenario import ItemRuling, JudgeDecision

_Out = TypeVar("_Out", bound=BaseModel)


JUDGE_SYSTEM = "You are an impartial judge. Rule only on what the text shows."
"""The in-run judge's system prompt (``glossogen rejudge --judge-prompt`` puts another)."""

SPEND_CAP = "spend_cap"
"""What :meth:`RunJudge._ask` returns instead of asking once the run's spend cap is reached."""


def _unavailable(why: str) -> str:
    """The ruling's reason when no answer came: the spend cap, or the judge's fault kind."""
    if why == SPEND_CAP:
        return "no ruling: the run's spend cap was reached"
    return f"judge unavailable ({why}); round void"


class JudgeRuling(BaseModel):
    """What an LLM judge must answer: a boolean and a one-line reason."""

    success: bool = Field(description="True when the action does what the instructions require.")
    reason: str = Field(description="One sentence explaining the ruling.")


class RunJudge:
    """The judge of one run. Under ``provider="scripted"`` the scenario's check decides.

    Every ruling is logged as ``judge_called`` with its usage and USD cost (null when the model
    is not in the price catalogue). An attempt that fails after the model answered (its answer
    failed validation) still logs what it cost, on its ``agent_run_cycle_failed``. Each
    attempt's requests are filed with it in the run's request ledger (:func:`asking`) and
    settled by that one event; an attempt cut off (a phase end cancels the tool that asked)
    leaves them to the ledger, which logs each as ``model_request_abandoned``.

    The run's spend cap binds the judge as it binds the agents: each request's worst case is
    reserved before it is sent (:class:`~glossogen.engine._spend.SpendReservations`, a
    capability of the judge's agent), and once the cap refuses one, or ``call_allowed()`` says
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
        cache_key: str | None = None,
        model_override: Any = None,
        answers: JudgeCache | None = None,
        system: str = JUDGE_SYSTEM,
    ) -> None:
        """Set up the judge; the LLM agent is built on first use.

        ``pause`` waits on the run's clock between retries of a failed call; ``cache_key``
        (``<run_id>:judge``) routes its requests to one prompt cache where the provider takes
        one (:func:`~glossogen.models.request_model_settings`). ``answers`` is a judge cache
        (``--judge-cache``): a ruling it holds is logged ``cached`` at $0 with no request sent,
        one it lacks is asked and kept. ``system`` is the judge's system prompt.
        """
        self.cache_key = cache_key
        self.answers = answers
        self.system = system
        self.model_override = model_override
        """A pydantic-ai model asked instead of the one the provider builds (a replay's)."""
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
        self._agents: dict[type[BaseModel], Any] = {}

    async def rule(
        self, question: str, instructions: str, scripted: Callable[[], JudgeDecision]
    ) -> JudgeDecision:
        """Return the ruling on ``question`` and log it."""
        if self.provider == "scripted":
            decision = scripted()
            self._log(instructions, question, decision.success, decision.reason, {}, None, [])
            return decision
        answer = await self._ask(question, instructions, JudgeRuling)
        if isinstance(answer, str):
            return JudgeDecision(False, _unavailable(answer))
        ruling, usage, settled, key = answer
        self._log(instructions, question, ruling.success, ruling.reason, {}, usage, settled,
                  cached=key)  # fmt: skip
        return JudgeDecision(ruling.success, ruling.reason)

    async def rule_items(
        self,
        question: str,
        instructions: str,
        scripted: Callable[[], ItemRuling],
        expected_items: int,
    ) -> ItemRuling:
        """Return which of ``expected_items`` listed items ``question`` matches, and log it.

        The logged ``success`` is True when every item 1..``expected_items`` was matched with no
        false positive; ``detail`` holds ``matched`` and ``false_positives``. A judge that fails
        after every retry returns nothing matched and marks the round void (as :meth:`rule`).
        """
        settled: list[str] = []
        key: str | None = None
        if self.provider == "scripted":
            ruling = scripted()
        else:
            answer = await self._ask(question, instructions, ItemRuling)
            if isinstance(answer, str):
                return ItemRuling(matched=[], false_positives=0, reason=_unavailable(answer))
            ruling, usage, settled, key = answer
        ruling = ruling.within(expected_items)
        self._log(
            instructions,
            question,
            ruling.complete(expected_items),
            ruling.reason,
            {"matched": ruling.matched, "false_positives": ruling.false_positives},
            None if self.provider == "scripted" else usage,
            settled,
            cached=key,
        )
        return ruling

    def _log(
        self,
        instructions: str,
        question: str,
        success: bool,
        reason: str,
        detail: dict[str, Any],
        usage: Any,
        settled: list[str],
        cached: str | None = None,
    ) -> None:
        """Log one ruling (``judge_called``): its usage priced, the requests it settles named.

        ``cached``: the judge cache key the ruling was found under (logged ``cached`` at $0).
        """
        self.emit(
            JudgeCalled(
                cached=cached is not None,
                cache_key=cached,
                model=self.model,
                provider=self.provider,
                instructions=instructions,
                question=question,
                success=success,
                reason=reason,
                detail=detail,
                input_tokens=usage.input_tokens if usage is not None else 0,
                output_tokens=usage.output_tokens if usage is not None else 0,
                cache_read_tokens=usage.cache_read_tokens if usage is not None else 0,
                cache_write_tokens=usage.cache_write_tokens if usage is not None else 0,
                cache_write_1h_tokens=usage.cache_write_1h_tokens if usage is not None else 0,
                cost_usd=price_usage(self.provider, self.model, usage)
                if usage is not None
                else 0.0,
                request_ids=settled,
            )
        )

    async def _ask(
        self, question: str, instructions: str, output_type: type[_Out]
    ) -> tuple[_Out, Any, list[str], str | None] | str:
        """Ask the LLM judge: its answer, usage and requests, or why there is none.

        Returns the answer, usage, the ids of the requests it settled (the caller's
        ``judge_called`` names them) and the judge cache key it was found under (None: asked),
        the fault kind once it gave up, or :data:`SPEND_CAP` when the run's spend cap allows
        no request. An answer from the judge cache comes with no usage (None) and no request.
        """
        key = ""
        if self.answers is not None:
            key = cache_key(
                self.model, self.provider, self.model_settings, self.system,
                [instructions, question], output_type.__name__,
            )  # fmt: skip
            kept = self.answers.get(key)
            if kept is not None:
                return output_type.model_validate(kept["output"]), None, [], key
        from pydantic_ai import Agent
        from pydantic_ai.messages import CachePoint
        from pydantic_ai.usage import RunUsage

        from glossogen.models import build_model, request_model_settings
        from glossogen.tracing import agent_attributes

        agent: Any = self._agents.get(output_type)
        if agent is None:
            agent = self._agents[output_type] = Agent(
                self.model_override or build_model(self.provider, self.model),
                output_type=output_type,
                name="judge",
                capabilities=self.capabilities,
                instructions=self.system,
            )
        settings = request_model_settings(
            {"max_retries": 0, **self.model_settings},
            self.provider,
            self.cache_key,
            conversation=False,  # each ruling's prompt is its own: no later call extends it
        )
        # The scenario's instructions for a stage are the same for every ruling on it (each
        # vote, each attempt): cached up to them (a ``CachePoint``), the action itself not.
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if not self.call_allowed():  # the run's spend cap: no new judge request
                self.capped_in_round = True
                return SPEND_CAP
            usage = RunUsage()  # what this attempt's answered requests used, even if it fails
            # The attempt's billed requests are filed with it: the event that ends it (the
            # caller's judge_called, or agent_run_cycle_failed) logs them; one cut off (a phase
            # end cancels the asking tool) is the run ledger's.
            with asking() as asked:
                try:
                    with agent_attributes("judge", "judge", self.model, self.provider):
                        result = await agent.run(
                            [instructions, CachePoint(), question],
                            model_settings=settings,
                            usage=usage,
                        )
                except SpendCapReached:  # the cap refused one of this ruling's requests
                    self.capped_in_round = True
                    settled = asked.claim_ended()  # logged by this event, with their cost
                    if usage.input_tokens or usage.output_tokens or settled:  # some were sent
                        self.emit(
                            AgentRunCycleFailed(
                                agent_id="judge",
                                error_kind=SPEND_CAP,
                                error=(
                                    "SpendCapReached: the run's spend cap refused the next request"
                                ),
                                attempts=attempt,
                                retryable=False,
                                input_tokens=usage.input_tokens,
                                output_tokens=usage.output_tokens,
                                cost_usd=price_answered(self.provider, self.model, usage),
                                request_ids=settled,
                            )
                        )
                    return SPEND_CAP
                except Exception as exc:  # a judge that fails must not be blamed on an agent
                    fault = classify(exc)
                    settled = asked.claim_ended()  # logged by this event, with their cost
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
                            cost_usd=cost_of_failed(
                                fault,
                                bool(settled),
                                price_answered(self.provider, self.model, usage),
                            ),
                            request_ids=settled,
                        )
                    )
                else:
                    settled = asked.claim_ended()  # the caller logs judge_called at once
                    if self.answers is not None:
                        self.answers.put(
                            key, result.output.model_dump(mode="json"), self.model, self.provider
                        )
                    return result.output, result.usage, settled, None
            if not fault.retryable or attempt == MAX_ATTEMPTS:
                self.failed_in_round = True
                return fault.kind
            await self.pause(backoff_seconds(attempt, fault, random.Random(attempt)))
        raise AssertionError("unreachable: the last attempt returns")
