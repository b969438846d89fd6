"""Handing a claimed run to a player, and stopping a live one.

A new run's folder is claimed before anything plays (``claim_folder``), so the caller gets its
run id at once. It then plays on the provider's ``simulate-<provider>`` deployment when a worker
serves it, else in a detached local process of its own (``python -m glossogen.launch.play``,
which reads the ``RunConfig`` on stdin and plays the ``simulate`` flow into that folder). A
derived or resumed run plays as ``glossogen run <scenario> --resume <folder>``, detached, as the
derived-run commands do; a resume that asks for a change (MCP's ``resume_run`` with a limit,
model or knobs) as ``python -m glossogen.launch.play <folder> resume``, its ``ResumeRequest``
on stdin. Prefect is imported inside the calls that need it (``orchestration/``
lazily, as the surfaces reach ``flows/``), and the engine not at all: ``glossogen stop`` imports
this module alone. The CLI (``glossogen stop``), the REST server (the page's Stop) and MCP
(``start_run``, ``stop_run``) each call it and word its :class:`StopError` their own way.
Stopping a run is one request value, :class:`StopRequest` (the run folder and the mode), and
one entry, :func:`stop_run` (the typed result :class:`Stopping`, or a :class:`StopError`): it
cancels the run's flow run through Prefect when a worker plays it from a deployment, removes a
claim whose log never began, or signals the local writer.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, field_validator

from glossogen import exit_codes
from glossogen.refusals import Refusal
from glossogen.storage import (
    CONFIG,
    FLOW_RUN,
    LABELS,
    LOCK_NAME,
    STOP,
    RunFolder,
    RunIdRefused,
    no_run_line,
    resolve_run_id,
)

if TYPE_CHECKING:  # _plan imports the engine: `glossogen stop` needs none of it
    from glossogen.launch._plan import RunConfig
    from glossogen.launch._resume import ResumeRequest


class StopError(Exception):
    """A run that cannot be stopped; ``str()`` is the one-line reason, ``exit_code`` the code."""

    def __init__(self, message: str, exit_code: int, refusal: Refusal | None = None) -> None:
        """Keep the one-line ``message``, the process ``exit_code`` and the refused value."""
        super().__init__(message)
        self.exit_code = exit_code
        self.refusal = refusal


def _detach(args: list[str], folder: RunFolder, stdin: bytes | None = None) -> int:
    """Start ``python <args>`` in a session of its own, its output in the folder's stdout log."""
    log_path = folder.local_path(folder.stdout_log_name) or os.devnull
    with open(log_path, "ab") as log:
        child = subprocess.Popen(  # noqa: S603 (our own module, no shell)
            [sys.executable, *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            start_new_session=True,  # the server's own Ctrl-C or exit does not reach the run
        )
    if stdin is not None and child.stdin is not None:
        child.stdin.write(stdin)
        child.stdin.close()
    return child.pid


async def launch_new(config: RunConfig, runs_dir: str) -> tuple[RunFolder, str]:
    """Claim the run's folder, then start it on a worker or in a detached process.

    Returns:
        The claimed folder and how it was launched (``deployment:<name>`` or
        ``local_process:<pid>``).

    Raises:
        StorageError: the folder could not be claimed; nothing was started.
    """
    from glossogen.launch._claim import claim_folder

    folder = claim_folder(config, runs_dir)
    name = f"simulate/simulate-{config.provider}"
    if os.environ.get("PREFECT_API_URL"):
        from orchestration.deployments import create_flow_run, record_flow_run, served

        if await served([name]):
            parameters = {"config": config.model_dump(mode="json"), "run_dir": folder.url}
            try:
                flow_run = await create_flow_run(
                    name, parameters, idempotency_key=f"mcp:{folder.url}"
                )
            except BaseException:
                folder.discard_unstarted()
                raise
            record_flow_run(folder, flow_run)  # so stop_run cancels it, queued or playing
            return folder, f"deployment:{name}"
    payload = config.model_dump_json().encode()
    try:
        pid = _detach(["-m", "glossogen.launch.play", folder.url], folder, stdin=payload)
    except BaseException:
        # Nothing played in it: the claim (and the stdout log just opened) goes again.
        folder.discard_unstarted((CONFIG, LABELS, ".claim", folder.stdout_log_name))
        raise
    return folder, f"local_process:{pid}"


def launch_resume(folder: RunFolder, scenario: str, request: ResumeRequest | None = None) -> str:
    """Continue ``folder`` as ``glossogen run <scenario> --resume <folder>``, detached.

    A ``request`` that asks for a change (a limit, the default model, knobs,
    ``allow_config_change``) is handed whole to ``python -m glossogen.launch.play <folder>
    resume`` on its stdin, which plans it again and plays the ``resume`` flow; without one the
    run goes on as it recorded.
    """
    asked = request is not None and request.model_dump(exclude_defaults=True).keys() - {
        "run_dir",
        "scenario",
    }
    if request is not None and asked:
        payload = request.model_dump_json().encode()
        pid = _detach(["-m", "glossogen.launch.play", folder.url, "resume"], folder, payload)
    else:
        pid = _detach(["-m", "glossogen", "run", scenario, "--resume", folder.url], folder)
    folder.mark_launch(pid)  # live from now on, before the process has taken the lock
    return f"local_process:{pid}"


class StopRequest(BaseModel):
    """What ``glossogen stop``, the page's Stop and MCP's ``stop_run`` ask for.

    Attributes:
        run_dir: The run folder (a local path or an fsspec URL; a trailing ``/`` is dropped):
            ``glossogen stop``'s. Its last two parts are the run's id.
        runs_dir: With ``run_id``: the runs directory the id is relative to (the server's).
        run_id: The run's id, ``<scenario>/<run_dir_name>`` (the page's and MCP's), instead
            of ``run_dir``.
        mode: ``stop``: a live run ends ``interrupted`` (resumable) and a queued one is
            cancelled before it starts; ``cancel``: only a queued run, whose log has not
            begun, is cancelled (a run that has begun is refused, nothing is signalled).
    """

    model_config = ConfigDict(frozen=True)

    run_dir: str = ""
    runs_dir: str = ""
    run_id: str | None = None
    mode: Literal["stop", "cancel"] = "stop"

    @field_validator("run_dir")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @property
    def named(self) -> str:
        """The run as the request names it: its id, else the folder as typed (``/tmp/runs/abc``).

        What a refusal of a run that is not there names (``run ids that no longer resolve:
        /tmp/runs/abc``), never the id read from the folder's last two parts (``runs/abc``).
        """
        return self.run_id if self.run_id is not None else self.run_dir


def stop_folder(request: StopRequest) -> RunFolder:
    r"""The folder of the run ``request`` names: the one check of a run to stop, every surface.

    The run id (``run_id``, or ``run_dir``'s last two parts) is read by the one resolver
    (:func:`~glossogen.storage.resolve_run_id`), refused in the words the export's and
    evaluation's selections use: a malformed one (``run_id 'x': not a run id (...)``, ``run_id
    'veyru/\udcff': not UTF-8 text``; ``run_dir`` quotes the folder as typed), a well-shaped
    one that names no run, no folder or a folder with neither log nor claim (``run ids that
    no longer resolve: veyru/1``). A remote folder is not read here.

    Raises:
        StopError: 64 for a malformed id, 66 for an id that names no run.
    """
    try:
        if request.run_id is not None:
            folder = resolve_run_id(request.runs_dir, request.run_id, "run_id")
        else:
            head, _, name = request.run_dir.rpartition("/")
            run_id = f"{head.rpartition('/')[2]}/{name}" if head else name
            folder = resolve_run_id("", run_id, "run_dir", sent=request.run_dir)
            folder = dataclasses.replace(folder, url=request.run_dir)
        local = folder.local_path("")
        if local is not None and not os.path.exists(local):
            raise RunIdRefused.no_run(request.named)
    except RunIdRefused as exc:
        raise StopError(str(exc), exc.exit_code, exc.refusal) from None
    return folder


def stop_run(request: StopRequest) -> Stopping:
    """Stop (or, ``mode="cancel"``, cancel) the run ``request`` names; every check here.

    Raises:
        StopError: as :func:`stop_folder` refuses the run; a begun run under
            ``mode="cancel"`` (65); else see :func:`stop_run_folder`.
    """
    return stop_run_folder(stop_folder(request), request.mode, request.named)


@dataclass(frozen=True)
class Stopping:
    """How a stop was carried out: the run, the one line said, what was signalled or cancelled.

    Attributes:
        run_id: The run.
        message: The one line said, every surface alike; how to resume is each surface's own
            (:meth:`said`).
        pid: The writer signalled (SIGINT), when a local process plays the run.
        flow_run_id: The Prefect flow run cancelled, when a worker plays (or was to play) it.
        resume_from: The run folder to resume, when the run ends ``interrupted`` (resumable).
    """

    run_id: str
    message: str
    pid: int | None = None
    flow_run_id: str | None = None
    resume_from: str | None = None

    def said(self, resume: str) -> str:
        """``message``, then ``resume it with <resume>`` when the run is resumable."""
        return f"{self.message}; resume it with {resume}" if self.resume_from else self.message


def stop_run_folder(
    folder: RunFolder, mode: Literal["stop", "cancel"] = "stop", named: str | None = None
) -> Stopping:
    """Stop the run in ``folder``: it ends ``interrupted`` (resumable), or, queued, never starts.

    ``named``: the run as its caller named it (:attr:`StopRequest.named`), which a refusal of a
    folder that holds no run names; default its run id.

    - A run a worker plays from a deployment (``flow_run.json`` names its flow run, not ended)
      is cancelled through Prefect: the flow run goes ``Cancelling``, its worker stops the
      process, and the engine seals the log ``interrupted`` as on Ctrl-C. A flow run no worker
      had started is cancelled at once, and its claimed folder (no log yet) is removed.
    - A claimed folder whose log has not begun and which no process holds is removed (the
      claim is cancelled: nothing was played or spent).
    - Otherwise the live writer (the pid the folder's ``.writer.lock`` records) is signalled
      (SIGINT, as a Ctrl-C): it ends the round it is in, logs ``simulation_ended``
      ``interrupted`` and exits.

    Raises:
        StopError: 66 when the folder has no log and is no claim, or its log is no run's and
            no process is about to write it (:func:`~glossogen.export.log_refused`, in the run
            list's words: ``veyru/<ts>/veyru.jsonl is not a run log (empty)``); 65 when no live
            process writes it (nothing to stop), the folder is remote (its lock records no pid
            here), or, under ``mode="cancel"``, its log has begun; 69 when its flow run's
            Prefect server cannot be reached (or none is configured).
    """
    path = folder.local_path(LOCK_NAME)
    if path is None:  # asked first: a remote folder is not read (no credentials needed)
        raise StopError(f"{folder.url} is remote: glossogen stop reaches local writers only", 65)
    local = folder.local_path("")
    if local is not None and os.path.exists(local) and not os.path.isdir(local):
        raise StopError(f"{folder.url} is a file, not a run folder", 66)
    refused = folder.empty_log_refused()  # killed before its first event, or truncated
    if refused is None and folder.has_log() and not folder.is_locked():  # no writer to stop:
        from glossogen.export import log_refused  # a log no run's? (its head, read only here)

        refused = log_refused(folder)
    if refused is not None:
        raise StopError(refused, int(exit_codes.UNREADABLE))
    begun = folder.has_log()
    if begun and mode == "cancel":
        raise StopError(
            f"run {folder.run_id} has begun its log: only a queued run is cancelled; stop it "
            "instead (it ends 'interrupted', resumable)",
            65,
        )
    flow_run_id = _recorded_flow_run(folder)
    if flow_run_id is not None:
        stopping = _cancel_flow_run(folder, flow_run_id, begun)
        if stopping is not None:
            return stopping
    if not begun and not folder.is_locked():
        return _cancel_claim(folder, named or folder.run_id)
    if not folder.is_locked():  # a player that holds the lock, its log not begun: signalled
        raise StopError(f"run {folder.run_id} has no live writer: nothing to stop", 65)
    # The launched process while it lives, holding the lock or not yet: between its flock and
    # its pid's write, the lock file still names the writer before it.
    launched = folder.pending_launch()
    if launched is not None:
        return _signal(folder, launched)
    try:
        with open(path, encoding="utf-8") as lock:
            pid = int(lock.read(32).strip())
    except (OSError, ValueError):
        raise StopError(f"run {folder.run_id}: its writer lock records no pid", 65) from None
    return _signal(folder, pid)


def _signal(folder: RunFolder, pid: int) -> Stopping:
    """Interrupt the run's process ``pid`` (SIGINT, as a Ctrl-C), the stop recorded first.

    The record (:meth:`RunFolder.request_stop`) is answered before the run's next round by a
    process that could not answer the signal yet.
    """
    try:
        folder.request_stop(pid)
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        raise StopError(f"run {folder.run_id}: its writer (pid {pid}) is gone", 65) from None
    except PermissionError:
        raise StopError(f"run {folder.run_id}: not allowed to signal pid {pid}", 65) from None
    return Stopping(
        folder.run_id,
        f"stopping {folder.run_id} (pid {pid}): it ends 'interrupted'",
        pid=pid,
        resume_from=folder.url,
    )


_UNSTARTED = (CONFIG, LABELS, ".claim", FLOW_RUN, LOCK_NAME, STOP)
"""What a claimed folder may hold before its log begins (its stdout log aside)."""


def _recorded_flow_run(folder: RunFolder) -> UUID | None:
    try:
        record = folder.read_object(FLOW_RUN)
        return UUID(str(record["flow_run_id"])) if record else None
    except (ValueError, KeyError, TypeError):
        return None  # no record to go by: the lock decides


def _cancel_claim(folder: RunFolder, named: str) -> Stopping:
    """Remove a claimed folder whose log never began and which no process holds.

    A folder that is no claim is no run: refused naming it as its caller did (``named``).
    """
    try:
        claimed = folder.read_object(CONFIG) is not None
    except ValueError:
        claimed = False
    if not claimed:
        raise StopError(no_run_line([named]), int(exit_codes.UNREADABLE))
    if not folder.discard_unstarted((*_UNSTARTED, folder.stdout_log_name)):
        raise StopError(
            f"run {folder.run_id} has not begun its log and no process holds it, but its folder "
            "holds other files: left as it is",
            65,
        )
    return Stopping(
        folder.run_id,
        f"cancelled queued run {folder.run_id}: its log had not begun and no process held it; "
        "its claimed folder was removed",
    )


def _cancel_flow_run(folder: RunFolder, flow_run_id: UUID, begun: bool) -> Stopping | None:
    """Cancel the run's flow run through Prefect; None when it has ended (the lock decides)."""
    import httpx

    from orchestration.deployments import cancel_flow_run
    from orchestration.runtime import api_url

    url = api_url()
    if url is None:
        raise StopError(
            f"run {folder.run_id} is played by Prefect flow run {flow_run_id}: set "
            "PREFECT_API_URL to its server to stop it",
            69,
        )
    try:  # None: ended, or a flow run this server never had (the lock decides)
        cancel = cancel_flow_run(flow_run_id, f"glossogen stop {folder.run_id}")
    except (httpx.HTTPError, OSError) as exc:
        raise StopError(f"cannot reach the Prefect API at {url}: {exc}", 69) from None
    if cancel is None:
        return None
    named = f"flow run {flow_run_id}"
    if cancel.never_started:
        removed = not begun and folder.discard_unstarted((*_UNSTARTED, folder.stdout_log_name))
        message = (
            f"cancelled queued run {folder.run_id}: {named} was {cancel.before}, no worker had "
            "started it; "
            + ("its claimed folder was removed" if removed else "the run is left as its log ends")
        )
        return Stopping(folder.run_id, message, flow_run_id=str(flow_run_id))
    message = (
        f"stopping {folder.run_id} ({named}, {cancel.before}): cancelled through Prefect, its "
        "worker stops it and it ends 'interrupted'"
    )
    return Stopping(folder.run_id, message, flow_run_id=str(flow_run_id), resume_from=folder.url)


__all__ = [
    "StopError",
    "StopRequest",
    "Stopping",
    "launch_new",
    "launch_resume",
    "stop_run",
    "stop_run_folder",
]
