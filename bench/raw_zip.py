"""Speed of the raw zip (streamed members, manifest) and of its ATIF trajectories (issue 6).

Plays one 5-round scripted veyru run, copies its folder ``RUNS`` times into a cohort, then times:
- ``write_raw_zip`` of the cohort (members streamed in 1 MiB chunks, deflated);
- the baseline: the standard library's ``ZipFile.write`` of the same files (sizes known up
  front, same compression), which cannot survive a log that grows mid-read;
- ``write_raw_zip`` with ``include_atif`` (one trajectory per agent built from each log).
Prints wall seconds, input MB/s, the zip's size and the ratios against the baseline.
Usage: ``VIRTUAL_ENV= uv run --no-sync python bench/raw_zip.py [RUNS]`` (default 100).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from glossogen.export import write_raw_zip  # noqa: E402
from glossogen.export._raw import RunFolder  # noqa: E402
from tests.fixtures.played_runs import play_run  # noqa: E402


def cohort(root: Path, runs: int) -> list[RunFolder]:
    """Play one run and copy its folder ``runs`` times; return the copies as run folders."""
    source = Path(play_run(str(root / "played"), rounds=5).url)
    folders = []
    for i in range(runs):
        target = root / "runs" / "veyru" / str(1700000000 + i)
        shutil.copytree(source, target)
        folders.append(RunFolder.at(str(target)))
    return folders


def baseline(folders: list[RunFolder], dest: Path) -> None:
    """Zip the same files with ``ZipFile.write`` (the stdlib's sized copy)."""
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for folder in folders:
            for path in sorted(Path(folder.url).iterdir()):
                if path.name != ".writer.lock":
                    zf.write(path, f"{folder.run_id}/{path.name}")


def timed(fn, *args, **kwargs) -> float:  # times any callable
    """Return the wall seconds of one call."""
    start = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - start


def main() -> None:
    """Print the figures for a cohort of ``RUNS`` copies."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=100, help="Runs in the cohort.")
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="glossogen-bench-") as tmp:
        root = Path(tmp)
        folders = cohort(root, runs)
        size = sum(p.stat().st_size for f in folders for p in Path(f.url).iterdir())
        ours = timed(write_raw_zip, folders, root / "ours.zip")
        base = timed(baseline, folders, root / "base.zip")
        atif = timed(write_raw_zip, folders, root / "atif.zip", include_atif=True)
        mb = size / 1e6
        print(f"{runs} runs, {mb:.1f} MB of run folders")
        print(
            f"write_raw_zip: {ours:.2f} s ({mb / ours:.0f} MB/s), zip "
            f"{(root / 'ours.zip').stat().st_size / 1e6:.1f} MB ({size / (root / 'ours.zip').stat().st_size:.1f}x smaller)"
        )
        print(
            f"baseline ZipFile.write: {base:.2f} s ({mb / base:.0f} MB/s); ratio ours/baseline {ours / base:.2f}x"
        )
        print(
            f"with include_atif: {atif:.2f} s ({1000 * (atif - ours) / runs:.1f} ms of ATIF per run); "
            f"ratio {atif / base:.2f}x the baseline"
        )


if __name__ == "__main__":
    main()
