"""``glossogen replay RUN_DIR --runs-dir R``: play a run again from its log, and compare.

The run is played again into a new folder under ``R`` by the ``replay`` provider (every seat
and the judge answered from the run's tape: no network, no key, nothing billed) on the
virtual clock, or for a process the record played on the real clock with its time read from
the record (:mod:`glossogen.replay`). Printed: the replay's folder, then either
``replayed N calls, M events: identical`` with the events per second, or the first call whose
request differs (one line: seat, call index, round, both fingerprints; when every request is
the same, the first event that differs: its place, type, seat, round and fields) followed by a
unified diff of the first event that differs, and whether verdicts and spend are the same. A run
recorded before request fingerprints were logged is replayed without the request check, and
the output says so.

Exit codes: 0 identical; 1 a divergence; 64 a ``--runs-dir`` that is not UTF-8 text; 65 a run
that has not ended, whose log lost an event or holds one twice, or whose recorded knobs no
longer validate; 66 not a run folder, or no log, or a ``--runs-dir`` in which no folder can be
made (a file, not writable); 69 unreachable storage.
"""

from __future__ import annotations

import typer

from glossogen import exit_codes
from glossogen.cli._refusals import error, said


def _error(message: str, code: int) -> int:
    error(message)
    return int(code)


def replay(
    run_dir: str = typer.Argument(..., metavar="RUN_DIR", help="The recorded run's folder."),
    runs_dir: str = typer.Option(
        ..., "--runs-dir", metavar="DIR", help="Where the replay's folder is claimed."
    ),
) -> int:
    """Play a run again from its log with no provider; exit 1 at the first divergence."""
    from glossogen.derive import DeriveError
    from glossogen.launch import LaunchError
    from glossogen.replay import ReplayRequest, replay_run
    from glossogen.storage import StorageError

    try:
        report = replay_run(ReplayRequest(run_dir=run_dir, runs_dir=runs_dir))
    except (DeriveError, LaunchError) as exc:
        return _error(said(exc), exc.exit_code)  # a refused value named by its flag
    except StorageError as exc:
        return _error(str(exc), exit_codes.TRANSPORT)
    print(f"replay of {report.source_run_id}: {report.replay_url}", flush=True)
    if not report.fingerprinted:
        print(
            "no request fingerprints in this log (recorded before they were logged): "
            "replayed without the request check",
            flush=True,
        )
    rate = report.events / report.seconds if report.seconds else 0.0
    if report.stalled is not None:
        print(report.stalled, flush=True)
    if report.divergence is not None:
        print(report.divergence.line(), flush=True)
    elif report.event_divergence is not None:  # every request the same, an event not
        print(report.event_divergence, flush=True)
    if report.event_diff is not None:
        print(report.event_diff, flush=True)
    if report.interleaved:
        print(
            "the seats' events interleave otherwise than recorded; each seat's are the same",
            flush=True,
        )
    if not report.verdicts_equal:
        print("verdicts differ from the recorded ones", flush=True)
    if not report.spend_equal:
        print(
            f"spend differs: recorded {report.recorded_cost_usd} USD, "
            f"replayed {report.replayed_cost_usd} USD",
            flush=True,
        )
    verdict = "identical" if report.identical else "DIVERGED"
    print(
        f"replayed {report.calls} calls, {report.events} events in {report.seconds:.2f} s "
        f"({rate:.0f} events/s): {verdict}",
        flush=True,
    )
    return int(exit_codes.OK if report.identical else exit_codes.EVALUATIONS_FAILED)
