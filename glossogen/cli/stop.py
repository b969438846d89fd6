"""``glossogen stop <run-folder>``: end a live run ``interrupted`` (resumable)."""

from __future__ import annotations

import typer

from glossogen import exit_codes


def stop(run_dir: str = typer.Argument(..., help="The run folder a live process writes.")) -> int:
    """End the run in RUN_DIR interrupted (resumable); a queued one is cancelled before it starts.

    A run a worker plays from a deployment is cancelled through Prefect (its flow_run.json);
    otherwise the process writing it (its .writer.lock pid) is signalled.
    """
    from glossogen.cli._refusals import error
    from glossogen.launch import StopError, StopRequest, stop_run
    from glossogen.refusals import worded

    try:
        stopping = stop_run(StopRequest(run_dir=run_dir))
    except StopError as exc:  # the library's line, the folder named as the argument
        error(worded(exc, {"run_dir": "RUN_DIR"}))  # a byte not UTF-8 shown as typed (\xff)
        return exc.exit_code
    scenario = stopping.run_id.partition("/")[0]
    print(stopping.said(f"glossogen run {scenario} --resume {stopping.resume_from}"))
    return int(exit_codes.OK)
