"""A run's spend read from its model calls' usage alone is the spend of the whole log, exactly.

``cost_per_round_usd`` declares ``usage=``: evaluation then takes each ``llm_response_received``
line for its usage (``glossogen.eventlog._usage``), never building the event. Over every log of
the pinned 30-run cohort (played, resumed after a kill, forked, GlossoGen 0.5, damaged copies)
and over lines in odd shapes, the view's spend (each seat's, the judge's, per round) and the
counts of skipped lines equal those of the whole log read by the reader, float for float.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from glossogen.evaluation import get_metric
from glossogen.evaluation._read import FACTS, read_for_metrics
from glossogen.eventlog import CallUsage, LlmResponseReceived, RunView, read_event_bytes
from tests.evaluation.cohort30 import assemble

COST = get_metric("cost_per_round_usd")


def _spend(view: RunView) -> dict[str, Any]:
    spend = view.spend
    read = view.read
    return {
        "seats": [
            (
                s.agent_id,
                s.cost_usd,
                s.requests,
                s.answered,
                s.usage_unread,
                s.input_tokens,
                s.cache_read_tokens,
                s.cache_write_tokens,
                s.cache_write_1h_tokens,
                s.output_tokens,
            )
            for s in spend.agents.values()
        ],  # fmt: skip
        "judge": (spend.judge_cost_usd, spend.judge_calls),
        "total": spend.total_cost_usd,
        "known": spend.known_cost_usd,
        "by_round": view.spend_by_round(),
        "inherited": view.inherited_spend.total_cost_usd,
        "skipped": (read.invalid_lines, read.unknown_lines, read.truncated_tail),
    }


def _usage_read(data: bytes) -> RunView:
    return RunView.of(
        read_for_metrics(data, FACTS | frozenset(COST.reads or ()), frozenset(COST.usage))
    )


def test_every_log_of_the_cohort_spends_alike_read_whole_or_for_usage(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    pinned = assemble(runs)
    # read whole by the reader: GlossoGen 0.5's logs, and the copy whose damaged line is not in
    # this writer's shape (a line with no event_id: the reader's upcaster may need the log)
    whole = {r for r, original in pinned.items() if original == "veyru/1795939736"}
    whole.add("veyru/1797000003")
    logs = sorted(runs.glob("*/*/*.jsonl"))
    assert len(logs) == 30
    for log in logs:
        run_id = f"{log.parent.parent.name}/{log.parent.name}"
        for data in (log.read_bytes(), _costed(log.read_bytes())):
            view = _usage_read(data)
            every = RunView.of(read_event_bytes(data))
            assert _spend(view) == _spend(every), log
            calls = [e for e in every.read.events if type(e) is LlmResponseReceived]
            assert len(calls) > 0
            assert len(view.read.usage) == (0 if run_id in whole else len(calls))
            assert [u.event_id for u in view.read.usage] == (
                [] if run_id in whole else [e.event_id for e in calls]
            )


def _costed(data: bytes) -> bytes:
    """Each model call's ``cost_usd`` a distinct float, so the order of the sums shows."""
    n = iter(range(1, 10_000))
    return re.sub(
        rb'"cost_usd":0\.0,', lambda m: b'"cost_usd":%r,' % (next(n) * 1.37e-7 + 0.1), data
    )


ODD = {
    # each: (what replaces the first model call's `"cost_usd":<float>,` or, for "line", a whole
    # line added after it; whether the usage path takes the line)
    "cost as a whole number": (b'"cost_usd":3,', False),  # validation converts it: the reader's
    "cost unknown": (b'"cost_usd":null,', True),
    "cost NaN": (b'"cost_usd":NaN,', False),  # not JSON: invalid, as the reader counts it
    "cost left out": (b"", False),  # the class's default (None): the reader's
    "a string cost": (b'"cost_usd":"0.5",', False),
}


@pytest.mark.parametrize("case", list(ODD))
def test_an_odd_model_call_line_is_read_by_the_readers_rules(tmp_path: Path, case: str) -> None:
    runs = tmp_path / "runs"
    assemble(runs)
    data = _costed((runs / "veyru" / "1796000001" / "veyru.jsonl").read_bytes())
    replacement, taken = ODD[case]
    first = re.search(rb'"event_type":"llm_response_received".*?("cost_usd":[^,]+,)', data)
    assert first is not None
    odd = data[: first.start(1)] + replacement + data[first.end(1) :]
    line = odd[: first.start(1)].count(b"\n") + 1
    view = _usage_read(odd)
    assert _spend(view) == _spend(RunView.of(read_event_bytes(odd)))
    assert (line in {u.line for u in view.read.usage}) is taken


def test_a_model_call_whose_text_and_tool_arguments_name_the_usage_fields_is_read_right(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    assemble(runs)
    data = _costed((runs / "veyru" / "1796000001" / "veyru.jsonl").read_bytes())
    at = data.index(b'"event_type":"llm_response_received"')
    start = data.rindex(b"\n", 0, at) + 1
    end = data.index(b"\n", at)
    line = data[start:end]
    tricky = (
        line.replace(b'"text":""', b'"text":"a \\",\\"text\\":1,\\"input_tokens\\":9 \\\\"', 1)
        .replace(b'"tool_calls":[', b'"tool_calls":[{"args":{"input_tokens":99,"cost_usd":5.0}},', 1)
    )  # fmt: skip
    assert tricky != line
    odd = data[:start] + tricky + data[end:]
    view = _usage_read(odd)
    whole = RunView.of(read_event_bytes(odd))
    assert _spend(view) == _spend(whole)
    number = odd[:start].count(b"\n") + 1
    (usage,) = [u for u in view.read.usage if u.line == number]
    (event,) = [
        e for n, e in zip(whole.read.line_numbers, whole.read.events, strict=True) if n == number
    ]
    assert isinstance(event, LlmResponseReceived)
    assert usage == CallUsage(
        event.event_id, event.round_number, event.phase, event.agent_id, event.input_tokens,
        event.cache_read_tokens, event.cache_write_tokens, event.cache_write_1h_tokens,
        event.output_tokens, event.cost_usd, number,
    )  # fmt: skip
