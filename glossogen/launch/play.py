"""A detached start of a claimed run: ``python -m glossogen.launch.play <run_dir>``.

Reads the run's ``RunConfig`` (JSON) on stdin and plays the ``simulate`` flow into the folder
the launcher claimed; its output goes to the folder's stdout log. Exit codes as ``glossogen
run``'s; SIGINT (``glossogen stop``) ends the run ``interrupted``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys


def main(argv: list[str]) -> int:
    """Play the claimed run folder ``argv[0]`` under the config read from stdin."""
    from glossogen import exit_codes
    from glossogen.launch import RunConfig, answer_ctrl_c, apply_prefect_defaults

    answer_ctrl_c()
    apply_prefect_defaults()
    config = RunConfig.model_validate(json.loads(sys.stdin.buffer.read()))
    from flows.simulate import simulate

    try:
        result = asyncio.run(simulate(config, run_dir=argv[0]))
    except KeyboardInterrupt:
        print("glossogen: error: interrupted; the run ends 'interrupted'", flush=True)
        sys.stdout.flush()
        os._exit(130)  # as `glossogen run`: leave without retrying a Prefect API
    print(f"{result.run_id} {result.status}: {result.rounds_won}/{result.rounds_played} won")
    return exit_codes.of_run_status(result.status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
