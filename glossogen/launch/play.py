"""A detached start of a claimed run: ``python -m glossogen.launch.play <run_dir>``.

Reads the run's ``RunConfig`` (JSON) on stdin and plays the ``simulate`` flow into the folder
the launcher claimed (``<run_dir> resume``: a ``ResumeRequest``, played as the ``resume``
flow in the run's own folder); its output goes to the folder's stdout log. Exit codes as ``glossogen
run``'s; SIGINT (``glossogen stop``) ends the run ``interrupted``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any


def _played(argv: list[str]) -> Any:
    """The run's flow, as ``argv`` and stdin say: a claimed run, or a resume (``resume``)."""
    from glossogen.launch import ResumeRequest, RunConfig, plan_resume

    given = json.loads(sys.stdin.buffer.read())
    if argv[1:] == ["resume"]:
        from flows.simulate import resume

        request = ResumeRequest.model_validate(given)
        config, _ = plan_resume(request)
        return resume(config, argv[0], request.allow_config_change)
    from flows.simulate import simulate

    return simulate(RunConfig.model_validate(given), run_dir=argv[0])


def main(argv: list[str]) -> int:
    """Play the claimed run folder ``argv[0]`` under the config read from stdin.

    ``argv[1]`` ``resume``: stdin holds a ``ResumeRequest`` (MCP's ``resume_run`` with a
    change asked); the run goes on in its folder under it.
    """
    from glossogen import exit_codes
    from glossogen.launch import answer_ctrl_c, apply_prefect_defaults

    answer_ctrl_c()
    apply_prefect_defaults()
    try:
        result = asyncio.run(_played(argv))
    except KeyboardInterrupt:
        print("glossogen: error: interrupted; the run ends 'interrupted'", flush=True)
        sys.stdout.flush()
        os._exit(130)  # as `glossogen run`: leave without retrying a Prefect API
    print(f"{result.run_id} {result.status}: {result.rounds_won}/{result.rounds_played} won")
    return exit_codes.of_run_status(result.status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
