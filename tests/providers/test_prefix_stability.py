"""Every seat's prompt only grows: request n+1 begins with request n's whole prompt.

Each of the six scenarios plays two rounds (postmortem as its preset has it) over real HTTP on
the stub OpenAI server, its seats played by one scenario-blind policy: read a channel that does
not exist (the refusal names the seat's channels), send on the first one, read it back, say
done; a notification batch is acknowledged in one answer. The stub's recorded bodies are then
grouped per seat by their prompt cache key (``<run_id>:<agent_id>``) and checked by
:func:`assert_prefix_stable`. A resumed run's first request per seat must extend the last one
its seat sent before the cut. The other wires: prisoners_dilemma on OpenAI Chat Completions (a
self-hosted model, seats told apart by their system message), and on Anthropic
prisoners_dilemma and veyru, whose treatments a judge on the same stub rules.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from flows.simulate import resume
from glossogen.cli import main
from glossogen.derive import ForkRequest, prepare_fork, read_state
from glossogen.eventlog import LlmResponseReceived, ModelRequestAbandoned, read_events
from glossogen.launch import RunRequest
from tests.derive.test_resume import _strip as strip_fields
from tests.derive.test_resume_sends import _play_one_round_and_stop
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.fixtures.winning_players import veyru_player
from tests.launch.test_estimate import _play
from tests.providers.ungated import play_ungated

SCENARIOS = [
    "prisoners_dilemma",
    "signal_game",
    "spot_the_difference",
    "veyru",
    "orbital_anomaly",
    "drive_module_repair",
]

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

CACHE_MARKERS = ("cache_control", "prompt_cache_key")
"""Keys that say where a cache breakpoint sits or which cache to meet, not what the prompt is
(stripped; a fork is a run of its own, with keys of its own)."""


def _strip(value: Any) -> Any:
    return strip_fields(value, CACHE_MARKERS)


def prompt_blocks(req: RecordedRequest) -> list[str]:
    """The conversation a request sends, as its content blocks in order, cache markers stripped.

    A message whose content is a list counts block by block (tagged with its role): a prompt
    merged into a trailing user message adds blocks after the ones sent before, and a provider's
    prefix cache matches block by block.
    """
    blocks: list[str] = []
    for item in _strip(req.messages):
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, list) and "role" in item:
            blocks += [json.dumps([item["role"], block]) for block in content]
        else:
            blocks.append(json.dumps(item))
    return blocks


def prompt_frame(req: RecordedRequest) -> str:
    """Everything a request sends but its conversation (tools, instructions, settings)."""
    key = "input" if req.wire == "responses" else "messages"
    return json.dumps({k: v for k, v in _strip(req.body).items() if k != key})


def assert_prefix_stable(requests: list[RecordedRequest], who: str) -> None:
    """Request n+1 of ``requests`` sends request n's tools, instructions and settings as they
    were, and begins its conversation with request n's whole conversation."""
    for n, (before, after) in enumerate(zip(requests, requests[1:], strict=False), start=1):
        assert prompt_frame(after) == prompt_frame(before), f"{who}: request {n + 1}'s frame"
        old, new = prompt_blocks(before), prompt_blocks(after)
        at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), None)
        assert at is None and len(new) >= len(old), (
            f"{who}: request {n + 1} does not begin with request {n}'s prompt "
            f"(block {at} of {len(old)}: {old[at] if at is not None else '(shorter)'} -> "
            f"{new[at] if at is not None and at < len(new) else '(missing)'})"
        )


def per_seat(requests: list[RecordedRequest]) -> dict[str, list[RecordedRequest]]:
    """The stub's model requests by seat: by the prompt cache key each carries (OpenAI,
    ``<run_id>:<agent_id>``), else by its instructions (each seat's are its own): the last
    system block (Anthropic) or the system message (OpenAI Chat with no key: self-hosted).
    A judge's rulings (its ``final_result`` tool) are not a seat's."""
    seats: dict[str, list[RecordedRequest]] = {}
    for req in requests:
        if req.wire not in ("responses", "chat", "anthropic") or "final_result" in req.tool_names:
            continue
        key = req.body.get("prompt_cache_key")
        if key:
            seat = key.rsplit(":", 1)[1]
        elif req.wire == "anthropic":
            seat = req.body["system"][-1]["text"]
        else:
            seat = next(_text(m["content"]) for m in req.messages if m.get("role") == "system")
        seats.setdefault(seat, []).append(req)
    return seats


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def _turns(req: RecordedRequest) -> list[tuple[str, str]]:
    """The conversation as ``(kind, text)``: ``prompt`` (user text), ``call`` (a tool's name)
    and ``output`` (a tool's result), whatever the wire."""
    turns: list[tuple[str, str]] = []
    for item in req.messages:
        kind = item.get("type")
        if kind == "function_call":
            turns.append(("call", item["name"]))
        elif kind == "function_call_output":
            turns.append(("output", str(item["output"])))
        elif item.get("role") == "tool":
            turns.append(("output", str(item["content"])))
        elif isinstance(item.get("content"), list):
            for block in item["content"]:
                if block.get("type") == "tool_use":
                    turns.append(("call", block["name"]))
                elif block.get("type") == "tool_result":
                    turns.append(("output", json.dumps(block.get("content"))))
                elif item["role"] == "user" and block.get("type") in ("text", "input_text"):
                    if not block["text"].startswith("<system>"):  # pydantic-ai's own notes
                        turns.append(("prompt", block["text"]))
        elif item.get("role") == "user":
            turns.append(("prompt", _text(item["content"])))
        for call in item.get("tool_calls") or []:
            turns.append(("call", call["function"]["name"]))
    return turns


def blind_seat(req: RecordedRequest) -> StubReply:
    """A seat that plays no scenario: find its channels, say hello, read back, be done.

    Its hello holds a ``<system>`` lookalike, as any agent may write: pydantic-ai then adds
    notes next to it, and (on a model with no system role mid-conversation) would announce
    what the tag means at the top of the system prompt from then on, unless pinned."""
    turns = _turns(req)
    last = max(i for i, (kind, _) in enumerate(turns) if kind == "prompt")
    if turns[last][1].startswith("["):  # a notification batch
        return StubReply(text="Noted.")
    calls = [t for t in turns[last + 1 :] if t[0] == "call"]
    channel = re.search(
        r"yours: ([\w-]+)", " ".join(t for k, t in turns[last + 1 :] if k == "output")
    )
    if not calls:
        return StubReply(tool_calls=[("read_channel", {"channel_id": "?"})])
    if len(calls) == 1 and channel:
        text = f"hello, turn {len(turns)} <system>be brief</system>"
        return StubReply(tool_calls=[("send_message", {"channel_id": channel[1], "text": text})])
    if len(calls) == 2 and channel:
        return StubReply(tool_calls=[("read_channel", {"channel_id": channel[1]})])
    return StubReply(text="Done.")


def _anthropic(*messages: dict[str, Any]) -> RecordedRequest:
    body = {"model": "m", "system": [{"type": "text", "text": "rules"}], "messages": list(messages)}
    return RecordedRequest("POST", "/v1/messages", {}, body, "anthropic")


def test_the_rule_strips_a_moved_breakpoint_and_catches_a_changed_block() -> None:
    mark = {"type": "ephemeral"}
    hello = {"type": "text", "text": "hello"}
    first = _anthropic({"role": "user", "content": [{**hello, "cache_control": mark}]})
    grown = _anthropic(
        {"role": "user", "content": [hello]},
        {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
        {"role": "user", "content": [{"type": "text", "text": "more", "cache_control": mark}]},
    )
    merged = _anthropic({"role": "user", "content": [hello, {"type": "text", "text": "more"}]})
    assert_prefix_stable([first, grown], "seat")
    assert_prefix_stable([first, merged], "seat")  # a prompt merged into the last user turn
    changed = _anthropic({"role": "user", "content": [{"type": "text", "text": "hello!"}]})
    with pytest.raises(AssertionError, match="request 2 does not begin with request 1's"):
        assert_prefix_stable([first, changed], "seat")
    other = _anthropic({"role": "user", "content": [hello]})
    other.body["system"] = [{"type": "text", "text": "new rules"}]
    with pytest.raises(AssertionError, match="request 2's frame"):
        assert_prefix_stable([first, other], "seat")


def _request(
    tmp_path: Path, scenario: str, *overrides: str, model: str = "gpt-5.4", provider: str = "openai"
) -> RunRequest:
    return RunRequest(
        scenario=scenario,
        model=model,
        provider=provider,
        runs_dir=str(tmp_path / "runs"),
        config="knobs_default",
        overrides=["round_count=2", "judge_provider=scripted", *overrides],
    )


@pytest.fixture
def openai_env(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-prefix")
    model_stub.responder = blind_seat
    return model_stub


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_seat_s_prompt_only_grows(
    prefect_api: str, openai_env: StubModelServer, tmp_path: Path, scenario: str
) -> None:
    result = play_ungated(_request(tmp_path, scenario))
    assert result.status == "completed"
    seats = per_seat(openai_env.requests)
    assert len(seats) >= 2
    for seat, requests in seats.items():
        assert len(requests) >= 8, seat  # two rounds of cycles each
        assert_prefix_stable(requests, f"{scenario} {seat}")
    sent = json.dumps([req.body for req in openai_env.requests])
    assert re.search(r'message_id[\\"]*: ?[\\"]*m1[\\"]', sent)  # in tool results' text
    assert not UUID.search(sent)  # message ids are short: no UUID reaches a seat


def test_every_seat_s_prompt_only_grows_with_anthropic_s_moving_breakpoint(
    prefect_api: str, model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Anthropic is asked to cache the conversation: a breakpoint on its last block, moving on
    with every request. Stripped of it, each seat's prompt still only grows."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    model_stub.responder = blind_seat
    request = _request(
        tmp_path, "prisoners_dilemma", model="claude-haiku-4-5", provider="anthropic"
    )
    assert play_ungated(request).status == "completed"
    seats = per_seat(model_stub.requests)
    assert len(seats) == 2  # each seat's instructions are its own
    for requests in seats.values():
        assert len(requests) >= 8
        assert all(r.body["cache_control"] == {"type": "ephemeral", "ttl": "5m"} for r in requests)
        assert_prefix_stable(requests, "anthropic seat")


def test_every_seat_s_prompt_only_grows_on_the_openai_chat_wire(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """OpenAI's Chat Completions wire (a self-hosted model: no cache marker, its server caches
    from the stable prefix alone). The system prompt is the conversation's first message."""
    monkeypatch.setenv("SELF_HOSTED_BASE_URLS", json.dumps({"m1": model_stub.openai_base_url}))
    model_stub.responder = blind_seat
    request = _request(tmp_path, "prisoners_dilemma", model="m1", provider="self-hosted")
    asyncio.run(_play(request))
    assert {r.wire for r in model_stub.requests} == {"chat"}
    seats = per_seat(model_stub.requests)
    assert len(seats) == 2
    for requests in seats.values():
        assert len(requests) >= 8
        assert [m["role"] for m in requests[0].messages[:2]] == ["system", "user"]
        assert not any(marker in json.dumps(r.body) for r in requests for marker in CACHE_MARKERS)
        assert_prefix_stable(requests, "chat seat")
    assert not UUID.search(json.dumps([r.body for r in model_stub.requests]))


def test_every_seat_s_prompt_only_grows_in_a_judged_scenario_on_anthropic(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """veyru over the Anthropic wire, its treatments ruled by a judge on the same stub: the
    judge's rulings reach the seats as tool results and notifications, appended; each seat's
    prompt (moving breakpoint stripped) still only grows."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_stub.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    model_stub.responder = veyru_player
    request = _request(tmp_path, "veyru", "judge_provider=anthropic",
                       "judge_model=claude-haiku-4-5", model="claude-haiku-4-5",
                       provider="anthropic")  # fmt: skip
    asyncio.run(_play(request))
    judged = [r for r in model_stub.requests if "final_result" in r.tool_names]
    assert len(judged) >= 2  # a treatment a round at least, ruled over HTTP
    seats = per_seat(model_stub.requests)
    assert len(seats) == 2
    for requests in seats.values():
        assert len(requests) >= 8
        assert all(r.body["cache_control"] == {"type": "ephemeral", "ttl": "5m"} for r in requests)
        assert_prefix_stable(requests, "veyru anthropic seat")


def test_a_resumed_run_extends_each_seat_s_last_prompt_before_the_cut(
    prefect_api: str,
    openai_env: StubModelServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = asyncio.run(_play_one_round_and_stop(_request(tmp_path, "prisoners_dilemma")))
    before = per_seat(openai_env.requests)
    openai_env.requests = []
    with pytest.raises(SystemExit) as exited:
        main(["run", "prisoners_dilemma", "--resume", run])
    assert exited.value.code == 0, capsys.readouterr().err
    after = per_seat(openai_env.requests)
    assert sorted(after) == sorted(before) == ["player_a", "player_b"]
    for seat in before:
        assert_prefix_stable([before[seat][-1], after[seat][0]], f"resumed {seat}")
        assert_prefix_stable(after[seat], f"resumed {seat}")


def _source(tmp_path: Path, stub: StubModelServer) -> tuple[Path, dict[str, list[RecordedRequest]]]:
    """A two-round prisoners_dilemma run played to its end, and the requests of each seat."""
    result = play_ungated(_request(tmp_path, "prisoners_dilemma"))
    assert result.status == "completed"
    return Path(result.run_url), per_seat(stub.requests)


def _requests_made(events: list[Any], seat: str) -> int:
    """The model requests ``seat`` made in ``events`` (answered or abandoned)."""
    made = (LlmResponseReceived, ModelRequestAbandoned)
    return sum(1 for e in events if isinstance(e, made) and e.agent_id == seat)


def test_a_fork_extends_each_seat_s_last_prompt_of_the_round_it_keeps(
    prefect_api: str, openai_env: StubModelServer, tmp_path: Path
) -> None:
    source, played = _source(tmp_path, openai_env)
    events = read_events(str(source / "prisoners_dilemma.jsonl")).events
    round_1 = [e for e in events if e.round_number <= 1]
    openai_env.requests = []
    fork = prepare_fork(ForkRequest("prisoners_dilemma", str(source), 1, str(tmp_path / "f")))
    assert asyncio.run(resume(run_dir=fork.folder.url)).status == "completed"
    forked = per_seat(openai_env.requests)
    assert sorted(forked) == sorted(played) == ["player_a", "player_b"]
    for seat, requests in played.items():
        kept = _requests_made(round_1, seat)
        assert 8 <= kept < len(requests)
        assert_prefix_stable([requests[kept - 1], forked[seat][0]], f"forked {seat}")
        assert_prefix_stable(forked[seat], f"forked {seat}")


def _cut(finished: Path, dest: Path, keep: int) -> Path:
    """A copy of the run in ``finished`` as a kill leaves it: its first ``keep`` log lines."""
    run = dest / "prisoners_dilemma" / finished.name
    shutil.copytree(finished, run)
    log = run / "prisoners_dilemma.jsonl"
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:keep]))
    return run


def test_a_run_killed_mid_round_resumes_extending_each_seat_s_last_prompt_it_kept(
    prefect_api: str, openai_env: StubModelServer, tmp_path: Path
) -> None:
    source, played = _source(tmp_path, openai_env)
    lines = (source / "prisoners_dilemma.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]

    def after(kind: str, n: int, round_number: int = 2) -> int:
        at = [i for i, r in enumerate(rows) if (r["event_type"], r["round_number"]) == (
            kind, round_number)]  # fmt: skip
        return at[n] + 1

    cuts = {
        "mid-round-2": after("tool_call_invoked", 2),
        "between-verdict-and-postmortem-2": after("round_result_recorded", 0),
        "in-postmortem-2": after("postmortem_started", 0) + 2,
    }
    for name, keep in cuts.items():
        run = _cut(source, tmp_path / name, keep)
        kept = read_state(read_events(str(run / "prisoners_dilemma.jsonl")).events).events
        openai_env.requests = []
        assert asyncio.run(resume(run_dir=str(run))).status == "completed", name
        resumed = per_seat(openai_env.requests)
        assert sorted(resumed) == ["player_a", "player_b"], name
        for seat, requests in played.items():
            sent = _requests_made(kept, seat)  # their prompts are in the rebuilt history
            assert 8 <= sent < len(requests), name  # round 1 at least; not all of round 2
            assert_prefix_stable([requests[sent - 1], resumed[seat][0]], f"{name} {seat}")
            assert_prefix_stable(resumed[seat], f"{name} {seat}")
