"""A claim is all or nothing: a runs dir that cannot be created is exit 66, storage that fails
part-way (a full disk, here the kernel's file-size limit) exit 69, one line each, and nothing
is left behind: no empty run folder, no half-written file, nothing already there lost."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from glossogen.cli import main
from tests.fixtures.played_runs import play_run

RUN = ["run", "veyru", "--model", "scripted", "--provider", "scripted",
       "--config", "knobs_default", "round_count=1"]  # fmt: skip


def _without_coverage() -> dict[str, str]:
    # Coverage measures subprocesses through COVERAGE_PROCESS_CONFIG; a child under a 300-byte
    # file limit cannot write its data file, and coverage would print that failure on stderr.
    # An earlier in-process `glossogen pools`/`deploy` leaves its console level (WARNING) in
    # os.environ; a user's shell has none, and `glossogen run` then keeps Prefect's lines off.
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("COVERAGE_") and k != "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"
    }


def _disk_full_at_300_bytes() -> None:
    # A write past 300 bytes fails with EFBIG, as a full disk fails with ENOSPC: the kernel
    # refuses it, the process goes on (SIGXFSZ ignored). config.json is longer than that.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))


def test_a_disk_that_fills_during_the_claim_exits_69_and_leaves_nothing(
    prefect_api: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    earlier = runs / "veyru" / "1700000000"
    earlier.mkdir(parents=True)
    (earlier / "config.json").write_text("{}\n")  # another run's folder: must stay untouched
    done = subprocess.run(
        [sys.executable, "-m", "glossogen", *RUN, "--runs-dir", str(runs)],
        preexec_fn=_disk_full_at_300_bytes,
        env=_without_coverage(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 69, done.stderr
    assert re.fullmatch(
        rf"glossogen: error: storage failed while claiming {re.escape(str(runs))}/veyru/(\d+) "
        rf"\(removed again\): storage error at {re.escape(str(runs))}/veyru/\1/config\.json: "
        r"OSError: \[Errno 27\] File too large\n",
        done.stderr,
    ), done.stderr
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "runs", "runs/veyru", "runs/veyru/1700000000", "runs/veyru/1700000000/config.json"]  # fmt: skip
    assert (earlier / "config.json").read_text() == "{}\n"


def test_a_disk_full_on_a_fresh_runs_dir_removes_the_folders_it_made(
    prefect_api: str, tmp_path: Path
) -> None:
    runs = tmp_path / "new" / "runs"
    done = subprocess.run(
        [sys.executable, "-m", "glossogen", *RUN, "--runs-dir", str(runs)],
        preexec_fn=_disk_full_at_300_bytes,
        env=_without_coverage(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 69, done.stderr
    assert done.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_a_runs_dir_that_cannot_be_created_exits_66(
    prefect_api: str, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = f"/proc/glossogen-{uuid.uuid4().hex[:8]}/runs"  # /proc takes no new folder, root or not
    with pytest.raises(SystemExit) as exited:
        main([*RUN, "--runs-dir", runs])
    assert exited.value.code == 66
    err = capsys.readouterr().err
    assert err == (
        f"glossogen: error: cannot claim a run folder: runs dir {runs!r}: cannot create "
        f"{runs}/veyru: No such file or directory\n"
    )
    assert not Path(runs).parent.exists()


def _disk_full_at_4096_bytes() -> None:
    # config.json, labels.json and lineage.json fit; the derived log (the source's events
    # copied) does not: the storage fails part-way through the claim.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


@pytest.mark.parametrize(
    "derivation",
    [
        ["fork-at-round"],
        ["replace-agent", "--replaced-agent-id", "field_observer", "--model", "scripted",
         "--provider", "scripted"],
        ["cross-run-replace-agent", "--replaced-agent-id", "field_observer", "--model",
         "scripted", "--provider", "scripted", "--donor-run-dir", "SOURCE", "--donor-agent-id",
         "stabilization_engineer"],
    ],
    ids=["fork-at-round", "replace-agent", "cross-run-replace-agent"],
)  # fmt: skip
def test_a_derived_claim_the_disk_fills_during_exits_69_and_leaves_nothing(
    prefect_api: str, tmp_path: Path, derivation: list[str]
) -> None:
    source = play_run(str(tmp_path / "source"), "veyru", rounds=2)
    assert Path(source.log_url).stat().st_size > 4096
    runs = tmp_path / "runs"
    earlier = runs / "veyru" / "1700000000"
    earlier.mkdir(parents=True)
    (earlier / "config.json").write_text("{}\n")  # another run's folder: must stay untouched
    command, *flags = derivation
    flags = [source.url if f == "SOURCE" else f for f in flags]
    done = subprocess.run(
        [sys.executable, "-m", "glossogen", command, "veyru", "--source-run-dir", source.url,
         "--after-round", "1", "--runs-dir", str(runs), *flags],
        preexec_fn=_disk_full_at_4096_bytes,
        env=_without_coverage(),
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert done.returncode == 69, done.stderr
    assert re.fullmatch(
        rf"glossogen: error: storage failed while claiming {re.escape(str(runs))}/veyru/(\d+) "
        rf"\(removed again\): storage error at {re.escape(str(runs))}/veyru/\1/veyru\.jsonl: "
        r"OSError: \[Errno 27\] File too large\n",
        done.stderr,
    ), done.stderr
    assert sorted(str(p.relative_to(runs)) for p in runs.rglob("*")) == [
        "veyru", "veyru/1700000000", "veyru/1700000000/config.json"]  # fmt: skip
