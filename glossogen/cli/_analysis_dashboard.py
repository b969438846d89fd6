"""``glossogen analyze --dashboard FILE --out DIR``: a dashboard file rendered as a static report.

The file (named queries and charts, ``glossogen.analysis._dashboard``) is read and every query
answered before anything is written; no query flag goes with it.
"""

from __future__ import annotations

from typing import Any

from glossogen import exit_codes
from glossogen.cli._refusals import refused


def dashboard_alone(
    runs_dir: str, dashboard: str | None, out: str | None, given: tuple[tuple[str, Any], ...]
) -> int:
    """``--dashboard``: refuse any query flag given with it (the file holds the queries)."""
    if dashboard is None:  # --out alone: it is the dashboard's folder
        return refused("--out DIR goes with --dashboard FILE (a dashboard's report folder)",
                      exit_codes.USAGE)  # fmt: skip
    asked = [flag for flag, value in given if value]
    if asked:
        return refused(f"--dashboard takes its queries from the file, not {asked[0]}",
                      exit_codes.USAGE)  # fmt: skip
    return _dashboard(runs_dir, dashboard, out)


def _dashboard(runs_dir: str, path: str | None, out: str | None) -> int:
    """Render the dashboard at ``path`` over ``runs_dir`` into the folder ``out``."""
    from glossogen.analysis import NamedRunsRefused, QueryError
    from glossogen.analysis._dashboard import (
        DashboardError,
        DashboardUnreadable,
        QuerySelectionRefused,
        ReportNotWritten,
        answer_dashboard,
        check_out,
        load_dashboard,
        write_report,
    )
    from glossogen.export import RunsDirError, check_runs_dir
    from glossogen.refusals import Refusal, refusal_of, shown_path, worded
    from glossogen.storage import StorageError

    if path is None or out is None:
        return refused("--dashboard FILE and --out DIR go together", exit_codes.USAGE)
    try:
        board = load_dashboard(path)
    except DashboardUnreadable as exc:
        return refused(f"--dashboard {exc}", exit_codes.UNREADABLE)
    except DashboardError as exc:
        return refused(f"--dashboard {exc}", exit_codes.USAGE)
    try:
        check_out(out)
    except DashboardError as exc:
        return refused(f"--out {exc}", exit_codes.USAGE)
    try:
        check_runs_dir(runs_dir)
        rendered = answer_dashboard(runs_dir, board)
    except RunsDirError as exc:
        return refused(f"--runs-dir {exc}", exit_codes.UNREADABLE)
    except QueryError as exc:
        return refused(f"--dashboard {shown_path(path, quoted=False)}: {exc.field} {exc.detail}",
                      exit_codes.USAGE)  # fmt: skip
    except NamedRunsRefused as exc:
        return refused(
            f"--dashboard {shown_path(path, quoted=False)}: {exc}", exit_codes.UNREADABLE
        )
    except QuerySelectionRefused as exc:  # named by the query's fields, as a QueryError is
        refusal = refusal_of(exc.cause)
        fields = (refusal.field, *refusal.also) if isinstance(refusal, Refusal) else ()
        query = {f: f"queries.{exc.query}.selection.{f}" for f in fields}
        return refused(f"--dashboard {shown_path(path, quoted=False)}: {worded(exc.cause, query)}",
                      exit_codes.REFUSED)  # fmt: skip
    except StorageError as exc:
        return refused(str(exc), exit_codes.TRANSPORT)
    try:
        written = write_report(rendered, out, source=path)
    except DashboardError as exc:  # --out changed while the queries were answered
        return refused(f"--out {exc}", exit_codes.USAGE)
    except ReportNotWritten as exc:
        return refused(f"--out {exc}", exit_codes.CANNOT_WRITE)
    print(f"wrote {len(written)} files to {out}: {', '.join(written)}")
    return int(exit_codes.OK)
