"""``read_run_events`` through the SDK's client: a fresh stdio server knows every installed
scenario's events on its first call, and its pages (read from the server built in-process) are
sized for an assistant (every text cut, nested ones too, never an id; a default page of at most
16,000 characters)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from glossogen.eventlog import read_events
from tests.fixtures.played_runs import play_run
from tests.mcp.conftest import call, in_process_session, stdio_session

PAGE_CHARS = 16_000


def _compact(row: dict[str, Any]) -> int:
    """Characters of ``row`` as the server measures it (compact JSON)."""
    return len(json.dumps(row, separators=(",", ":"), ensure_ascii=False))


def _leaves(value: Any, key: str = "") -> list[tuple[str, Any]]:
    """Every (key, leaf) of a nested value; lists give their items under the list's key."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, k)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item, key)]
    return [(key, value)]


def _lists(value: Any) -> list[list[Any]]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _lists(v)]
    if isinstance(value, list):
        return [value, *(x for item in value for x in _lists(item))]
    return []


def test_the_first_call_of_a_fresh_server_reads_every_scenarios_events(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    orbital = play_run(str(runs), "orbital_anomaly", rounds=2, now_unix=1_796_000_001).run_id
    signal = play_run(str(runs), "signal_game", rounds=1, now_unix=1_796_000_002).run_id

    async def first_calls(run_id: str, event_type: str) -> dict[str, Any]:
        async with stdio_session(runs, tmp_path) as s:  # a fresh server: nothing imported yet
            return await call(s, "read_run_events", run_id=run_id, event_types=[event_type])

    case = asyncio.run(first_calls(orbital, "orbital_anomaly_case_started"))
    assert case["matched"] == 2
    assert [e["round_number"] for e in case["events"]] == [1, 2]
    judged = asyncio.run(first_calls(orbital, "orbital_anomaly_actuation_judged"))
    log = read_events(str(runs / orbital / "orbital_anomaly.jsonl"))
    assert judged["matched"] == sum(
        e.event_type == "orbital_anomaly_actuation_judged" for e in log.events
    )
    assert judged["matched"] > 0 and log.unknown_lines == 0
    choices = asyncio.run(first_calls(signal, "signal_game_choice_made"))
    assert choices["matched"] == 5  # the scripted receiver's five picks of round 1


def test_pages_cut_every_text_nested_ones_too_never_ids_and_fit_16000_chars(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    run_id = play_run(str(runs), "orbital_anomaly", rounds=3).run_id
    log = read_events(str(runs / run_id / "orbital_anomaly.jsonl"))

    async def go() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        async with in_process_session(runs, tmp_path) as s:
            pages: list[dict[str, Any]] = []
            cursor = None
            while True:  # every default page of the run
                page = await call(s, "read_run_events", run_id=run_id, cursor=cursor)
                pages.append(page)
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            history = await call(s, "read_run_events", run_id=run_id, max_text_chars=20,
                                 event_types=["agent_history_appended"], page_size=5)  # fmt: skip
            return pages, history

    pages, history = asyncio.run(go())
    # Every event is on exactly one page, in log order, and no page passes 16,000 characters
    # of rows unless it is one row (then the next row would have passed it).
    assert [e["index"] for p in pages for e in p["events"]] == list(range(len(log.events)))
    assert {p["matched"] for p in pages} == {len(log.events)}
    for page, following in zip(pages, pages[1:], strict=False):
        sizes = [_compact(e) for e in page["events"]]
        assert sum(sizes) <= PAGE_CHARS
        assert sum(sizes) + _compact(following["events"][0]) > PAGE_CHARS  # ended when full
    assert len(pages) > 1
    # At the default 200 characters, no text over 200 anywhere but ids and times.
    for page in pages:
        for event in page["events"]:
            for key, leaf in _leaves(event["fields"]):
                if isinstance(leaf, str) and not (
                    key.endswith("_id") or key in ("id", "timestamp")
                ):
                    assert len(leaf) <= 200, (key, len(leaf))

    # History events at 20 characters: the nested texts are cut and named by path with their
    # full length; lists keep 10 items; every id is whole.
    histories = [e for e in log.events if e.event_type == "agent_history_appended"]
    first = history["events"][0]
    whole = histories[0].model_dump(mode="json")
    instructions = whole["messages"][0]["instructions"]
    assert len(instructions) > 20
    assert first["fields"]["messages"][0]["instructions"] == instructions[:20]
    assert first["truncated"]["messages[0].instructions"] == len(instructions)
    assert first["truncated"]["messages"] == len(whole["messages"]) > 10
    assert len(first["fields"]["messages"]) == 10
    assert first["fields"]["event_id"] == whole["event_id"]
    assert first["fields"]["messages"][0]["run_id"] == whole["messages"][0]["run_id"]  # an id
    for event in history["events"]:
        for key, leaf in _leaves(event["fields"]):
            if isinstance(leaf, str) and not (key.endswith("_id") or key in ("id", "timestamp")):
                assert len(leaf) <= 20, (key, leaf)
        assert all(len(items) <= 10 for items in _lists(event["fields"]))
    assert history["matched"] == len(histories)
    # Five history events at 20 characters were 94 KB; now the page is under 16,000.
    assert sum(_compact(e) for e in history["events"]) <= PAGE_CHARS
