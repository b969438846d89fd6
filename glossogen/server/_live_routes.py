"""A run's live routes: its events as Server-Sent Events, and the Stop button.

``GET /api/g/{group}/runs/{scenario}/{ts}/events`` streams the run's event log
(``text/event-stream``): per event an ``id:`` (its ``event_id``), an ``event:`` (its
``event_type``) and one ``data:`` line (the event's JSON). It starts at the log's first event,
or right after the event a reconnecting client names in ``Last-Event-ID`` (the header every
``EventSource`` sends again; ``?last_event_id=`` does the same for a first connection), so no
event is lost or repeated. An id that names no event of the log (another run's, or one from a
log since rewritten) is refused, 409 with one line, rather than replayed from the start: a
client that means the start sends none. The log is read through
:class:`~glossogen.eventlog.LogTail` (the reader's rule, line by line), polled every
:data:`POLL_SECONDS`, locally or on ``s3://`` (the shipped log). The stream ends once the log
ends in ``simulation_ended`` and nothing follows, or, for a run no writer holds, once its log
has been read to the end; a finished run is sent whole and the stream ends. A client that
disconnects ends its stream at the next frame (nothing more is written to its socket).

``GET /api/g/{group}/runs/{scenario}/{ts}/summary`` is what the live page refreshes when a
cost-bearing event or a verdict streams in: status, the header's cost line, each seat's
requests, tokens, spend and failures, and each recorded round's team outcomes
(:func:`glossogen.launch.team_outcomes`, the finished page's and MCP's rule), all from the
run's :class:`~glossogen.eventlog.RunView`.

``POST /api/g/{group}/runs/{scenario}/{ts}/stop`` is ``glossogen stop <run-dir>``
(``glossogen.launch.stop_run``): a run a worker plays from a deployment is
cancelled through Prefect, a local writer (the pid the folder's ``.writer.lock`` records) is
signalled; the run ends ``interrupted``, resumable. 409 with the CLI's one line when there is
nothing to stop.

A run id that is not a run under the runs directory (``..``, an absolute path, an encoded
separator, a byte that is not UTF-8, a run of another group) is a 404: nothing is read outside
the runs directory. Each route reads the id through the one resolver
(:func:`~glossogen.storage.resolve_run_id`), a one-part id (``veyru%5C123``) on routes of its
own, so a malformed id is the library's line (``field`` ``run_id``) on every route.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import unquote_to_bytes

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import StreamingResponse

from glossogen.eventlog import Event, LogTail, RunView, SimulationEnded
from glossogen.refusals import shown_path
from glossogen.server._run_page import live_summary, within_runs_dir
from glossogen.storage import (
    CONFIG,
    RunFolder,
    RunIdRefused,
    StorageError,
    resolve_run_id,
    run_id_refused,
)

POLL_SECONDS = 0.2
"""How often a live log is read again, seconds."""

IDLE_POLLS_TO_END = 5
"""Polls at the end of a log no writer holds before its stream ends (a writer between its
claim and its lock is given this long to take it)."""

KEEPALIVE_SECONDS = 15.0
"""A comment line is sent after this many seconds without an event (proxies keep the stream)."""

_SENT_PREFIX = re.compile(rb"^(?:/api/g/[^/]*)?/runs/")
"""Where a run route's path starts its run id: ``/runs/`` (the page), ``/api/g/<group>/runs/``."""


def refuse_sent_run_id(request: Request) -> None:
    r"""Refuse a run id whose bytes as sent the router's reading would hide: a 404.

    The server decodes ``%2F`` before routing, so ``veyru%2F1796446580`` would reach a run, and
    reads a byte that is not UTF-8 (``veyru/%FF``) as U+FFFD. The id as sent is judged by the
    one rule (:func:`~glossogen.storage.run_id_refused`): an encoded separator is not a run
    id, named as sent (``run_id 'veyru%2F1796446580': not a run id (...)``); a byte that is not
    UTF-8 is not text (``run_id 'veyru/\udcff': not UTF-8 text``). Any other id is left to the
    route's resolver.

    Raises:
        HTTPException: 404, ``field`` ``run_id``, the library's line.
    """
    raw = bytes(request.scope.get("raw_path") or request.url.path.encode())
    sent = _SENT_PREFIX.sub(b"", raw, count=1)
    for route in (b"/events", b"/summary", b"/stop"):
        sent = sent.removesuffix(route)
    decoded = unquote_to_bytes(sent)
    try:
        run_id = decoded.decode("utf-8")
    except UnicodeDecodeError:
        refused = run_id_refused("run_id", decoded.decode("utf-8", "surrogateescape"))
    else:
        if b"%2f" not in sent.lower():
            return
        as_sent = sent.decode("latin-1")
        refused = run_id_refused("run_id", as_sent) or run_id_refused("run_id", run_id)
        if refused is not None:
            refused = refused.model_copy(update={"value": shown_path(as_sent)})
    if refused is not None:
        raise HTTPException(404, {"field": "run_id", "message": refused.worded()})


router = APIRouter(
    prefix="/api/g/{group}/runs", tags=["live"], dependencies=[Depends(refuse_sent_run_id)]
)


def run_folder(runs_dir: str, run_id: str, queued: bool = False) -> RunFolder:
    r"""The folder of run ``run_id`` under ``runs_dir`` (the one resolver's), or a 404.

    With ``queued``, a claimed folder (``config.json``) whose log has not begun is one too.

    Raises:
        HTTPException: 404, ``field`` ``run_id``, for a malformed id (the library's line:
            ``run_id 'veyru\123': not a run id (...)``, as Stop says it); 404 ``no run
            <id>: it has no event log`` for an id that names no run (``veyru/abc``, a run
            deleted) or whose folder holds no event log (nor, with ``queued``, a claim); 404
            ``veyru/<ts>/veyru.jsonl is not a run log (empty)`` for an empty log no process
            holds (:meth:`RunFolder.empty_log_refused`: the run list's note for it).
    """
    no_log = HTTPException(404, {"message": f"no run {run_id}: it has no event log"})
    try:
        folder = resolve_run_id(runs_dir, run_id)
        stamp = folder.log_stamp()
    except RunIdRefused as exc:
        if exc.refusal is None:  # an id naming no run: as a run deleted
            raise no_log from None
        raise HTTPException(404, {"field": "run_id", "message": str(exc)}) from None
    except StorageError as exc:
        raise HTTPException(404, {"message": f"no run {run_id}: {exc}"}) from exc
    refused = folder.empty_log_refused() if stamp is not None and stamp[0] == 0 else None
    if refused is not None:  # no process about to write it: no run's log, as the list skips it
        raise HTTPException(404, {"message": refused})
    if stamp is None and not (queued and folder.exists(CONFIG)):
        raise no_log
    return folder


def load_scenario_events(scenario: str) -> None:
    """Import the scenario so its own events (its case, its rulings...) are typed."""
    from glossogen.scenario import load_scenario

    try:
        load_scenario(scenario)
    except Exception:  # a run of a scenario not installed here still reads, its events as dicts
        return


def _frame(item: Event | dict[str, Any], number: int) -> bytes:
    if isinstance(item, Event):
        event_id, kind, data = item.event_id, item.event_type, item.model_dump_json()
    else:
        event_id = str(item.get("event_id") or f"line-{number}")
        kind, data = str(item.get("event_type")), json.dumps(item, ensure_ascii=False)
    return f"id: {event_id}\nevent: {kind}\ndata: {data}\n\n".encode()


def _id_of(item: Event | dict[str, Any], number: int) -> str:
    if isinstance(item, Event):
        return item.event_id
    return str(item.get("event_id") or f"line-{number}")


def read_backlog(tail: LogTail) -> list[Event | dict[str, Any]]:
    """Every event the log holds now (``tail`` then follows from its end); none for no log."""
    backlog: list[Event | dict[str, Any]] = []
    while True:
        try:
            items = tail.poll()
        except (FileNotFoundError, StorageError):
            return backlog
        if not items:
            return backlog
        backlog.extend(items)


def resume_point(backlog: list[Event | dict[str, Any]], after: str | None, run_id: str) -> int:
    """Index in ``backlog`` of the first event to send: 0, or right after event ``after``.

    Raises:
        HTTPException: 409 when ``after`` names no event of the log (an id from another run,
            or a log rewritten since): the stream would otherwise start over unasked.
    """
    if not after:
        return 0
    for number, item in enumerate(backlog, 1):
        if _id_of(item, number) == after:
            return number
    raise HTTPException(
        409,
        {
            "message": f"Last-Event-ID {after!r} names no event of run {run_id}'s log; "
            "reconnect without it to read the log from its first event"
        },
    )


async def follow(
    folder: RunFolder,
    tail: LogTail,
    backlog: list[Event | dict[str, Any]],
    start: int = 0,
    request: Request | None = None,
) -> AsyncIterator[bytes]:
    """Yield the run's events as SSE frames: ``backlog[start:]``, then what ``tail`` reads."""
    number = len(backlog)
    last_was_end = bool(backlog) and isinstance(backlog[-1], SimulationEnded)
    idle = 0
    quiet = 0.0
    yield b"retry: 1000\n\n"
    for n, item in enumerate(backlog[start:], start + 1):
        yield _frame(item, n)
        if await _gone(request):
            return
    while True:
        if last_was_end:
            return
        try:
            items = await asyncio.to_thread(tail.poll)
        except (FileNotFoundError, StorageError):
            items = []
        for item in items:
            number += 1
            last_was_end = isinstance(item, SimulationEnded)
            yield _frame(item, number)
            if await _gone(request):
                return
        if items:
            idle, quiet = 0, 0.0
            continue  # read on at once: a long log arrives in several reads
        if last_was_end:
            return
        live = await asyncio.to_thread(folder.is_locked)
        idle = 0 if live else idle + 1
        if idle >= IDLE_POLLS_TO_END:
            return
        if await _gone(request):
            return
        await asyncio.sleep(POLL_SECONDS)
        quiet += POLL_SECONDS
        if quiet >= KEEPALIVE_SECONDS:
            quiet = 0.0
            yield b": keep-alive\n\n"


async def _gone(request: Request | None) -> bool:
    """True once the client has disconnected: the stream stops sending.

    The event loop is let run first (``sleep(0)``): frames are written without waiting, so a
    long backlog would otherwise be written whole before the server heard of the disconnect,
    every write after it one socket warning in the log.
    """
    await asyncio.sleep(0)
    return request is not None and await request.is_disconnected()


def group_of_folder(folder: RunFolder) -> str:
    """The group that owns the run in ``folder``: ``export.group_of`` its log's head.

    A queued run (no log yet) records no group: listed under the default one.
    """
    from glossogen.export import group_of
    from glossogen.export._runlog import read_log_head

    if not folder.has_log():  # a queued run: no group recorded yet (listed under the default)
        return group_of(None)
    # Its log's head alone: the stream, the summary and Stop read no other file of the folder,
    # so a damaged labels.json or config.json (the list's skipped run) does not refuse them.
    try:
        started = read_log_head(folder.log_url).started
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise HTTPException(
            404, {"message": f"no run {folder.run_id}: it has no event log"}
        ) from None
    if started is None:
        raise HTTPException(404, {"message": f"no run {folder.run_id}: its log is not a run log"})
    return group_of(started)


@router.get("/{scenario}/{ts}/events")
async def events(group: str, scenario: str, ts: str, request: Request) -> StreamingResponse:
    """Stream the run's events (the module docstring's rules).

    Raises:
        HTTPException: 404 for a run that is not one of this group's runs.
    """
    return await _events(group, f"{scenario}/{ts}", request)


@router.get("/{run_id}/events")
async def events_one_part(group: str, run_id: str, request: Request) -> StreamingResponse:
    """Refuse a run id of one part (``veyru%5C123``) with the library's line, as Stop does."""
    return await _events(group, run_id, request)


async def _events(group: str, run_id: str, request: Request) -> StreamingResponse:
    folder = run_folder(request.app.state.settings.runs_dir, run_id)
    if await asyncio.to_thread(group_of_folder, folder) != group:
        raise HTTPException(404, {"message": f"no run {folder.run_id} in group {group!r}"})
    load_scenario_events(folder.scenario)
    after = request.headers.get("last-event-id") or request.query_params.get("last_event_id")
    tail = LogTail(folder.log_url)
    backlog = await asyncio.to_thread(read_backlog, tail)
    start = resume_point(backlog, after, folder.run_id)
    return StreamingResponse(
        follow(folder, tail, backlog, start, request),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.get("/{scenario}/{ts}/summary")
def summary(group: str, scenario: str, ts: str, request: Request) -> dict[str, Any]:
    """The live page's summary of the run (the module docstring's), from its ``RunView``.

    Raises:
        HTTPException: 404 for a run that is not one of this group's runs.
    """
    return _summary(group, f"{scenario}/{ts}", request)


@router.get("/{run_id}/summary")
def summary_one_part(group: str, run_id: str, request: Request) -> dict[str, Any]:
    """Refuse a run id of one part (``veyru%5C123``) with the library's line, as Stop does."""
    return _summary(group, run_id, request)


def _summary(group: str, run_id: str, request: Request) -> dict[str, Any]:
    folder = run_folder(request.app.state.settings.runs_dir, run_id)
    if group_of_folder(folder) != group:
        raise HTTPException(404, {"message": f"no run {folder.run_id} in group {group!r}"})
    load_scenario_events(folder.scenario)
    try:
        view = RunView.load(folder.log_url, live=folder.is_locked())
    except (FileNotFoundError, StorageError) as exc:
        said = within_runs_dir(folder, str(exc))
        raise HTTPException(404, {"message": f"no run {folder.run_id}: {said}"}) from exc
    return live_summary(view)


@router.post("/{scenario}/{ts}/stop")
def stop(group: str, scenario: str, ts: str, request: Request) -> dict[str, Any]:
    """Stop the live run as ``glossogen stop <run-dir>`` does; answer its pid and message.

    Raises:
        HTTPException: 404 for a run id not shaped ``<scenario>/<run_dir_name>`` (``field``
            ``run_id``) or naming no run (``run ids that no longer resolve: ...``, the
            library's lines, as ``glossogen stop`` and MCP's ``stop_run`` say them) or a run
            that is not one of this group's runs; 409 (the CLI's one line) when no live
            process writes it or the folder is remote; 503 when its flow run's Prefect server
            cannot be reached.
    """
    return _stop(group, f"{scenario}/{ts}", request)


@router.post("/{run_id}/stop")
def stop_one_part(group: str, run_id: str, request: Request) -> dict[str, Any]:
    """Refuse to stop a run id of one part (``veyru%5C123``) with the library's line.

    As for any malformed id (404, ``field`` ``run_id``), not the router's bare ``Not Found``.
    """
    return _stop(group, run_id, request)


def _stop(group: str, run_id: str, request: Request) -> dict[str, Any]:
    from glossogen.launch import StopError, StopRequest, stop_folder, stop_run

    asked = StopRequest(runs_dir=request.app.state.settings.runs_dir, run_id=run_id)
    try:  # the library's one check of the run id, as the CLI and MCP
        folder = stop_folder(asked)
        if group_of_folder(folder) != group:
            raise HTTPException(404, {"message": f"no run {folder.run_id} in group {group!r}"})
        stopping = stop_run(asked)
    except StopError as exc:  # a run id naming no run: 404, as the export's missing ids
        status = {64: 404, 66: 404, 69: 503}.get(exc.exit_code, 409)
        detail = {"field": exc.refusal.field} if exc.refusal is not None else {}
        raise HTTPException(status, {**detail, "message": str(exc)}) from exc
    return {
        "run_id": folder.run_id,
        "pid": stopping.pid,
        "flow_run_id": stopping.flow_run_id,
        # the page's reader resumes from a shell: the command, as `glossogen stop` says it
        # the server's own folder is not shown to its callers: the runs dir by name
        "message": stopping.said(
            f"glossogen run {folder.scenario} --resume <runs-dir>/{folder.run_id}"
        ),
    }
