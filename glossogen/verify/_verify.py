"""Checking the books of many runs: ``glossogen verify``'s library.

A :class:`VerifyRequest` names the runs: run folders given one by one, or a runs directory with
the export's selection (:data:`glossogen.export.Selection`: run ids, or filters). Each run's log
is read once (:class:`~glossogen.eventlog.RunView`) and its books checked
(:meth:`RunView.check_books`); a derived run's copied events are checked against its source's
log (the folder its ``simulation_started.lineage`` names), read once for every run forked from
it that comes next. Only the rules a run breaks are kept, so 10,000 runs cost 10,000 reads
and little memory.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from glossogen.eventlog import (
    PROBE_LEDGER,
    BrokenRule,
    RunView,
    check_probe_ledger,
    read_events,
)
from glossogen.export import FilterSelection, SelectedRuns, Selection
from glossogen.refusals import NothingSelected, Refusal
from glossogen.storage import RunFolder, StorageError, path_kind, resolved

NO_LOG = "no event log"
"""Why a run folder with no event log cannot be verified (a claim never begun, a log deleted)."""


class VerifyError(ValueError):
    """A request that cannot be verified as asked; one line, with its exit code.

    A refused request value (``runs_dir``) or a selection that matched no run is carried as
    ``exc.refusal``: ``str()`` names the request's fields, each surface words it its own way.
    """

    def __init__(
        self,
        message: str = "",
        exit_code: int = 64,
        refusal: Refusal | NothingSelected | None = None,
    ) -> None:
        """Keep the message (or the refusal's) and the exit code (64, 65, 66, 69)."""
        super().__init__(message or (refusal.worded() if refusal else ""))
        self.exit_code = exit_code
        self.refusal = refusal


class _SourcesRefused(ValueError):
    """A ``VerifyRequest`` naming both sources of runs, or neither (pydantic's ``ctx``)."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.worded())
        self.refusal = refusal


class VerifyRequest(BaseModel):
    """Which runs to verify: ``run_dirs``, or ``runs_dir`` with a ``selection``, not both."""

    model_config = ConfigDict(extra="forbid")
    run_dirs: list[str] = []
    runs_dir: str | None = None
    selection: Selection = Field(default_factory=FilterSelection)

    @model_validator(mode="after")
    def _one_source(self) -> VerifyRequest:
        reason = None
        if self.run_dirs and self.runs_dir is not None:
            reason = "name run folders or a runs dir ({name}), not both"
        elif not self.run_dirs and self.runs_dir is None:
            reason = "name the run folders to verify, or a runs dir ({name})"
        elif self.run_dirs and self.selection.model_dump(exclude_defaults=True):
            reason = "the selection flags select runs of {name}, not run folders"
        if reason is not None:
            raise _SourcesRefused(Refusal(field="runs_dir", reason=reason, inline=True))
        return self


@dataclass
class VerifiedRun:
    """One run's books: every rule it breaks (none: they balance)."""

    run_id: str
    run_url: str
    broken: list[BrokenRule] = field(default_factory=list)

    @property
    def balanced(self) -> bool:
        """True when no rule is broken."""
        return not self.broken


@dataclass
class Verification:
    """What verifying a request found.

    Attributes:
        verified: Runs whose books were checked.
        failed: Run ids of those that break a rule, in the order verified.
        unreadable: Runs that could not be read (run folder or id -> the reason).
        missing_run_ids: Selected run ids that no longer resolve.
    """

    verified: int = 0
    failed: list[str] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)
    missing_run_ids: list[str] = field(default_factory=list)


class _Sources:
    """Source runs' views, the last one kept (forks of one source are usually verified together)."""

    def __init__(self) -> None:
        self._url = ""
        self._view: RunView | None = None

    def view(self, url: str) -> RunView:
        if url != self._url or self._view is None:
            self._view = RunView.load(RunFolder.at(url).log_url)
            self._url = url
        return self._view


def _source(where: str, sources: _Sources) -> tuple[RunView | None, str]:
    """A derived run's source, read, or None and why it cannot be read."""
    try:
        return sources.view(where), ""
    except FileNotFoundError as exc:
        return None, f"no event log {exc.filename or where}"
    except (ValueError, StorageError) as exc:
        return None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def books_of(view: RunView, folder: RunFolder, sources: _Sources | None = None) -> list[BrokenRule]:
    """Every rule the books of the run in ``folder`` (read as ``view``) break.

    A derived run's copied events are checked against its source's log, the folder its
    ``simulation_started.lineage`` names; a source that cannot be read breaks the
    ``inherited`` rule (its copied spend cannot be checked), named with the reason.
    """
    if not view.derived:
        return view.check_books(folder.run_id)
    lineage: dict[str, Any] = (view.started.lineage if view.started else None) or {}
    where = str(lineage.get("source_run_dir") or "")
    source, reason = _source(where, sources or _Sources())
    broken = view.check_books(folder.run_id, source)
    if source is None:
        broken.append(
            BrokenRule(
                folder.run_id,
                "inherited",
                "lineage",
                f"the source run {where or '(not named)'} cannot be read ({reason}): "
                "its copied spend is unchecked",
            )
        )
    return broken


def verify_run(folder: RunFolder, sources: _Sources | None = None) -> VerifiedRun:
    """Read one run's log and check its books (:func:`books_of`), and its probe ledger.

    The ledger of ``evaluate``'s ``protocol_probe`` requests (:data:`PROBE_LEDGER`), when the
    run folder holds one, is held to the ``requests`` rule too, and, when the run's report
    (``<scenario>_report.json``) holds a ``protocol_probe`` entry, its last probe's priced
    total to that entry's ``cost_usd`` (the ``spend`` rule).

    Raises:
        FileNotFoundError: the run has no event log.
        ValueError: the log holds no ``simulation_started`` (not a run's log).
        StorageError: the storage is unreachable.
    """
    view = RunView.load(folder.log_url)
    if not view.is_run_log:
        raise ValueError(f"{folder.log_url} is not a run log (no simulation_started event)")
    if view.ended is None:  # asked only where it matters: a live writer's requests in flight
        view.live = folder.is_locked()
    broken = books_of(view, folder, sources)
    if folder.exists(PROBE_LEDGER):  # the probe's requests, asked by evaluate
        broken += check_probe_ledger(
            read_events(folder.file_url(PROBE_LEDGER)), folder.run_id, _probe_cost(folder)
        )
    return VerifiedRun(folder.run_id, folder.url, broken)


def _probe_cost(folder: RunFolder) -> tuple[str, float | None] | None:
    """The run's report name and its ``protocol_probe.cost_usd``; None without such an entry."""
    from glossogen.evaluation import read_report, report_name

    report = read_report(folder.url, folder.scenario)
    entry = report.metrics.get("protocol_probe") if report is not None else None
    return None if entry is None else (report_name(folder.scenario), entry.cost_usd)


def _folders(request: VerifyRequest, found: Verification) -> list[RunFolder]:
    """The run folders the request names, each once (unreadable or missing ones in ``found``).

    A folder named twice, or by two spellings (``runs/veyru/17/``, a link to it), is one run:
    it is verified, or named unreadable, once.
    """
    if request.runs_dir is None:
        return _named(request.run_dirs, found)
    selected = select_cohort(request.runs_dir, request.selection, "verify", unstarted=True)
    found.unreadable.update(selected.unreadable)
    found.unreadable.update({run_id: NO_LOG for run_id in selected.unstarted})
    found.missing_run_ids.extend(selected.missing_run_ids)
    return [RunFolder.at(record.run_url) for record in selected.records]  # each place once


def _named(run_dirs: list[str], found: Verification) -> list[RunFolder]:
    """The run folders named one by one, read as a runs dir's selection reads them.

    Each is read by :func:`~glossogen.export.load_folder`, as ``select_cohort`` reads a run
    under a runs dir, so a folder gets the same verdict however it is named (a broken
    ``labels.json`` makes it unreadable both ways).
    """
    from glossogen.export import load_folder

    folders: list[RunFolder] = []
    seen: set[str] = set()
    for run_dir in run_dirs:
        where = resolved(run_dir)
        if where in seen:
            continue
        seen.add(where)
        if path_kind(run_dir) == "missing":
            found.unreadable[run_dir] = f"{run_dir!r} does not exist"
            continue
        try:
            folder = RunFolder.at(run_dir)
            load_folder(folder)
        except FileNotFoundError:
            found.unreadable[run_dir] = NO_LOG
            continue
        except ValueError as exc:  # not a run folder or log, a broken JSON file
            found.unreadable[run_dir] = str(exc).splitlines()[0][:300]
            continue
        folders.append(folder)
    return folders


def select_cohort(
    runs_dir: str, selection: Selection, verb: str, unstarted: bool = False
) -> SelectedRuns:
    """The export's selection of runs under ``runs_dir``, for a command that must find one.

    Args:
        runs_dir: The runs directory.
        selection: Which runs.
        verb: What the command does with them (``verify``), for the refusal of none.
        unstarted: Count a selected run folder with no event log
            (:attr:`SelectedRuns.unstarted`) as a run found (``verify`` names it).

    Raises:
        VerifyError: ``runs_dir`` is not a folder (66), its storage is unreachable (69), or
            the selection matches no run (65: ``... : nothing to <verb>``).
        SelectionError: a knob condition cannot be read as the recorded type (65).
    """
    from glossogen.export import RunsDirError, check_runs_dir, select_runs

    try:
        check_runs_dir(runs_dir)
    except RunsDirError as exc:
        raise VerifyError(
            exit_code=66, refusal=Refusal(field="runs_dir", reason=str(exc))
        ) from None
    except StorageError as exc:
        raise VerifyError(str(exc), 69) from None
    selected = select_runs(runs_dir, selection, max_runs=sys.maxsize)
    if not unstarted:
        selected.unstarted = []
    if not (selected.records or selected.unreadable or selected.missing_run_ids
            or selected.unstarted):  # fmt: skip
        nothing = NothingSelected(
            runs_dir=runs_dir,
            filters=selection_filters(selection),
            scanned=selected.scanned,
            verb=verb,
        )
        raise VerifyError(exit_code=65, refusal=nothing)
    return selected


def selection_filters(selection: Selection) -> tuple[tuple[str, str], ...]:
    """The filters ``selection`` gives, ``(field, value shown)``, a list's once per value."""
    given = selection.model_dump(exclude_defaults=True, exclude={"kind"})
    return tuple(
        (name, repr(v))
        for name, value in given.items()
        for v in (value if isinstance(value, list) else [value])
    )


def verify_runs(
    request: VerifyRequest, on_run: Callable[[VerifiedRun], None] | None = None
) -> Verification:
    """Check the books of every run ``request`` names, in order; ``on_run`` sees each one.

    Raises:
        VerifyError: the runs dir is not a folder (66), its storage is unreachable (69), or
            the selection matches no run (65: a verification of nothing is no pass).
        SelectionError: a knob condition cannot be read as the recorded type (65).
        StorageError: the storage failed while runs were read.
    """
    found = Verification()
    sources = _Sources()
    for folder in _folders(request, found):
        try:
            run = verify_run(folder, sources)
        except FileNotFoundError:
            found.unreadable[folder.url] = NO_LOG
            continue
        except (ValueError, IsADirectoryError, NotADirectoryError) as exc:
            found.unreadable[folder.url] = str(exc).splitlines()[0][:300]
            continue
        found.verified += 1
        if run.broken:
            found.failed.append(run.run_id)
        if on_run is not None:
            on_run(run)
    return found
