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

Each route (and the run's page, ``/runs/{run_id}``) takes the run id as one path parameter
(``{run_id:path}``), so whatever stands between ``runs/`` and the route's last part is the id
the client sent (:func:`sent_run_id`): a trailing ``/`` (``veyru/1796446580/``), a path
(``/tmp/x/veyru/1``, ``veyru/1/labels.json``), one part (``veyru%5C123``). It is judged by the
one resolver (:func:`~glossogen.storage.resolve_run_id`) and refused in its words, as the CLI
and MCP refuse it: 404 ``{"detail": {"field": "run_id", "message": ...}}`` for a malformed id
(``run_id 'veyru/1796446580/': not a run id (...)``, ``a path, not a run id``, ``not UTF-8
text``, an encoded separator named as sent) and for an id under which no run is, or a run of
another group (``run ids that no longer resolve: veyru/1``, as the export's routes count
another group's run); a claimed folder whose log has not begun says so (``run 'veyru/1' has no
event log in the server's runs directory``, MCP's words). Nothing is read outside the runs
directory.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any
from urllib.parse import unquote_to_bytes

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import StreamingResponse

from glossogen.eventlog import Event, LogTail, RunView, SimulationEnded
from glossogen.refusals import shown_path
from glossogen.server._run_index import RunCache
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

RUN_ID = "{run_id:path}"
"""The run id in a run route's path: everything between ``runs/`` and the route's last part."""


def sent_run_id(request: Request) -> str:
    r"""The run id as the client sent it in the matched run route's address.

    The server decodes the address before routing: ``veyru%2F1796446580`` would read as the
    run ``veyru/1796446580``, a byte that is not UTF-8 (``veyru/%FF``) as U+FFFD. So the id is
    read again from the bytes sent, between the matched route's prefix and what its path holds
    after the id (``/events``, ``/summary``, ``/stop``; nothing for the page), both taken from
    the route itself. A byte that is not UTF-8 stays its escape (``veyru/\udcff``: the resolver
    refuses it, ``not UTF-8 text``); an id sent with an encoded separator is judged as sent and
    as decoded by the one rule (:func:`~glossogen.storage.run_id_refused`), named as sent.

    Raises:
        RunIdRefused: (``malformed``) an id sent with an encoded separator
            (``run_id 'veyru%2F1796446580': not a run id (...)``).
    """
    route = request.scope["route"].path  # "/api/g/{group}/runs/{run_id:path}/events"
    before, _, after = route.partition(RUN_ID)
    raw = bytes(request.scope.get("raw_path") or request.url.path.encode())
    sent = raw.split(b"/", before.count("/"))[-1].removesuffix(after.encode())
    run_id = unquote_to_bytes(sent).decode("utf-8", "surrogateescape")
    if b"%2f" not in sent.lower():
        return run_id
    as_sent = sent.decode("latin-1")  # an address's bytes: ASCII
    refused = run_id_refused("run_id", as_sent) or run_id_refused("run_id", run_id)
    if refused is None:
        return as_sent
    raise RunIdRefused(
        as_sent, "malformed", refused.model_copy(update={"value": shown_path(as_sent)})
    )


def refused_run_id(exc: RunIdRefused) -> HTTPException:
    """The HTTP refusal of a run id the resolver refused: 404 naming the field, its line."""
    field = exc.refusal.field if exc.refusal is not None else "run_id"
    return HTTPException(404, {"field": field, "message": str(exc)})


router = APIRouter(prefix="/api/g/{group}/runs", tags=["live"])


def run_folder(request: Request) -> RunFolder:
    r"""The folder of the run the route's address names (the one resolver's), or a 404.

    Raises:
        HTTPException: 404, ``field`` ``run_id``: a malformed id (``run_id 'veyru\123': not a
            run id (...)``), an id under which no run is (no folder, or one with neither a log
            nor a claim: ``run ids that no longer resolve: veyru/1``), both the resolver's
            lines, as the CLI and MCP say them; a claimed folder whose log has not begun, as
            MCP says it (:func:`~glossogen.export.not_begun_line`), as is an empty log a live
            process holds (:meth:`RunFolder.unbegun`); a log that is no run's: ``veyru/<ts>/
            veyru.jsonl is not a run log (empty)`` or ``(no simulation_started event)``
            (:func:`~glossogen.export.log_refused`: the run list's note for it).
    """
    from glossogen.export import log_refused, not_begun_line

    try:
        run_id = sent_run_id(request)
        folder = resolve_run_id(request.app.state.settings.runs_dir, run_id)
    except RunIdRefused as exc:
        raise refused_run_id(exc) from None
    try:
        stamp = folder.log_stamp()
        # a run the list read is a run's log: its head is not read again (as its group)
        index: RunCache = request.app.state.run_cache
        listed = index.known_group(request.app.state.settings.runs_dir, folder.run_id) is not None
        refused = log_refused(folder) if stamp is not None and not listed else None
        claimed = stamp is not None or folder.exists(CONFIG)
    except StorageError as exc:
        raise HTTPException(404, {"message": f"no run {run_id}: {exc}"}) from exc
    if refused is not None:  # no run's log no process is about to write: as the list skips it
        raise HTTPException(404, {"field": "run_id", "message": refused})
    if stamp is not None:
        return folder
    if not claimed:  # neither a log nor a claim: as the CLI and MCP say it
        raise refused_run_id(RunIdRefused.no_run(run_id))
    raise HTTPException(404, {"field": "run_id", "message": not_begun_line(run_id)})


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

    Raises:
        HTTPException: 404 (``field`` ``run_id``) when the log is gone (``run ids that no
            longer resolve``); 404 (``field`` ``run_id``) ``<log> is not a run log (no
            simulation_started event)`` for a log whose head holds no ``simulation_started``.
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
        raise refused_run_id(RunIdRefused.no_run(folder.run_id)) from None
    if started is None:
        said = folder.within_runs_dir(folder.not_a_run_log("no simulation_started event"))
        raise HTTPException(404, {"field": "run_id", "message": said})
    return group_of(started)


def run_group(request: Request, folder: RunFolder) -> str:
    """The group of the run in ``folder``: the run list's index's when it holds the run.

    The index (:meth:`~glossogen.server._run_index.RunCache.known_group`) keeps each run's
    group as its record read it from the log's head, which appending never changes; only a
    run it holds no record of has its log's head read (:func:`group_of_folder`).

    Raises:
        HTTPException: as :func:`group_of_folder`.
    """
    index: RunCache = request.app.state.run_cache
    known = index.known_group(request.app.state.settings.runs_dir, folder.run_id)
    return known if known is not None else group_of_folder(folder)


def group_run(group: str, request: Request) -> RunFolder:
    """The folder of the run the address names, one of group ``group``'s runs, or a 404.

    A run of another group is answered as the export's routes answer its id: one that no
    longer resolves in this group.

    Raises:
        HTTPException: as :func:`run_folder`; 404 (``field`` ``run_id``, ``run ids that no
            longer resolve: <id>``) for a run of another group.
    """
    folder = run_folder(request)
    if run_group(request, folder) != group:
        raise refused_run_id(RunIdRefused.no_run(folder.run_id))
    return folder


GroupRun = Annotated[RunFolder, Depends(group_run)]
"""The run a group route's address names, of that group (:func:`group_run`)."""


@router.get(f"/{RUN_ID}/events")
async def events(request: Request, folder: GroupRun) -> StreamingResponse:
    """Stream the run's events (the module docstring's rules).

    Raises:
        HTTPException: 404 for a run id that names none of this group's runs.
    """
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


@router.get(f"/{RUN_ID}/summary")
def summary(folder: GroupRun) -> dict[str, Any]:
    """The live page's summary of the run (the module docstring's), from its ``RunView``.

    Raises:
        HTTPException: 404 for a run id that names none of this group's runs.
    """
    load_scenario_events(folder.scenario)
    try:
        view = RunView.load(folder.log_url, live=folder.is_locked())
    except (FileNotFoundError, StorageError) as exc:
        said = within_runs_dir(folder, str(exc))
        raise HTTPException(404, {"message": f"no run {folder.run_id}: {said}"}) from exc
    return live_summary(view)


@router.post(f"/{RUN_ID}/stop")
def stop(group: str, request: Request) -> dict[str, Any]:
    """Stop the live run as ``glossogen stop <run-dir>`` does; answer its pid and message.

    Raises:
        HTTPException: 404 (``field`` ``run_id``) for a malformed run id or one naming no run
            (``run ids that no longer resolve: ...``), the library's lines, as ``glossogen
            stop`` and MCP's ``stop_run`` say them, or a run of another group; 409 (the CLI's
            one line) when no live process writes it or the folder is remote; 503 when its
            flow run's Prefect server cannot be reached.
    """
    from glossogen.launch import StopError, StopRequest, stop_folder, stop_run

    try:
        asked = StopRequest(runs_dir=request.app.state.settings.runs_dir,
                            run_id=sent_run_id(request))  # fmt: skip
        folder = stop_folder(asked)  # the library's one check of the run id, as the CLI and MCP
        if run_group(request, folder) != group:
            raise RunIdRefused.no_run(folder.run_id)
        stopping = stop_run(asked)
    except RunIdRefused as exc:
        raise refused_run_id(exc) from None
    except StopError as exc:  # a run id naming no run: 404, as the export's missing ids
        status = {64: 404, 66: 404, 69: 503}.get(exc.exit_code, 409)
        field = exc.refusal.field if exc.refusal is not None else "run_id"
        detail = {"field": field} if status == 404 else {}
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
