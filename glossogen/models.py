"""The pydantic-ai model factory: one ``Model`` per (provider, model), scripted included.

Scripted models are pydantic-ai ``FunctionModel``s that ask the scenario's scripted policy for
each move. Hosted providers go through pydantic-ai's own providers, which read each vendor SDK's
environment variables (API keys, ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``).
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from collections.abc import Awaitable, Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, cast

import pydantic_ai
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from glossogen.catalog import PROVIDER_SPECS, Provider
from glossogen.pricing import base_model
from glossogen.scenario import ScriptedMove

if TYPE_CHECKING:
    from pydantic_ai.models.openai import OpenAIChatModel

pydantic_ai.BANNER_ENABLED = False
"""No pydantic-ai first-run banner in any process that builds our models: on a terminal it
printed its logo and a Logfire pointer to stderr at the first agent request, inside
``glossogen run``'s live progress bar. ``BANNER_ENABLED`` is pydantic-ai's switch "for a
program that would rather own its output" (``PYDANTIC_AI_NO_BANNER`` is its environment twin);
set here, before any agent runs, it holds for the CLI, flow runs, MCP and ``serve`` alike."""

ScriptedPolicy = Callable[[], Awaitable[ScriptedMove]]
"""An async callable returning the next scripted move of one agent (it builds its own view)."""


class ModelConfigError(ValueError):
    """A (provider, model) pair that cannot be built; the message names the bad value."""


def scripted_model(
    model_name: str, agent_id: str, policy: ScriptedPolicy, calls_so_far: int = 0
) -> FunctionModel:
    """Return a ``FunctionModel`` that plays ``agent_id`` by asking ``policy`` for each move.

    Tool-call ids are ``<agent_id>-<n>``, ``n`` counting on from ``calls_so_far`` (the seat's
    earlier calls, on resume or swap), so logs of the same seed match and ids never repeat.
    Token usage is estimated from the text (:func:`estimate_tokens`), so the pricing path runs.
    """
    counter = calls_so_far

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal counter
        move = await policy()
        parts: list[Any] = []
        if not move.tool_calls:
            parts.append(TextPart(move.text or "Done."))
        for name, args in move.tool_calls:
            counter += 1
            parts.append(ToolCallPart(name, args, tool_call_id=f"{agent_id}-{counter}"))
        usage = RequestUsage(
            input_tokens=estimate_tokens(messages, info.instructions),
            output_tokens=estimate_tokens([ModelResponse(parts=parts)], None),
        )
        return ModelResponse(parts=parts, model_name=model_name, usage=usage)

    return FunctionModel(respond, model_name=model_name)


CHARS_PER_TOKEN = 4
"""Characters per token of the scripted usage estimate (the usual rule of thumb for English)."""


def estimate_tokens(messages: list[ModelMessage], instructions: str | None) -> int:
    """Estimate tokens of ``messages`` (plus ``instructions``) as characters / 4, rounded up.

    Counts text, tool-call arguments and tool results as their string form; at least 1.
    """
    chars = len(instructions or "")
    for message in messages:
        for part in message.parts:
            content = getattr(part, "content", None)
            if content is None:
                content = getattr(part, "args", None)
            chars += len(content) if isinstance(content, str) else len(str(content))
    return max(1, -(-chars // CHARS_PER_TOKEN))


def as_model_settings(settings: Mapping[str, Any]) -> ModelSettings:
    """Return ``settings`` (the same object) typed as pydantic-ai's ``ModelSettings``.

    A run's settings travel as plain dicts (knobs, events, the ledger); their keys are the
    ``ModelSettings`` subset :class:`~glossogen.knobs.AgentModelSettings` validates, plus the
    engine's own ``max_retries`` and ``request_timeout``. This is the one place a dict becomes
    the ``TypedDict`` pydantic-ai's ``run``/``iter`` take: no copy, no check at run time.
    """
    return cast(ModelSettings, settings)


CACHE_MARKED = frozenset({"anthropic", "openai", "openrouter"})
"""Providers whose pydantic-ai model is sent the unified ``cache`` setting.

pydantic-ai maps it per model (its profile's ``supports_cache``): on Anthropic it caches the
tool definitions, the instructions and the growing conversation (``anthropic_cache_*``); on
OpenAI only models with explicit cache breakpoints (GPT-5.6 on) take it, the others cache by
themselves; on OpenRouter, its Anthropic and Gemini models. Every other provider (Google, xAI,
Groq, Mistral, DeepSeek, Ollama, self-hosted, local, scripted) is sent no cache marker: what it
caches, it caches from the stable prefix alone."""

CACHE_KEY_SETTINGS = {"openai": "openai_prompt_cache_key", "mistral": "mistral_prompt_cache_key"}
"""Providers that route requests sharing a key to one cache, and the pydantic-ai setting."""

CACHE_KEY_MAX_CHARS = 64
"""The longest prompt cache key OpenAI accepts; a longer one is sent as its SHA-256 prefix."""


FRAMING_ANNOUNCEMENT = "never"
"""pydantic-ai's ``framing_announcement``, pinned for every request (agents, judge, probe).

By default (``when_needed``) pydantic-ai puts a fixed text explaining ``<system>`` blocks at
the top of the system prompt from the first request whose history holds a frame: a note it
adds next to text that looks like one, which any agent may write in a message. That rewrites
the system prompt mid-run, so the seat's whole cached prefix is lost at that request (and
Claude Sonnet 4.6 defaults to ``always``, so its prompt would differ from other models'). The
engine sends no mid-conversation system prompts, so the text has nothing to explain: never
sent, every seat's system prompt is the scenario's own, from the first request to the last.
pydantic-ai still adds its notes next to lookalike text; they are appended with the text."""


def request_model_settings(
    settings: Mapping[str, Any],
    provider: str,
    cache_key: str | None = None,
    conversation: bool = True,
) -> ModelSettings:
    """Return the pydantic-ai settings one request of ``provider`` is sent, from a seat's own.

    A seat's settings are provider-neutral (as recorded in ``agent_registered``); every request
    pins :data:`FRAMING_ANNOUNCEMENT` (a fixed engine setting, not a knob; never sent to the
    provider); its ``cache`` becomes what the provider takes (:data:`CACHE_MARKED`: the
    unified setting itself; others: nothing), and with caching on, a provider that routes by
    key (:data:`CACHE_KEY_SETTINGS`) is sent ``cache_key`` (``<run_id>:<agent_id>``), so one
    seat's requests meet one cache. A copy: ``settings`` is not changed.

    Args:
        settings: The seat's (or judge's) settings.
        provider: Where the request goes.
        cache_key: The caller's prompt cache key.
        conversation: False for one-off prompts (a judge's rulings): only the tool definitions
            and instructions are cached, since writing a prompt no later request extends to the
            cache costs more than sending it (pydantic-ai's ``CacheConfig(messages=False)``).
    """
    sent = {**dict(settings), "framing_announcement": FRAMING_ANNOUNCEMENT}
    cache = sent.pop("cache", None)
    if cache is not None and provider in CACHE_MARKED:
        if cache and not conversation:
            retention = {"retention": cache} if isinstance(cache, str) else {}
            cache = {**retention, "messages": False}
        sent["cache"] = cache
    key_setting = CACHE_KEY_SETTINGS.get(provider)
    if cache and cache_key and key_setting:
        if len(cache_key) > CACHE_KEY_MAX_CHARS:
            import hashlib

            cache_key = hashlib.sha256(cache_key.encode()).hexdigest()[:CACHE_KEY_MAX_CHARS]
        sent[key_setting] = cache_key
    return as_model_settings(sent)


def build_model(provider: str, model: str) -> Model:
    """Return the pydantic-ai model for a hosted or self-hosted ``(provider, model)``.

    The model is wrapped in a :class:`glossogen.concurrency.GatedModel`: each request holds a
    slot of the process's call gate for ``provider`` (the ``llm:<provider>`` limit when one is
    installed), agents and judges alike. ``provider`` is a :class:`~glossogen.catalog.Provider`
    value or the judge-only ``huggingface`` (pydantic-ai's Hugging Face Inference Providers
    model; it needs the ``pydantic-ai-slim[huggingface]`` extra and ``HF_TOKEN``).

    Raises:
        ModelConfigError: for ``scripted`` (built per agent by :func:`scripted_model`), for a
            self-hosted model missing from ``SELF_HOSTED_BASE_URLS`` or a malformed map, or a
            malformed ``<PROVIDER>_BASE_URL``.
    """
    from glossogen.concurrency import GatedModel

    _check_base_url(provider)
    built, at_transport = _shared_ungated(provider, model)
    return GatedModel(built, provider, at_transport=at_transport)


_SHARED: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str, ...], tuple[Model, bool]]
] = weakref.WeakKeyDictionary()
"""Hosted models built in each running event loop, by (provider, model, endpoint variables),
each with whether its HTTP client takes the gate's slots itself (:func:`_build_ungated`)."""


def _shared_ungated(provider: str, model: str) -> tuple[Model, bool]:
    """One hosted model per (provider, model, endpoint variables) per running event loop.

    Every model a vendor SDK builds opens its own HTTP client, and with it an SSL context (it
    loads the CA bundle: CPU a sweep process would pay once per agent). Agents of one loop share
    a model instead, and with
    it a connection pool. Without a running loop (a model built before ``asyncio.run``), each
    call builds its own: an HTTP client must not outlive or cross its loop.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return _build_ungated(provider, model)
    key = _model_key(provider, model)
    built = _SHARED.setdefault(loop, {})
    if key not in built:
        built[key] = _build_ungated(provider, model)
    return built[key]


def _check_base_url(provider: str) -> None:
    """Refuse a malformed ``<PROVIDER>_BASE_URL`` (read by the provider's SDK) by its name.

    The SDKs read ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``... themselves and fail deep in
    their HTTP client with a traceback; the value is not echoed (a URL may carry credentials).

    Raises:
        ModelConfigError: the variable holds whitespace or a control character, or is not an
            ``http(s)://host`` URL.
    """
    from urllib.parse import urlsplit

    name = f"{provider.upper().replace('-', '_')}_BASE_URL"
    value = os.environ.get(name)
    if not value:
        return
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ModelConfigError(
            f"{name} is not a URL: it contains whitespace or a control character"
        )
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ModelConfigError(f"{name} is not a URL: use http(s)://host[:port][/path]")


def _model_key(provider: str, model: str) -> tuple[str, ...]:
    """What a built model depends on: the pair and the SDKs' endpoint and key variables."""
    return (provider, model) + tuple(
        f"{name}={value}"
        for name, value in sorted(os.environ.items())
        if name.endswith(("_BASE_URL", "_BASE_URLS", "_API_KEY", "_TOKEN"))
    )


_PROFILES: dict[tuple[str, ...], Any] = {}


def model_profile(provider: str, model: str) -> Any:
    """Return pydantic-ai's profile of a hosted ``(provider, model)``, built once per endpoint.

    The model is built as a run would build it (so a bad self-hosted map or base URL fails
    here), once per (provider, model, endpoint variables) in this process: a sweep checks the
    same few models for every cell.

    Raises:
        ModelConfigError: as :func:`build_model`.
    """
    key = _model_key(provider, model)
    if key not in _PROFILES:
        _check_base_url(provider)
        _PROFILES[key] = _build_ungated(provider, model)[0].profile
    return _PROFILES[key]


TRANSPORT_GATED = frozenset(
    {Provider.OPENAI, Provider.ANTHROPIC, Provider.SELF_HOSTED, Provider.OLLAMA}
)
"""Providers whose SDK client's HTTP transport takes the call gate's slot per HTTP request
(:mod:`glossogen.gated_transport`): the slot is held while the request is on the wire, not while
the SDK builds it or pydantic-ai reads the answer. Every other provider's model request holds a
slot as a whole (:class:`glossogen.concurrency.GatedModel`)."""


def _build_ungated(provider: str, model: str) -> tuple[Model, bool]:
    """Build ``(provider, model)``'s pydantic-ai model; say whether its transport is gated."""
    from pydantic_ai.models import infer_model

    if provider == "huggingface":  # a judge provider (JUDGE_PROVIDERS), not an agent one
        return infer_model(f"huggingface:{model}"), False
    name = Provider(provider)
    if name is Provider.SCRIPTED:
        raise ModelConfigError("scripted models are built per agent, with their policy")
    if name is Provider.SELF_HOSTED:
        return _openai_compatible(
            provider, model, _self_hosted_url(model), os.environ.get("SELF_HOSTED_API_KEY")
        )
    if name is Provider.LOCAL:
        from glossogen.local_llm import LocalModelError, build_local_model

        try:
            return build_local_model(model), False
        except LocalModelError as exc:
            raise ModelConfigError(str(exc)) from None
    if name is Provider.OLLAMA:
        base = os.environ.get("OLLAMA_BASE_URL", "").rstrip("/")
        url = base if base.endswith("/v1") else f"{base}/v1"
        return _openai_compatible(provider, model, url, "ollama")
    prefix = PROVIDER_SPECS[name].pydantic_ai_prefix
    base = base_model(model)
    gated: list[bool] = []

    def provider_for(provider_name: str) -> Any:
        from pydantic_ai.providers import infer_provider

        built = infer_provider(provider_name)
        if base != model:
            # pydantic-ai reads a model's profile from its provider's model_profile(name) and
            # does not know fine-tune names: this provider answers for a fine-tune with its
            # base's profile (what it can think, which reasoning fields it is sent). No
            # pydantic-ai hook takes a profile through infer_model, so the one instance it
            # builds is adjusted here.
            of_base = built.model_profile
            vars(built)["model_profile"] = lambda _name: of_base(base)
        gated.append(name in TRANSPORT_GATED and _gate_transport(built, provider))
        return built

    return infer_model(f"{prefix}:{model}", provider_factory=provider_for), all(gated or [False])


def _gate_transport(built: Any, provider: str) -> bool:
    """Gate the HTTP client a pydantic-ai provider made for itself, and the ones it remakes.

    pydantic-ai remakes its own client when the provider is used on another event loop or after
    it was closed (``_http_client_factory``): the remade one is gated too. A provider of another
    layout is left as it is (False: the whole model request then holds the slot).
    """
    from glossogen.gated_transport import gate_http_client

    client = getattr(built, "_own_http_client", None)
    factory = getattr(built, "_http_client_factory", None)
    if client is None or factory is None or not gate_http_client(client, provider):
        return False

    def gated_client() -> Any:
        remade = factory()
        if not gate_http_client(remade, provider):
            raise TypeError(f"cannot gate a remade HTTP client of {provider}: {remade!r}")
        return remade

    built._http_client_factory = gated_client
    return True


def _self_hosted_url(model: str) -> str:
    raw = os.environ.get("SELF_HOSTED_BASE_URLS", "")
    try:
        urls = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ModelConfigError(f"SELF_HOSTED_BASE_URLS is not JSON: {exc.msg}") from None
    if not isinstance(urls, dict) or model not in urls:
        raise ModelConfigError(f"model {model!r} is not a key of SELF_HOSTED_BASE_URLS")
    url = urls[model]
    if not isinstance(url, str) or not _is_http_url(url):
        raise ModelConfigError(
            f"SELF_HOSTED_BASE_URLS[{model!r}] is not a URL: use http(s)://host[:port][/path]"
        )
    return url


def _is_http_url(value: str) -> bool:
    from urllib.parse import urlsplit

    if any(c.isspace() or not c.isprintable() for c in value):
        return False
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _openai_compatible(
    provider: str, model: str, base_url: str, api_key: str | None
) -> tuple[Model, bool]:
    from pydantic_ai.providers.openai import OpenAIProvider

    built = OpenAIProvider(base_url=base_url, api_key=api_key or "none")
    return _compatible_chat_model()(model, provider=built), _gate_transport(built, provider)


@cache
def _compatible_chat_model() -> type[OpenAIChatModel]:
    """pydantic-ai's chat model for OpenAI-compatible servers (self-hosted, ollama).

    Their servers reject ``content: null`` on an assistant turn that only calls tools (OpenAI
    accepts it): such a turn is sent with ``content: ""``, through the hook pydantic-ai
    documents for subclasses (``_map_model_response``).
    """
    from pydantic_ai.models.openai import OpenAIChatModel

    class CompatibleChatModel(OpenAIChatModel):
        def _map_model_response(self, message: ModelResponse) -> Any:
            mapped = super()._map_model_response(message)
            if isinstance(mapped, dict) and mapped.get("content", "") is None:
                mapped["content"] = ""
            return mapped

    return CompatibleChatModel
