import json
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest

from glossogen.eventlog import (
    Event,
    EventLogRead,
    LinesRead,
    iter_event_dicts,
    parse_line,
    read_events,
    read_lines,
    register_event,
)
from tests.eventlog.samples import sample_events


@register_event
class ProbeCaseStarted(Event):
    """A scenario event registered after the core ones."""

    event_type: Literal["probe_case_started"] = "probe_case_started"
    secret: str


def _write(path, lines: list[str], tail: bytes = b"") -> str:
    path.write_bytes("".join(line + "\n" for line in lines).encode("utf-8") + tail)
    return str(path)


def test_truncated_last_line_is_ignored_and_flagged(tmp_path):
    events = sample_events()
    cut = events[3].model_dump_json().encode()[:-7]
    url = _write(tmp_path / "demo.jsonl", [e.model_dump_json() for e in events[:3]], tail=cut)
    got = read_events(url)
    assert got.events == events[:3]
    assert (got.invalid_lines, got.unknown_lines, got.truncated_tail) == (0, 0, True)
    assert [d["event_id"] for d in iter_event_dicts(url)] == ["e1", "e2", "e3"]


def test_last_line_without_newline_that_parses_is_read(tmp_path):
    events = sample_events()
    lines = [e.model_dump_json() for e in events[:2]]
    url = _write(tmp_path / "demo.jsonl", lines, tail=events[2].model_dump_json().encode())
    got = read_events(url)
    assert got.events == events[:3]
    assert got.truncated_tail is False


def test_bad_and_unknown_lines_cost_only_themselves(tmp_path):
    e1, e2, e3, e4, _ = sample_events()
    unknown = {"event_type": "martian_landed", "event_id": "u1", "crater": 7}
    lines = [
        e1.model_dump_json(),
        '{"event_type": "round_started", "round_number": ',  # cut, but not the last line
        e2.model_dump_json(),
        json.dumps(unknown),
        '{"event_type": "message_sent", "channel_id": "main"}',  # fails validation
        "",
        "   ",
        e3.model_dump_json(),
        '["event_type", "round_started"]',  # not an object
        '{"round_number": 1}',  # no event_type
        '{"event_type": "round_started", "elapsed": NaN}',  # NaN is not JSON
        e4.model_dump_json(),
    ]
    url = _write(tmp_path / "demo.jsonl", lines)
    got = read_events(url)
    assert got.events == [e1, e2, e3, e4]
    assert got.invalid_lines == 5
    assert got.unknown_lines == 1
    assert got.raw_unknown == [unknown]
    assert got.truncated_tail is False
    ids = [d.get("event_id") for d in iter_event_dicts(url)]
    assert ids == ["e1", "e2", "u1", None, "e3", None, "e4"]


def test_invalid_utf8_line_is_counted(tmp_path):
    e1, e2 = sample_events()[:2]
    path = tmp_path / "demo.jsonl"
    bad = b"\xff\xfe{}"
    path.write_bytes(
        b"\n".join([e1.model_dump_json().encode(), bad, e2.model_dump_json().encode(), b""])
    )
    got = read_events(str(path))
    assert got.events == [e1, e2]
    assert got.invalid_lines == 1


def test_registered_scenario_event_is_read_as_its_class(tmp_path):
    probe = ProbeCaseStarted(event_id="p1", round_number=2, secret="red")
    url = _write(tmp_path / "demo.jsonl", [probe.model_dump_json()])
    got = read_events(url)
    assert got.events == [probe]
    assert type(got.events[0]) is ProbeCaseStarted
    assert got.unknown_lines == 0


def test_empty_log_reads_empty(tmp_path):
    got = read_events(_write(tmp_path / "demo.jsonl", []))
    assert got == EventLogRead()


def test_missing_log_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_events(str(tmp_path / "nope.jsonl"))
    with pytest.raises(FileNotFoundError):
        list(iter_event_dicts(str(tmp_path / "nope.jsonl")))


def test_read_lines_keeps_the_chosen_types_unparsed_and_numbers_the_typeless(tmp_path):
    e1, e2, e3, e4, e5 = sample_events()
    lines = [
        e1.model_dump_json(),
        e2.model_dump_json(),
        "not an event at all",  # names no type: numbered, whatever was asked
        "",
        '{"event_type": "message_sent", "broken',  # kept as found: the caller parses it
        e3.model_dump_json(),
        '{"text": "\\"event_type\\": \\"message_sent\\""}',  # the key inside a value: no type
        e4.model_dump_json(),
    ]
    url = _write(tmp_path / "demo.jsonl", lines, tail=b'{"event_id":"x","event_type":"simulat')
    got = read_lines(url, {"message_sent"})
    assert [(n, kind) for n, kind, _ in got.lines] == [(5, "message_sent"), (6, "message_sent")]
    assert got.lines[1][2] == e3.model_dump_json().encode()
    assert (got.untyped, got.torn, got.torn_type, got.stopped_at) == ([3, 7], 9, None, None)
    stopped = read_lines(url, {"message_sent"}, stop={"round_started"})
    assert (stopped.lines, stopped.untyped, stopped.stopped_at) == ([], [], "round_started")
    ended = _write(tmp_path / "ended.jsonl", [e5.model_dump_json()])
    assert read_lines(ended, {"message_sent"}) == LinesRead()


def test_parse_line_refuses_what_the_standard_parser_refuses():
    assert parse_line(b'{"text": "\\ud800"}') == {"text": "\ud800"}  # orjson refuses; json reads
    for bad in (b'{"elapsed": NaN}', b'{"a": Infinity}', b"{", b"\xff"):
        with pytest.raises(ValueError):
            parse_line(bad)


FRESH_READ = """
import sys
from glossogen.eventlog import read_events
from glossogen.scenario._registry import load_scenario
load_scenario("veyru")
read = read_events("tests/replay/tapes/spot_the_difference/1767225600/spot_the_difference.jsonl")
kinds = sorted({type(e).__module__ for e in read.events if type(e).__module__.startswith("scen")})
loaded = sorted({m.split(".")[1] for m in sys.modules if m.startswith("scenarios.")})
print(kinds, read.unknown_lines, read.invalid_lines, loaded)
"""


def test_a_log_of_a_scenario_not_loaded_reads_its_events_as_their_classes() -> None:
    """A reader starts from the registered classes (here veyru's) and, at the first line of a
    type it lacks, loads the scenario the log names: none is read as unknown, and no third
    scenario is imported."""
    done = subprocess.run(
        [sys.executable, "-c", FRESH_READ],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == (
        "['scenarios.spot_the_difference.events'] 0 0 ['spot_the_difference', 'veyru']"
    )
