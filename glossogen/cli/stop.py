"""``glossogen stop <run-folder>``: end a live run ``interrupted`` (resumable)."""

from __future__ import annotations

import sys

import typer

from glossogen import exit_codes


def stop(run_dir: str = typer.Argument(..., help="The run folder a live process writes.")) -> int:
    """Signal the process writing RUN_DIR (its .writer.lock pid) to end the run interrupted."""
    from glossogen.mcp._launch import StopError, stop_writer
    from glossogen.storage import RunFolder

    try:
        folder = RunFolder.at(run_dir.rstrip("/"))
        pid = stop_writer(folder)
    except ValueError as exc:
        print(f"glossogen: error: {exc}", file=sys.stderr)
        return int(exit_codes.USAGE)
    except StopError as exc:
        print(f"glossogen: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(
        f"stopping {folder.run_id} (pid {pid}): it ends 'interrupted'; resume it with "
        f"glossogen run {folder.scenario} --resume {folder.url}"
    )
    return int(exit_codes.OK)
