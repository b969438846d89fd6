"""The evaluation judge: a pydantic-ai agent asked the same question ``replicas`` times.

Hosted judges are built with :func:`glossogen.models.build_model`, so every request takes a slot
of the per-provider call gate that simulations use. Each call is priced with genai-prices
(:func:`glossogen.pricing.price_usage`); a model the catalogue lacks makes the spend None (not
costed), never 0. A failed call (HTTP error, malformed output) is one failed replica, not an
exception: the metric decides what every replica failing means.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from glossogen import exit_codes
from glossogen.catalog import JUDGE_PROVIDERS
from glossogen.evaluation._contract import JudgeInfo
from glossogen.evaluation._run import EvaluationError
from glossogen.knobs import JudgeModelSettings, parse_overrides
from glossogen.pricing import add_costs, price_usage

T = TypeVar("T", bound=BaseModel)

JUDGE_ENV_VARS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "huggingface": "HF_TOKEN",
}
"""The key each judge provider needs (environment or the nearest ``.env``)."""


def parse_judge_settings(items: list[str]) -> dict[str, Any]:
    """Parse ``--judge-settings`` ``key=value`` items into pydantic-ai ``ModelSettings``.

    Values parse as JSON (``temperature=0`` is a number), then validate against the
    ``judge_model_settings`` knob model, so the same names and bounds apply.

    Returns:
        Only the settings given (``{"temperature": 0.0}``).

    Raises:
        EvaluationError: 64 for an item that is not ``key=value`` or names an unknown setting;
            65 for a value out of bounds.
    """
    from glossogen.knobs import ConfigError

    try:
        raw = parse_overrides(items)
    except ConfigError as exc:
        raise EvaluationError(f"--judge-settings: {exc}", int(exit_codes.USAGE)) from None
    unknown = sorted(set(raw) - set(JudgeModelSettings.model_fields))
    if unknown:
        raise EvaluationError(
            f"--judge-settings: unknown setting {', '.join(unknown)} "
            f"(known: {', '.join(JudgeModelSettings.model_fields)})",
            int(exit_codes.USAGE),
        )
    try:
        settings = JudgeModelSettings.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise EvaluationError(f"--judge-settings: {where}: {first['msg']}") from None
    return {k: v for k, v in settings.model_dump().items() if k in raw and v is not None}


def check_judge_provider(provider: str) -> None:
    """Refuse a judge provider outside ``JUDGE_PROVIDERS`` (exit 64, naming the allowed ones)."""
    if provider not in JUDGE_PROVIDERS:
        raise EvaluationError(
            f"--provider {provider!r} cannot judge (judge providers: {', '.join(JUDGE_PROVIDERS)})",
            int(exit_codes.USAGE),
        )


def build_judge_model(provider: str, model: str) -> Any:
    """Return the pydantic-ai model of a judge (gated for anthropic and openai).

    ``huggingface`` is a judge provider but not an agent provider, so the simulation factory
    does not know it; pydantic-ai's own ``huggingface:`` prefix builds it instead.
    """
    if provider == "huggingface":
        from pydantic_ai.models import infer_model

        return infer_model(f"huggingface:{model}")
    from glossogen.models import build_model

    return build_model(provider, model)


@dataclass
class Replicas(Generic[T]):
    """The answers of one question asked ``len(outputs)`` times (None where a call failed)."""

    outputs: list[T | None]
    cost_usd: float | None
    errors: list[str]

    @property
    def succeeded(self) -> list[T]:
        """The answers that came back, in call order."""
        return [o for o in self.outputs if o is not None]


def _one_line(exc: BaseException) -> str:
    return re.sub(r"\s+", " ", f"{type(exc).__name__}: {exc}")[:200]


class Judge:
    """An LLM judge of one evaluation: model, provider, settings.

    Args:
        model: The judge model (``claude-haiku-4-5``).
        provider: One of ``JUDGE_PROVIDERS``.
        settings: pydantic-ai ``ModelSettings`` sent with every call.
    """

    def __init__(self, model: str, provider: str, settings: dict[str, Any] | None = None) -> None:
        self.model = model
        self.provider = provider
        self.settings = dict(settings or {})
        self._model: Any = None

    @property
    def info(self) -> JudgeInfo:
        """The ``judge`` block of the report."""
        return JudgeInfo(model=self.model, provider=self.provider, settings=self.settings)

    async def ask(
        self, instructions: str, prompt: str, output_type: type[T], replicas: int
    ) -> Replicas[T]:
        """Ask ``prompt`` ``replicas`` times, concurrently; return every answer and the spend.

        Returns:
            The structured outputs (None for a failed call), the USD spend of the calls that
            answered (None when one was not costed) and one line per failure.
        """
        from pydantic_ai import Agent

        if self._model is None:
            self._model = build_judge_model(self.provider, self.model)
        agent = Agent(self._model, output_type=output_type, instructions=instructions, retries=1)

        async def once() -> tuple[T | None, float | None, str | None]:
            try:
                result = await agent.run(prompt, model_settings=self.settings or None)  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 (a failed replica is data, not a crash)
                return None, 0.0, _one_line(exc)
            return result.output, price_usage(self.provider, self.model, result.usage), None

        answers = await asyncio.gather(*(once() for _ in range(replicas)))
        return Replicas(
            outputs=[a[0] for a in answers],
            cost_usd=add_costs([a[1] for a in answers]),
            errors=[a[2] for a in answers if a[2]],
        )
