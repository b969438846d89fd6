import os

import pytest

from glossogen.eventlog import EventLogWriter, MessageSent, read_events
from tests.eventlog.samples import sample_events


def test_round_trip_local(tmp_path):
    url = str(tmp_path / "run" / "demo.jsonl")
    events = sample_events()
    with EventLogWriter(url) as w:
        for e in events:
            w.append(e)
        assert w.count == 5
    raw = (tmp_path / "run" / "demo.jsonl").read_bytes()
    assert raw == "".join(e.model_dump_json() + "\n" for e in events).encode("utf-8")
    got = read_events(url)
    assert got.events == events
    assert [type(e).__name__ for e in got.events] == [
        "SimulationStarted",
        "RoundStarted",
        "MessageSent",
        "RoundEnded",
        "SimulationEnded",
    ]
    assert (got.invalid_lines, got.unknown_lines, got.truncated_tail) == (0, 0, False)


def test_each_event_is_flushed_before_close(tmp_path):
    url = str(tmp_path / "demo.jsonl")
    w = EventLogWriter(url)
    for e in sample_events()[:2]:
        w.append(e)
    assert len(read_events(url).events) == 2
    w.close()


def test_fsync_only_at_round_boundary_and_close(tmp_path, monkeypatch):
    calls = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(fd) or real_fsync(fd))
    w = EventLogWriter(str(tmp_path / "demo.jsonl"))
    for e in sample_events():
        w.append(e)
    assert len(calls) == 0
    w.round_boundary()
    assert len(calls) == 1
    w.close()
    assert len(calls) == 2


def test_reopened_writer_appends(tmp_path):
    url = str(tmp_path / "demo.jsonl")
    events = sample_events()
    with EventLogWriter(url) as w:
        w.append(events[0])
        w.append(events[1])
    with EventLogWriter(url) as w:
        w.append(events[2])
        assert w.count == 1
    got = read_events(url)
    assert got.events == events[:3]
    assert got.invalid_lines == 0


def test_reopen_after_truncated_tail_sets_the_fragment_aside_and_keeps_every_line_valid(tmp_path):
    url = str(tmp_path / "demo.jsonl")
    events = sample_events()
    with EventLogWriter(url) as w:
        w.append(events[0])
        w.append(events[1])
    with open(url, "ab") as f:
        f.write(events[2].model_dump_json().encode()[:30])
    assert read_events(url).truncated_tail is True
    with EventLogWriter(url) as w:
        w.append(events[3])
    got = read_events(url)
    assert got.events == [events[0], events[1], events[3]]
    assert (got.invalid_lines, got.truncated_tail) == (0, False)
    fragment = events[2].model_dump_json().encode()[:30]
    assert (tmp_path / "demo.jsonl.torn").read_bytes() == fragment + b"\n"  # nothing is lost


def test_close_is_idempotent_and_append_after_close_fails(tmp_path):
    w = EventLogWriter(str(tmp_path / "demo.jsonl"))
    w.append(sample_events()[0])
    w.close()
    w.close()
    assert w.closed is True
    with pytest.raises(ValueError, match="closed"):
        w.append(sample_events()[1])
    with pytest.raises(ValueError, match="closed"):
        w.round_boundary()


def test_append_line_refuses_newlines(tmp_path):
    url = str(tmp_path / "demo.jsonl")
    with EventLogWriter(url) as w:
        w.append_line('{"event_type": "round_started"}')
        with pytest.raises(ValueError, match="newline"):
            w.append_line('{"a": 1}\n{"b": 2}')
        assert w.count == 1
    assert (tmp_path / "demo.jsonl").read_text() == '{"event_type": "round_started"}\n'


def test_close_with_no_events_leaves_an_empty_log(tmp_path):
    EventLogWriter(str(tmp_path / "demo.jsonl")).close()
    assert (tmp_path / "demo.jsonl").read_bytes() == b""


def test_a_thousand_appends_over_ten_boundaries_read_back_in_order(tmp_path):
    # Its speed against a plain json-lines write is bench/writer_speed.py's, not a test's.
    events = [
        MessageSent(
            channel_id="main", sender_id="a1", text=f"m{i}", delivered_text=f"m{i}", chars=2
        )
        for i in range(1000)
    ]
    with EventLogWriter(str(tmp_path / "demo.jsonl")) as w:
        for i, e in enumerate(events):
            w.append(e)
            if i % 100 == 99:
                w.round_boundary()
        assert w.count == 1000
    back = read_events(str(tmp_path / "demo.jsonl")).events
    assert [e.text for e in back] == [f"m{i}" for i in range(1000)]
