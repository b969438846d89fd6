"""The evaluation judge: a pydantic-ai agent asked the same question ``replicas`` times.

Hosted judges are built with :func:`glossogen.models.build_model`, so every request takes a slot
of the per-provider call gate that simulations use. Each call is priced with genai-prices
(:func:`glossogen.pricing.price_usage`); a model the catalogue lacks makes the spend None (not
costed), never 0. A failed call (HTTP error, malformed output) is one failed replica, not an
exception: the metric decides what every replica failing means. A replica whose answers failed
validation still costs what its answered requests used.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from glossogen import exit_codes
from glossogen.catalog import JUDGE_PROVIDERS
from glossogen.evaluation._contract import JudgeInfo
from glossogen.evaluation._run import EvaluationError
from glossogen.knobs import JudgeModelSettings, parse_overrides
from glossogen.pricing import add_costs, price_answered, price_usage
from glossogen.refusals import Refusal
from glossogen.rejudge._cache import JudgeCache, cache_key

T = TypeVar("T", bound=BaseModel)

JUDGE_ENV_VARS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "huggingface": "HF_TOKEN",
}
"""The key each judge provider needs (environment or the nearest ``.env``)."""


_PYDANTIC_REASONS = {
    "float_parsing": "not a number",
    "float_type": "not a number",
    "int_parsing": "not an integer",
    "int_type": "not an integer",
    "int_from_float": "not an integer",
    "bool_parsing": "not true or false",
    "bool_type": "not true or false",
}
"""Short reasons for pydantic's type errors (bounds errors say their limit, see ``_reason``)."""


def _reason(error: Any) -> str:
    """Return one short reason for a pydantic error of one setting."""
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind in _PYDANTIC_REASONS:
        return _PYDANTIC_REASONS[kind]
    bounds = {
        "greater_than_equal": ("at least", "ge"),
        "greater_than": ("more than", "gt"),
        "less_than_equal": ("at most", "le"),
        "less_than": ("less than", "lt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"must be {words} {ctx.get(key)}"
    if kind in ("literal_error", "enum") and "expected" in ctx:
        return f"must be {ctx['expected']}"
    return str(error["msg"]).lower()


def _bad_setting(shown: str, reason: str) -> EvaluationError:
    """The refusal of one ``judge_settings`` item (64), naming it and its value."""
    refused = Refusal(field="judge_settings", value=shown, reason=reason)
    return EvaluationError(refusal=refused, exit_code=int(exit_codes.USAGE))


def parse_judge_settings(items: list[str]) -> dict[str, Any]:
    """Parse ``--judge-settings`` ``key=value`` items into pydantic-ai ``ModelSettings``.

    Values parse as JSON (``temperature=0`` is a number), then validate against the
    ``judge_model_settings`` knob model, so the same names and bounds apply. Every refusal
    names the item and its value: ``--judge-settings temperature='banana': not a number``.

    Returns:
        Only the settings given (``{"temperature": 0.0}``).

    Raises:
        EvaluationError: 64 (usage) for an item that is not ``key=value``, names an unknown
            setting, or has a value of the wrong type or out of bounds.
    """
    from glossogen.knobs import ConfigError

    usage = int(exit_codes.USAGE)
    raw_text: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise _bad_setting(repr(item), "not key=value")
        raw_text[key.strip()] = value
    known = list(JudgeModelSettings.model_fields)
    for key, value in raw_text.items():
        if key not in known:
            raise _bad_setting(f"{key}={value!r}", f"unknown setting (known: {', '.join(known)})")
    try:
        raw = parse_overrides(items)
    except ConfigError as exc:  # malformed JSON value, e.g. temperature=[1
        raise EvaluationError(
            refusal=Refusal(field="judge_settings", reason=str(exc), colon=True), exit_code=usage
        ) from None
    try:
        settings = JudgeModelSettings.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = str(first["loc"][0]) if first["loc"] else "?"
        shown = f"{key}={raw_text[key]!r}" if key in raw_text else key
        raise _bad_setting(shown, _reason(first)) from None
    return {k: v for k, v in settings.model_dump().items() if k in raw and v is not None}


def check_judge_provider(provider: str) -> None:
    """Refuse a judge provider outside ``JUDGE_PROVIDERS`` (exit 64, naming the allowed ones)."""
    if provider not in JUDGE_PROVIDERS:
        judges = ", ".join(JUDGE_PROVIDERS)
        raise EvaluationError(
            refusal=Refusal(
                field="provider", reason=f"{provider!r} cannot judge (judge providers: {judges})"
            ),
            exit_code=int(exit_codes.USAGE),
        )


def build_judge_model(provider: str, model: str) -> Any:
    """Return the pydantic-ai model of a judge; each request takes an ``llm:<provider>`` slot.

    Raises:
        ImportError: the provider's SDK is not installed (``huggingface`` needs the
            ``pydantic-ai-slim[huggingface]`` extra).
    """
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

    def __init__(
        self,
        model: str,
        provider: str,
        settings: dict[str, Any] | None = None,
        answers: JudgeCache | None = None,
    ) -> None:
        self.model = model
        self.provider = provider
        self.settings = dict(settings or {})
        self.answers = answers
        """The judge cache asked first (``--judge-cache``): a hit costs $0 and sends nothing."""
        self._model: Any = None

    @property
    def info(self) -> JudgeInfo:
        """The ``judge`` block of the report."""
        return JudgeInfo(model=self.model, provider=self.provider, settings=self.settings)

    async def ask(
        self,
        instructions: str,
        prompt: str,
        output_type: type[T],
        replicas: int,
        unusable: Callable[[T], str | None] | None = None,
    ) -> Replicas[T]:
        """Ask ``prompt`` ``replicas`` times, concurrently; return every answer and the spend.

        ``unusable`` says why the metric cannot use a well-formed answer (None: it can). Such an
        answer is a failed replica (still priced: it was answered) and is never kept in the
        judge cache, so a later evaluation asks again instead of failing on it again; an entry
        kept before that is unusable counts as a miss and is asked again.

        Returns:
            The structured outputs (None for a failed call), the USD spend of the calls that
            answered (None when one was not costed) and one line per failure.
        """
        from pydantic_ai import Agent

        from glossogen.models import request_model_settings

        if self._model is None:
            self._model = build_judge_model(self.provider, self.model)
        agent = Agent(self._model, output_type=output_type, instructions=instructions, retries=1)

        def _usable(output: dict[str, Any]) -> bool:
            """True when a kept answer still reads as ``output_type`` and the metric can use it."""
            try:
                answer = output_type.model_validate(output)
            except ValidationError:
                return False
            return unusable is None or unusable(answer) is None

        async def once(replica: int) -> tuple[T | None, float | None, str | None]:
            from pydantic_ai.usage import RunUsage

            key = ""
            if self.answers is not None:  # replica n of a question: its own entry
                key = cache_key(self.model, self.provider, self.settings, instructions,
                                [prompt], output_type.__name__, replica)  # fmt: skip
                kept = self.answers.get(key, accept=lambda output: _usable(output))
                if kept is not None:
                    return output_type.model_validate(kept["output"]), 0.0, None
            usage = RunUsage()  # counts every answered request, also of a replica that fails
            try:
                settings = (
                    request_model_settings(self.settings, self.provider, conversation=False)
                    if self.settings
                    else None
                )
                result = await agent.run(prompt, model_settings=settings, usage=usage)
            except Exception as exc:  # noqa: BLE001 (a failed replica is data, not a crash)
                # Its answers were billed though unusable (output failing validation).
                return None, price_answered(self.provider, self.model, usage), _one_line(exc)
            why = unusable(result.output) if unusable is not None else None
            if why is not None:  # answered and billed, but nothing the metric can use
                return None, price_usage(self.provider, self.model, result.usage), why
            if self.answers is not None:
                self.answers.put(
                    key, result.output.model_dump(mode="json"), self.model, self.provider
                )
            return result.output, price_usage(self.provider, self.model, result.usage), None

        answers = await asyncio.gather(*(once(n) for n in range(replicas)))
        return Replicas(
            outputs=[a[0] for a in answers],
            cost_usd=add_costs([a[1] for a in answers]),
            errors=[a[2] for a in answers if a[2]],
        )
