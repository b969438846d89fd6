"""What the judged metrics share: one judge call per round, and the all-failed refusal."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from glossogen.evaluation._contract import MetricContext, MetricFailed, NotApplicable
from glossogen.evaluation._judge import Replicas
from glossogen.evaluation.metrics._observe import by_round
from glossogen.eventlog import MessageSent
from glossogen.pricing import add_costs

T = TypeVar("T", bound=BaseModel)


async def judge_each_round(
    ctx: MetricContext,
    instructions: str,
    prompt: Callable[[list[MessageSent]], str],
    output_type: type[T],
    unusable: Callable[[list[MessageSent], T], str | None] | None = None,
) -> tuple[dict[int, list[MessageSent]], list[Replicas[T]], float | None]:
    """Ask the judge about each round's primary-channel messages, all rounds concurrently.

    ``unusable`` says why the metric cannot use a round's well-formed answer (None: it can):
    such an answer is a failed call, priced, and never kept in the judge cache.

    Returns:
        ``(messages by round, one Replicas per round in the same order, USD spend)``; the spend
        is None when some call was not costed.

    Raises:
        MetricFailed: no judge was given.
        NotApplicable: the run has no message on its primary channels in phase ``main``.
    """
    judge = ctx.judge
    if judge is None:
        raise MetricFailed("needs a judge (model, provider)")
    rounds = by_round(ctx.run.messages)
    if not rounds:
        raise NotApplicable("no message on the primary channels in phase main")
    answers = await asyncio.gather(
        *(
            judge.ask(
                instructions,
                prompt(ms),
                output_type,
                ctx.judge_replicas,
                None if unusable is None else functools.partial(unusable, ms),
            )  # fmt: skip
            for ms in rounds.values()
        )
    )
    return rounds, list(answers), add_costs([a.cost_usd for a in answers])


def every_call_failed(answers: Sequence[Replicas[Any]], cost: float | None) -> MetricFailed:
    """The failure of a judged metric none of whose calls answered (names the first error)."""
    errors = [e for a in answers for e in a.errors]
    return MetricFailed(
        "every judge call failed" + (f" (first: {errors[0]})" if errors else ""), cost
    )
