"""The one table of providers: environment variables, pydantic-ai prefix, billing and weights.

Adding a provider that pydantic-ai and genai-prices already support takes one ``Provider`` value
and one ``PROVIDER_SPECS`` row (plus the pydantic-ai extra for its SDK in ``pyproject.toml``).
Weights classes follow the spec's Providers table (``running-simulations.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal


class Provider(StrEnum):
    """Every provider an agent can run under (``--provider`` and ``model_overrides``)."""

    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    GOOGLE_GLA = "google-gla"
    XAI = "xai"
    GROQ = "groq"
    MISTRAL = "mistral"
    DEEPSEEK = "deepseek"
    OPENROUTER = "openrouter"
    OLLAMA = "ollama"
    SELF_HOSTED = "self-hosted"
    SCRIPTED = "scripted"
    LOCAL = "local"


Weights = Literal["open", "closed", "unclassified"]


@dataclass(frozen=True)
class ProviderSpec:
    """One provider's row.

    Attributes:
        env_vars: Variables it reads; a tuple inside the tuple means "any one of these".
        pydantic_ai_prefix: The provider part of a pydantic-ai model string, or "" for ours.
        billed: False where tokens are priced at zero (local and self-hosted GPUs, scripted).
        weights: Feeds the export's ``model_class``: ``unclassified`` (an empty cell) for a
            provider serving both kinds, or running no model with weights (``scripted``).
        genai_prices_id: The provider id genai-prices knows it by, or None.
    """

    env_vars: tuple[str | tuple[str, ...], ...]
    pydantic_ai_prefix: str
    billed: bool
    weights: Weights
    genai_prices_id: str | None


PROVIDER_SPECS: dict[Provider, ProviderSpec] = {
    Provider.ANTHROPIC: ProviderSpec(
        ("ANTHROPIC_API_KEY",), "anthropic", True, "closed", "anthropic"
    ),
    Provider.OPENAI: ProviderSpec(("OPENAI_API_KEY",), "openai", True, "closed", "openai"),
    Provider.GOOGLE_GLA: ProviderSpec(
        (("GOOGLE_API_KEY", "GEMINI_API_KEY"),), "google", True, "closed", "google"
    ),
    Provider.XAI: ProviderSpec(("XAI_API_KEY",), "xai", True, "closed", "x-ai"),
    Provider.GROQ: ProviderSpec(("GROQ_API_KEY",), "groq", True, "open", "groq"),
    Provider.MISTRAL: ProviderSpec(
        ("MISTRAL_API_KEY",), "mistral", True, "unclassified", "mistral"
    ),
    Provider.DEEPSEEK: ProviderSpec(("DEEPSEEK_API_KEY",), "deepseek", True, "open", "deepseek"),
    Provider.OPENROUTER: ProviderSpec(
        ("OPENROUTER_API_KEY",), "openrouter", True, "unclassified", "openrouter"
    ),
    Provider.OLLAMA: ProviderSpec(("OLLAMA_BASE_URL",), "ollama", False, "open", None),
    Provider.SELF_HOSTED: ProviderSpec(
        ("SELF_HOSTED_BASE_URLS", "SELF_HOSTED_API_KEY"), "openai", False, "open", None
    ),
    # Scripted seats are policies, not models with weights (the spec's table does not list the
    # provider): their model_class is empty. A local seat runs a real open-weight GGUF model.
    Provider.SCRIPTED: ProviderSpec((), "", False, "unclassified", None),
    Provider.LOCAL: ProviderSpec((), "", False, "open", None),
}

SIMULATION_PROVIDERS: tuple[str, ...] = tuple(p.value for p in PROVIDER_SPECS)
"""Every value ``--provider`` accepts, derived from ``PROVIDER_SPECS``."""

JUDGE_PROVIDERS: tuple[str, ...] = ("anthropic", "huggingface", "openai")
"""Providers an LLM judge may run under (``judge_provider``, ``evaluate --provider``)."""

DEFAULT_JUDGE = ("claude-haiku-4-5", "anthropic")
"""The judge (model, provider) when not every agent is scripted and no knob names one."""


class UnknownProviderError(ValueError):
    """A provider name that is not in the catalogue."""


def provider(name: str) -> Provider:
    """Return the ``Provider`` called ``name``.

    Raises:
        UnknownProviderError: when ``name`` is not a known provider (the message lists them).
    """
    try:
        return Provider(name)
    except ValueError:
        raise UnknownProviderError(
            f"unknown provider {name!r} (known: {', '.join(SIMULATION_PROVIDERS)})"
        ) from None


def missing_env_vars(name: Provider, environ: dict[str, str]) -> list[str]:
    """Return the variables ``name`` needs that ``environ`` lacks (an "any of" group as ``A|B``)."""
    missing: list[str] = []
    for var in PROVIDER_SPECS[name].env_vars:
        group = var if isinstance(var, tuple) else (var,)
        if not any(environ.get(v) for v in group):
            missing.append("|".join(group))
    return missing
