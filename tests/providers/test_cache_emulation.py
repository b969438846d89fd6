"""The stub's emulation of each provider's documented prompt caching, rule by rule.

Requests are built as the stub records them; tokens are the JSON of each block at 4 characters
a token (``tests/fixtures/cache_emulation.py``), so every count below is exact.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fixtures.cache_emulation import CachingResponder, prefix_stability, tokens
from tests.fixtures.model_stubs import RecordedRequest, StubReply


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _text(n: int) -> dict[str, Any]:
    """A user text block of exactly ``n`` tokens (its JSON is 4n characters)."""
    block = {"role": "user", "type": "text", "text": ""}
    pad = 4 * n - len(json.dumps(block, sort_keys=True))
    return {"type": "text", "text": "x" * pad}


def _anthropic(
    blocks: list[dict[str, Any]], ttl: str = "5m", model: str = "claude-sonnet-4-5"
) -> RecordedRequest:
    body = {"model": model, "messages": [{"role": "user", "content": blocks}],
            "cache_control": {"type": "ephemeral", "ttl": ttl}}  # fmt: skip
    return RecordedRequest("POST", "/v1/messages", {}, body, "anthropic")


def _usage(reply: StubReply) -> tuple[int, int, int, int]:
    return (reply.input_tokens, reply.cache_read_tokens, reply.cache_write_tokens,
            reply.cache_write_1h_tokens)  # fmt: skip


def test_anthropic_writes_from_the_minimum_reads_the_prefix_and_writes_the_rest() -> None:
    clock = Clock()
    cache = CachingResponder(lambda req: StubReply(text="ok"), clock=clock)
    assert tokens({"role": "user", **_text(100)}) == 100  # a block measures what it was built to
    short = [_text(1000)]
    assert _usage(cache(_anthropic(short))) == (1000, 0, 0, 0)  # under 1,024: never cached
    first = [_text(1000), _text(100)]
    assert _usage(cache(_anthropic(first))) == (1100, 0, 1100, 0)
    second = [*first, _text(200)]
    assert _usage(cache(_anthropic(second))) == (1300, 1100, 200, 0)
    clock.now += 299  # read within five minutes refreshes the entry
    third = [*second, _text(50)]
    assert _usage(cache(_anthropic(third))) == (1350, 1300, 50, 0)
    clock.now += 301  # five minutes after its last use the entry is gone
    assert _usage(cache(_anthropic([*third, _text(20)]))) == (1370, 0, 1370, 0)


def test_anthropic_minimum_is_per_model_and_one_hour_writes_are_told_apart() -> None:
    cache = CachingResponder(lambda req: StubReply(text="ok"))
    blocks = [_text(2000)]
    assert _usage(cache(_anthropic(blocks, model="claude-haiku-4-5"))) == (2000, 0, 0, 0)
    assert _usage(cache(_anthropic(blocks, ttl="1h"))) == (2000, 0, 2000, 2000)


def test_anthropic_looks_back_20_blocks_from_a_breakpoint_and_no_further() -> None:
    cache = CachingResponder(lambda req: StubReply(text="ok"))
    base = [_text(1100)]
    cache(_anthropic(base))
    within = [*base, *(_text(15) for _ in range(20))]
    assert _usage(cache(_anthropic(within))) == (1400, 1100, 300, 0)
    twenty = [*within, *(_text(15) for _ in range(20))]  # the last breakpoint, 20 back
    assert _usage(cache(_anthropic(twenty)))[1:3] == (1400, 300)
    beyond = [*twenty, *(_text(15) for _ in range(21))]  # every hit 21 or more blocks back
    assert _usage(cache(_anthropic(beyond)))[1:3] == (0, 1100 + 61 * 15)


def test_openai_reads_in_128_token_steps_from_1024_under_one_key() -> None:
    cache = CachingResponder(lambda req: StubReply(text="ok"))

    def request(text: str, key: str) -> RecordedRequest:
        body = {"model": "gpt-5-mini", "input": [{"role": "user", "content": text}],
                "prompt_cache_key": key}  # fmt: skip
        return RecordedRequest("POST", "/v1/responses", {}, body, "responses")

    prompt = "y" * 8000
    first = cache(request(prompt, "run:a"))
    assert (first.cache_read_tokens, first.cache_write_tokens) == (0, 0)
    again = cache(request(prompt + "z" * 400, "run:a"))
    sent = json.dumps([[], "", [{"content": prompt, "role": "user"}]], sort_keys=True)
    shared = sent.index(prompt) + len(prompt)  # the two prompts part after the y's
    assert again.cache_read_tokens == 1024 + (shared // 4 - 1024) // 128 * 128 == 1920
    assert cache(request(prompt + "w", "run:b")).cache_read_tokens == 0  # another key's cache


def test_prefix_stability_counts_requests_that_extend_the_seats_previous_one() -> None:
    a1, a2 = [_text(30)], [_text(30), _text(40)]
    reqs = [_anthropic(a1), _anthropic(a2), _anthropic([_text(31)])]
    stability = prefix_stability(reqs, lambda req: "seat")
    assert (stability["seat"].requests, stability["seat"].extending) == (3, 1)
    assert stability["seat"].share == 0.5
