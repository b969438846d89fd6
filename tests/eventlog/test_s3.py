import glob
import os
import subprocess
import sys
import tempfile

import pytest

from glossogen.eventlog import EventLogWriter, read_events
from glossogen.storage import StorageError, open_fs
from tests.eventlog.samples import sample_events


@pytest.fixture
def spool_dir(tmp_path, monkeypatch):
    """Keep the writers' spool files in this test's own temporary directory."""
    spools = tmp_path / "spool"
    spools.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spools))
    monkeypatch.setenv("TMPDIR", str(spools))
    return spools


def test_round_trip_on_s3(s3_bucket):
    url = f"{s3_bucket}/runs/demo/1700000000/demo.jsonl"
    events = sample_events()
    with EventLogWriter(url) as w:
        for e in events:
            w.append(e)
    fs, path = open_fs(url)
    assert fs.cat_file(path) == "".join(e.model_dump_json() + "\n" for e in events).encode()
    got = read_events(url)
    assert got.events == events
    assert (got.invalid_lines, got.unknown_lines, got.truncated_tail) == (0, 0, False)


def test_s3_log_visible_after_round_boundary_and_complete_after_close(s3_bucket, spool_dir):
    url = f"{s3_bucket}/demo.jsonl"
    events = sample_events()
    w = EventLogWriter(url)
    (spool,) = glob.glob(str(spool_dir / "glossogen-spool-*.jsonl"))
    w.append(events[0])
    w.append(events[1])
    with pytest.raises(FileNotFoundError):
        read_events(url)
    w.round_boundary()
    assert read_events(url).events == events[:2]
    w.append(events[2])
    w.append(events[3])
    # A crash now would lose events[2:4] on S3; the local spool still holds them.
    assert read_events(url).events == events[:2]
    assert len(read_events(spool).events) == 4
    w.close()
    assert read_events(url).events == events[:4]
    assert not os.path.exists(spool)


def test_writer_on_existing_s3_log_appends(s3_bucket):
    url = f"{s3_bucket}/demo.jsonl"
    events = sample_events()
    with EventLogWriter(url) as w:
        w.append(events[0])
    with EventLogWriter(url) as w:
        w.append(events[1])
        w.append(events[2])
        assert w.count == 2
    assert read_events(url).events == events[:3]


def test_s3_writer_with_no_events_creates_an_empty_log(s3_bucket):
    url = f"{s3_bucket}/demo.jsonl"
    EventLogWriter(url).close()
    fs, path = open_fs(url)
    assert fs.cat_file(path) == b""


def test_missing_bucket_is_a_storage_error(s3_server):
    url = "s3://no-such-bucket-zz/demo.jsonl"
    with pytest.raises(StorageError, match="s3://no-such-bucket-zz/demo.jsonl"):
        EventLogWriter(url)
    with pytest.raises(StorageError, match="s3://no-such-bucket-zz/demo.jsonl"):
        read_events(url)


_CRASHING_WRITER = """
import os, sys
from glossogen.eventlog import EventLogWriter
from tests.eventlog.samples import sample_events
events = sample_events()
w = EventLogWriter(sys.argv[1])
print(w._spool, flush=True)
w.append(events[0]); w.append(events[1]); w.round_boundary()
w.append(events[2]); w.append(events[3])
os._exit(9)  # killed: no close, no upload
"""


def test_killed_s3_writer_loses_only_what_followed_the_last_round_boundary(s3_bucket, spool_dir):
    url = f"{s3_bucket}/demo.jsonl"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run(
        [sys.executable, "-c", _CRASHING_WRITER, url], cwd=root, capture_output=True, text=True
    )
    assert proc.returncode == 9, proc.stderr
    spool = proc.stdout.strip()
    assert os.path.dirname(spool) == str(spool_dir)
    events = sample_events()
    assert read_events(url).events == events[:2]
    assert read_events(spool).events == events[:4]
