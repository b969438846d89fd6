"""``glossogen verify``: check that runs' books balance before their figures are published.

Each run's event log is read once and its books checked (:mod:`glossogen.verify`): every model
request that began ended once, every completed round has one verdict per team, every
``simulation_ended`` records what its priced events sum to and no priced request costs less
than nothing, a derived run's copied spend is its source's, no line is damaged, a run no
process writes has ended (else it is a stopped run whose books cannot close). One line per
broken rule on stdout (``<run id>: <rule>: <where>: <what>``), then ``verified N runs: M
failed``. A folder is read alike named by path or selected under ``--runs-dir`` (one verdict),
and verified once however often or however spelled it is named.

Exit codes: 0 every run balances; 1 some run breaks a rule; 64 usage (run folders and
``--runs-dir`` together, a selection flag without ``--runs-dir``, ``--run-id`` with a filter,
a knob condition with no operator); 65 a knob value that cannot be read as the recorded type,
a ``--scenario`` no run has, or a selection that matches no run (nothing verified is no pass);
66 a run that cannot be read (no log, under ``--runs-dir`` too; a ``labels.json``,
``config.json`` or ``lineage.json`` that is not a JSON object; not a run folder; a
``--runs-dir`` that is not a folder; run ids that no longer resolve; named on stderr); 69
unreachable storage.
"""

from __future__ import annotations

import typer

from glossogen import exit_codes
from glossogen.cli import _selection as options
from glossogen.cli._refusals import error, said, said_of_selection, selection_refused
from glossogen.refusals import refusal_of, validator_line


def _error(message: str, code: int) -> int:
    error(message)
    return int(code)


def verify(
    run_dirs: list[str] = typer.Argument(
        None, metavar="RUN_DIR", help="Run folders (paths or fsspec URLs)."
    ),
    runs_dir: str | None = typer.Option(
        None, "--runs-dir", metavar="DIR", help="Verify the selected runs under this folder."
    ),
    scenario: list[str] = options.SCENARIO,
    label: list[str] = options.LABEL,
    knob: list[str] = options.KNOB,
    status: str | None = options.STATUS,
    run_id: list[str] | None = options.RUN_ID,
    run_id_contains: str | None = options.RUN_ID_CONTAINS,
    contains_agent_id: str | None = options.CONTAINS_AGENT_ID,
) -> int:
    """Check that each run's books balance: one line per broken rule, exit 1 if any."""
    from pydantic import ValidationError

    from glossogen.export import SelectionError, selection_of
    from glossogen.storage import StorageError
    from glossogen.verify import VerifiedRun, VerifyError, VerifyRequest, verify_runs

    try:
        selection = selection_of(run_id, scenario, label, run_id_contains, status,
                                 contains_agent_id, knob)  # fmt: skip
        request = VerifyRequest(run_dirs=run_dirs or [], runs_dir=runs_dir, selection=selection)
    except SelectionError as exc:  # every value refused, a line each
        return selection_refused(exc, exit_codes.USAGE)
    except ValidationError as exc:
        if refusal_of(exc) is not None:
            return _error(said(exc), exit_codes.USAGE)
        return _error(validator_line(exc.errors()[0]), exit_codes.USAGE)

    def say(run: VerifiedRun) -> None:
        for rule in run.broken:
            print(rule.text, flush=True)

    try:
        found = verify_runs(request, say)
    except VerifyError as exc:
        return _error(said_of_selection(exc), exc.exit_code)
    except SelectionError as exc:  # every value refused, a line each
        return selection_refused(exc, exit_codes.REFUSED)
    except StorageError as exc:
        return _error(str(exc), exit_codes.TRANSPORT)
    for where, reason in found.unreadable.items():  # a file's escape stays as the file has it
        error(f"{where}: cannot be read: {reason}", quotes_a_file=True)
    for missing in found.missing_run_ids:
        _error(f"{missing}: no such run under {runs_dir}", exit_codes.UNREADABLE)
    unread = len(found.unreadable) + len(found.missing_run_ids)
    summary = f"verified {found.verified} run{'' if found.verified == 1 else 's'}: "
    summary += f"{len(found.failed)} failed"
    print(summary + (f", {unread} unreadable" if unread else ""), flush=True)
    if unread:
        return int(exit_codes.UNREADABLE)
    return int(exit_codes.EVALUATIONS_FAILED if found.failed else exit_codes.OK)
