"""The writer lock on S3 (a real moto server): a create-only lease with an owner and an expiry,
taken over only when stale, renewed while held; and a log upload that never overwrites another
writer's."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.eventlog import EventLogWriter, RoundCompleted, read_events
from glossogen.storage import (
    LEASE_NAME,
    LeaseSettingError,
    RunBusyError,
    RunFolder,
    RunStore,
    WriteConflictError,
    WriterLease,
    lease_seconds,
    open_fs,
)
from tests.fixtures.played_runs import play_run
from tests.fixtures.polling import wait_until

HOST = socket.gethostname()
T0 = 1_800_000_000.0
"""An injected clock's start, Unix seconds (2027-01-15T08:00:00Z)."""


def _folder(bucket: str) -> RunFolder:
    return RunStore(f"{bucket}/runs").claim_run_dir("veyru", 1_790_000_000)


def _lease(folder: RunFolder) -> dict:
    fs, path = open_fs(folder.file_url(LEASE_NAME))
    fs.invalidate_cache(path)
    return json.loads(fs.cat_file(path))


def test_moto_honours_if_match_and_if_none_match(s3_bucket: str) -> None:
    from glossogen.storage import put_if_unchanged, read_with_etag

    url = f"{s3_bucket}/probe.json"
    first = put_if_unchanged(url, b"one", None)
    with pytest.raises(WriteConflictError, match="was created by another writer"):
        put_if_unchanged(url, b"again", None)
    second = put_if_unchanged(url, b"two", first)
    with pytest.raises(WriteConflictError, match="was changed by another writer"):
        put_if_unchanged(url, b"stale", first)
    assert read_with_etag(url) == (b"two", second)


def test_a_held_lease_refuses_a_second_writer_naming_the_holder(s3_bucket: str) -> None:
    folder = _folder(s3_bucket)
    clock = [T0]
    held = WriterLease(folder.url, seconds=30, now=lambda: clock[0], renew=False)
    assert _lease(folder) == {
        "owner": f"pid {os.getpid()} on {HOST}",
        "host": HOST,
        "pid": os.getpid(),
        "token": held.token,
        "expires_at": T0 + 30,
        "lease_seconds": 30,
    }
    clock[0] = T0 + 29.9
    with pytest.raises(RunBusyError) as busy:
        WriterLease(folder.url, seconds=30, now=lambda: clock[0], renew=False)
    assert str(busy.value) == (
        f"run {folder.url} is being written by another live process "
        f"(pid {os.getpid()} on {HOST}; its lease runs to 2027-01-15T08:00:30Z)"
    )
    assert busy.value.exit_code == 75
    with pytest.raises(RunBusyError):
        folder.check_unlocked(now=lambda: clock[0])
    assert folder.is_locked() is True  # the real clock is long before 2027


def _dead_holder_on(host: str, pid: int, expires_at: float) -> dict:
    return {"owner": f"pid {pid} on {host}", "host": host, "pid": pid, "token": "t0",
            "expires_at": expires_at, "lease_seconds": 30}  # fmt: skip


def test_a_lease_from_another_host_is_taken_over_only_after_its_expiry(s3_bucket: str) -> None:
    folder = _folder(s3_bucket)
    fs, path = open_fs(folder.file_url(LEASE_NAME))
    fs.pipe_file(path, json.dumps(_dead_holder_on("lab-7", 4242, T0 + 30)).encode())
    with pytest.raises(RunBusyError, match=r"\(pid 4242 on lab-7; its lease runs to 2027-01-15"):
        WriterLease(folder.url, seconds=30, now=lambda: T0 + 29.999, renew=False)
    assert _lease(folder)["owner"] == "pid 4242 on lab-7"  # a refused taker changes nothing
    taken = WriterLease(folder.url, seconds=30, now=lambda: T0 + 30.0, renew=False)
    assert taken.taken_over_from == "pid 4242 on lab-7"
    assert _lease(folder)["owner"] == f"pid {os.getpid()} on {HOST}"
    assert _lease(folder)["expires_at"] == T0 + 60.0


def test_a_killed_holder_on_this_host_is_taken_over_at_once(s3_bucket: str) -> None:
    folder = _folder(s3_bucket)
    code = (
        "import sys, time\n"
        "from glossogen.storage import RunFolder\n"
        "lock = RunFolder.at(sys.argv[1]).lock()\n"
        "print('held', flush=True)\n"
        "time.sleep(600)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, folder.url], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        with pytest.raises(RunBusyError, match=rf"\(pid {child.pid} on {HOST}; its lease"):
            folder.lock()
    finally:
        child.kill()
        child.wait()
    lock = folder.lock()  # the lease has not expired, but its holder is gone
    try:
        assert lock.lease is not None
        assert lock.lease.taken_over_from == f"pid {child.pid} on {HOST}"
    finally:
        lock.release()


def test_renewal_extends_and_a_taken_over_lease_is_lost(s3_bucket: str) -> None:
    folder = _folder(s3_bucket)
    clock = [T0]
    first = WriterLease(folder.url, seconds=30, now=lambda: clock[0], renew=False)
    clock[0] = T0 + 20
    first.renew()
    assert _lease(folder)["expires_at"] == T0 + 50
    clock[0] = T0 + 50  # the first stalled past its expiry: a second takes over
    second = WriterLease(folder.url, seconds=30, now=lambda: clock[0], renew=False)
    with pytest.raises(RunBusyError) as lost:
        first.renew()
    assert str(lost.value) == (
        f"the writer lease on {folder.url} was taken over by pid {os.getpid()} on {HOST}"
    )
    assert first.lost == str(lost.value)
    first.release()  # a lost lease is left to its new holder
    assert _lease(folder)["token"] == second.token
    assert _lease(folder)["expires_at"] == T0 + 80


def test_a_released_lease_lets_the_next_writer_in_at_once(s3_bucket: str) -> None:
    folder = _folder(s3_bucket)
    lock = folder.lock(now=lambda: T0)
    lock.release()
    assert _lease(folder)["released"] is True
    assert _lease(folder)["expires_at"] == T0
    assert folder.is_locked() is False
    again = WriterLease(folder.url, seconds=30, now=lambda: T0 + 1, renew=False)
    assert again.taken_over_from is None  # released, not taken from anyone
    again.release()


def test_the_renewal_thread_keeps_a_short_lease_alive(
    s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Short enough to be renewed within the test (the thread ticks every 1 real second). The
    # lease's expiry clock is the test's: a stalled machine cannot let it lapse.
    monkeypatch.setenv("GLOSSOGEN_WRITER_LEASE_SECONDS", "3")
    assert lease_seconds() == 3.0
    folder = _folder(s3_bucket)
    clock = [T0]
    lock = folder.lock(now=lambda: clock[0])
    try:
        assert _lease(folder)["expires_at"] == T0 + 3
        clock[0] = T0 + 2  # the next renewal extends the lease to T0 + 5
        wait_until(lambda: _lease(folder)["expires_at"] == T0 + 5, "the lease's renewal")
        with pytest.raises(RunBusyError):  # past the first expiry: held by the renewal alone
            folder.check_unlocked(now=lambda: T0 + 4)
    finally:
        lock.release()


@pytest.mark.parametrize("raw", ["0", "-1", "soon", "nan"])
def test_a_bad_lease_length_is_refused_in_one_line(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GLOSSOGEN_WRITER_LEASE_SECONDS", raw)
    with pytest.raises(LeaseSettingError) as bad:
        lease_seconds()
    assert str(bad.value) == (
        f"GLOSSOGEN_WRITER_LEASE_SECONDS must be a number of seconds above 0, got {raw!r}"
    )
    assert bad.value.exit_code == 64


@pytest.mark.parametrize(
    "command",
    [
        ["run", "veyru", "--model", "scripted", "--provider", "scripted", "--config",
         "knobs_default", "round_count=1", "--runs-dir", "RUNS"],
        ["fork-at-round", "veyru", "--source-run-dir", "SOURCE", "--after-round", "1",
         "--runs-dir", "RUNS"],
    ],
    ids=["run", "fork-at-round"],
)  # fmt: skip
def test_a_bad_lease_length_is_a_usage_error_before_anything_is_written(
    command: list[str], s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    source = play_run(str(tmp_path / "source"), "veyru", rounds=2)
    runs = f"{s3_bucket}/runs"
    argv = [runs if a == "RUNS" else source.url if a == "SOURCE" else a for a in command]
    monkeypatch.setenv("GLOSSOGEN_WRITER_LEASE_SECONDS", "soon")
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 64
    assert capsys.readouterr().err == (
        "glossogen: error: GLOSSOGEN_WRITER_LEASE_SECONDS must be a number of seconds above 0, "
        "got 'soon'\n"
    )
    fs, path = open_fs(s3_bucket)
    fs.invalidate_cache()
    assert fs.find(path) == []  # nothing claimed, nothing written


def test_a_log_upload_never_overwrites_another_writers(s3_bucket: str) -> None:
    folder = _folder(s3_bucket)
    late = EventLogWriter(folder.log_url)  # opened while the log does not exist yet
    early = EventLogWriter(folder.log_url)
    early.append(RoundCompleted(round_number=1))
    early.round_boundary()
    late.append(RoundCompleted(round_number=7))
    with pytest.raises(WriteConflictError) as refused:
        late.round_boundary()
    assert str(refused.value).startswith(f"{folder.log_url} was created by another writer; ")
    assert "not overwritten (this writer's log kept at " in str(refused.value)
    assert refused.value.exit_code == 75
    early.append(RoundCompleted(round_number=2))
    early.close()
    assert [e.round_number for e in read_events(folder.log_url).events] == [1, 2]
    resumed = EventLogWriter(folder.log_url)  # reads the log and its ETag: may append
    stale = EventLogWriter(folder.log_url)
    resumed.append(RoundCompleted(round_number=3))
    resumed.close()
    stale.append(RoundCompleted(round_number=9))
    with pytest.raises(WriteConflictError, match="was changed by another writer since"):
        stale.round_boundary()
    assert [e.round_number for e in read_events(folder.log_url).events] == [1, 2, 3]
