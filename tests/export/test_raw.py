"""The raw zip: exact members, manifest rows, logs left out or kept, a growing log, the ceiling, S3."""

from __future__ import annotations

import csv
import io
import shutil
import zipfile
from pathlib import Path

import pytest
from atif import Trajectory

from glossogen.export._raw import RawZipTooLarge, estimate_raw_bytes, write_raw_zip
from glossogen.storage import RunFolder, open_fs
from tests.fixtures.played_runs import play_run

CASE_05 = Path(__file__).parents[1] / "cases" / "glossogen-0.5-runs" / "veyru" / "1795939736"
EXTRA = {
    "_debug.jsonl": b'{"debug": 1}\n' * 50,
    "veyru_stdout.log": b"round 1 started\n" * 20,
    "stream.json": b'{"live": true}\n',
    "eval_in_progress.json": b"{}\n",
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[RunFolder]]:
    """A played 2-round veyru run with debug/stdout/in-flight files, and the 0.5 case."""
    root = tmp_path_factory.mktemp("runs")
    claimed = play_run(str(root), rounds=2)
    played = Path(claimed.url)
    for name, data in EXTRA.items():
        (played / name).write_bytes(data)
    shutil.copytree(CASE_05, root / "veyru" / "1795939736")
    return root, [
        claimed,
        RunFolder.at(str(root / "veyru" / "1795939736")),
    ]


def _manifest(zf: zipfile.ZipFile) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(zf.read("manifest.csv").decode())))


def test_default_zip_nests_runs_and_leaves_out_logs_and_work_in_flight(
    runs: tuple[Path, list[RunFolder]], tmp_path: Path
) -> None:
    root, folders = runs
    played = Path(folders[0].url)
    run_dir = played.name
    result = write_raw_zip(folders, tmp_path / "runs.zip")
    with zipfile.ZipFile(tmp_path / "runs.zip") as zf:
        assert zf.testzip() is None
        assert sorted(zf.namelist()) == sorted(
            [
                "manifest.csv",
                f"veyru/{run_dir}/config.json",
                f"veyru/{run_dir}/labels.json",
                f"veyru/{run_dir}/veyru.jsonl",
                "veyru/1795939736/veyru.jsonl",
            ]
        )
        assert zf.read(f"veyru/{run_dir}/veyru.jsonl") == (played / "veyru.jsonl").read_bytes()
        kept = sum(
            (played / n).stat().st_size for n in ("config.json", "labels.json", "veyru.jsonl")
        )
        assert _manifest(zf) == [
            {
                "run_id": f"veyru/{run_dir}",
                "scenario": "veyru",
                "run_dir": run_dir,
                "files": "3",
                "bytes": str(kept),
                "left_out": ".writer.lock;_debug.jsonl;eval_in_progress.json;stream.json;veyru_stdout.log",
                "atif_trajectories": "",
                "atif_error": "",
            },
            {
                "run_id": "veyru/1795939736",
                "scenario": "veyru",
                "run_dir": "1795939736",
                "files": "1",
                "bytes": "541586",
                "left_out": "",
                "atif_trajectories": "",
                "atif_error": "",
            },
        ]
    assert (result.runs, result.files, result.bytes) == (2, 5, kept + 541586)


def test_include_logs_keeps_debug_and_stdout_but_never_work_in_flight(
    runs: tuple[Path, list[RunFolder]], tmp_path: Path
) -> None:
    _, folders = runs
    run_dir = Path(folders[0].url).name
    write_raw_zip(folders[:1], tmp_path / "runs.zip", include_logs=True)
    with zipfile.ZipFile(tmp_path / "runs.zip") as zf:
        names = set(zf.namelist())
        assert zf.read(f"veyru/{run_dir}/_debug.jsonl") == EXTRA["_debug.jsonl"]
        assert zf.read(f"veyru/{run_dir}/veyru_stdout.log") == EXTRA["veyru_stdout.log"]
        assert f"veyru/{run_dir}/stream.json" not in names
        assert f"veyru/{run_dir}/eval_in_progress.json" not in names
        assert _manifest(zf)[0]["left_out"] == ".writer.lock;eval_in_progress.json;stream.json"


def test_include_atif_adds_one_valid_trajectory_per_agent_and_run(
    runs: tuple[Path, list[RunFolder]], tmp_path: Path
) -> None:
    _, folders = runs
    run_dir = Path(folders[0].url).name
    write_raw_zip(folders, tmp_path / "runs.zip", include_atif=True)
    with zipfile.ZipFile(tmp_path / "runs.zip") as zf:
        atif = sorted(n for n in zf.namelist() if "/atif/" in n)
        assert atif == [
            "veyru/1795939736/atif/field_observer.json",
            "veyru/1795939736/atif/stabilization_engineer.json",
            f"veyru/{run_dir}/atif/field_observer.json",
            f"veyru/{run_dir}/atif/stabilization_engineer.json",
        ]
        for name in atif:
            trajectory = Trajectory.model_validate_json(zf.read(name))
            assert trajectory.session_id == "/".join(name.split("/")[:2])
        rows = _manifest(zf)
        assert [(r["files"], r["atif_trajectories"]) for r in rows] == [("5", "2"), ("3", "2")]


def test_a_log_growing_while_it_is_zipped_is_archived_whole_with_a_valid_crc(
    tmp_path: Path,
) -> None:
    run = tmp_path / "runs" / "veyru" / "1700000000"
    run.mkdir(parents=True)
    log = run / "veyru.jsonl"
    line = b'{"event_type": "message_sent", "text": "%d"}\n'
    log.write_bytes(b"".join(line % i for i in range(20000)))

    class GrowsTheLog(io.BytesIO):
        """A zip destination that appends to the log once the archive is under way."""

        grown = False

        def write(self, data: bytes) -> int:  # type: ignore[override]  # BytesIO.write takes any buffer; zipfile writes bytes
            if not self.grown and self.tell() > 0:
                with log.open("ab") as f:
                    f.write(b"".join(line % i for i in range(20000, 21000)))
                self.grown = True
            return super().write(data)

    dest = GrowsTheLog()
    write_raw_zip([RunFolder.at(str(run))], dest, chunk_bytes=4096)
    assert dest.grown
    with zipfile.ZipFile(io.BytesIO(dest.getvalue())) as zf:
        assert zf.testzip() is None
        member = zf.read("veyru/1700000000/veyru.jsonl")
        assert member == log.read_bytes()
        assert member.count(b"\n") == 21000
        assert _manifest(zf)[0]["bytes"] == str(len(member))


def test_the_raw_ceiling_refuses_before_writing_and_names_the_limit(
    runs: tuple[Path, list[RunFolder]], tmp_path: Path
) -> None:
    _, folders = runs
    estimated = estimate_raw_bytes(folders)
    with_logs = estimate_raw_bytes(folders, include_logs=True)
    assert with_logs - estimated == len(EXTRA["_debug.jsonl"]) + len(EXTRA["veyru_stdout.log"])
    with pytest.raises(RawZipTooLarge) as refused:
        write_raw_zip(folders, tmp_path / "runs.zip", max_bytes=estimated - 1)
    assert str(refused.value) == (
        f"raw zip refused: the selected run folders hold {estimated} bytes, over the "
        f"{estimated - 1} bytes raw zip ceiling; select fewer runs"
        " or leave out the debug and stdout logs"
    )
    assert not (tmp_path / "runs.zip").exists()
    write_raw_zip(folders, tmp_path / "runs.zip", max_bytes=estimated)
    assert (tmp_path / "runs.zip").exists()


def test_runs_on_s3_zip_like_local_runs(
    runs: tuple[Path, list[RunFolder]], s3_bucket: str, tmp_path: Path
) -> None:
    _, folders = runs
    played = Path(folders[0].url)
    fs, bucket = open_fs(s3_bucket)
    fs.put(str(played), f"{bucket}/runs/veyru/{played.name}", recursive=True)
    url = f"{s3_bucket}/runs/veyru/{played.name}"
    write_raw_zip([RunFolder.at(url)], tmp_path / "s3.zip", include_atif=True)
    write_raw_zip(folders[:1], tmp_path / "local.zip", include_atif=True)
    with (
        zipfile.ZipFile(tmp_path / "s3.zip") as s3,
        zipfile.ZipFile(tmp_path / "local.zip") as local,
    ):
        assert sorted(s3.namelist()) == sorted(local.namelist())
        for name in local.namelist():
            assert s3.read(name) == local.read(name), name
