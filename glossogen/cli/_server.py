"""A temporary Prefect server that a terminal's Ctrl-C does not reach.

With no ``PREFECT_API_URL``, Prefect starts a temporary server as a child process in the CLI's
process group, so the Ctrl-C meant for ``glossogen sweep`` kills the server too, and every run
still in flight then spends its cancellation retrying a dead API instead of ending its log.
``glossogen run`` and ``glossogen sweep`` start that server themselves with ``prefect server
start`` (Prefect's own command) in a session of its own, point the flow at it, and stop it once
the run or sweep is over.

Ports: the server is started with ``--port 0``, so the OS hands it a free port at the moment it
binds, and the port is read back from the line uvicorn prints once it listens
(:func:`start_prefect_server`). Picking a free port first and starting the server on it later
is a race: another process of the machine may take the port in between, and a health check
could then be answered by that other process's server. The tests' and benchmarks' servers
(``deployments/local_server.py``) start the same way.

SIGTERM (``timeout``, ``kill``): a session of its own keeps the server out of reach of a signal
meant for the command, so the command stops it itself. Inside :func:`stopped_on_sigterm`,
SIGTERM stops every temporary server this process started (one still starting included), then
ends the process by the signal. While a flow runs, Prefect's handler takes the signal first
(the run seals its log ``interrupted``) and then sends it again to the handler it replaced,
this one: before that, Prefect's resent signal met the default handler and ended the command at
once, its server left running. ``glossogen sweep`` plays its flow off the main thread
(:func:`glossogen.cli.sweep.play_until_interrupted`), where neither Prefect nor a run installs
a handler: its SIGTERM cancels the flow as Ctrl-C does, then comes here again.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HEALTH_POLL_SECONDS = 0.5
"""Interval between health checks while the server starts (a real process starting up)."""


LISTENING = re.compile(rb"Uvicorn running on http://127\.0\.0\.1:(\d+)")
"""The line uvicorn logs (at INFO) once the server's socket is bound and listening."""


def start_prefect_server(
    env: dict[str, str], log_path: Path, timeout_seconds: float
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``prefect server start --host 127.0.0.1 --port 0``; return it and its API URL.

    Prefect's command runs through :mod:`glossogen._prefect_cli` (its collector tuned).

    The OS picks the port when the server binds it; the port is read back from uvicorn's
    "running on" line in ``log_path`` (the server's stdout and stderr), and the URL is returned
    once ``/health`` answers there. Interrupted meanwhile, the server is ended first.

    Raises:
        RuntimeError: the server exited, or did not listen and answer within ``timeout_seconds``
            (the message names ``log_path``).
    """
    process = _spawn(env, log_path, start_new_session=False)
    try:
        return process, _answering_url(process, log_path, timeout_seconds)
    except BaseException:
        _end(process)
        raise


def _spawn(env: dict[str, str], log_path: Path, start_new_session: bool) -> subprocess.Popen[bytes]:
    """Start the server process, its output to ``log_path``, as :func:`start_prefect_server`."""
    # The "running on" line is an INFO record of uvicorn's logger, which reaches the log through
    # Prefect's console handler: both levels are set here, whatever the caller's environment
    # says (``glossogen run`` quiets that handler to CRITICAL for its own process).
    server_env = {
        **env,
        "PREFECT_SERVER_LOGGING_LEVEL": "INFO",
        "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "INFO",
    }
    server_env.pop("PREFECT_API_URL", None)
    with open(log_path, "wb") as log:
        return subprocess.Popen(  # noqa: S603 (Prefect's own CLI, no shell)
            [sys.executable, "-m", "glossogen._prefect_cli", "server", "start"]
            + ["--host", "127.0.0.1", "--port", "0"],
            env=server_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=start_new_session,
        )


def _answering_url(process: subprocess.Popen[bytes], log_path: Path, timeout_seconds: float) -> str:
    """Wait (bounded) for the server to listen and answer ``/health``; return its API URL.

    Raises:
        RuntimeError: as :func:`start_prefect_server`.
    """
    deadline = time.monotonic() + timeout_seconds
    api_url = ""
    while not api_url or not _healthy(api_url):
        if not api_url and (bound := LISTENING.search(log_path.read_bytes())):
            api_url = f"http://127.0.0.1:{int(bound.group(1))}/api"
            continue
        code = process.poll()
        if code is not None:
            raise RuntimeError(
                f"the Prefect server exited (code {code}) before it answered; see {log_path}"
            )
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the Prefect server did not answer within {timeout_seconds:g} s; see {log_path}"
            )
        time.sleep(HEALTH_POLL_SECONDS)  # a real process starting up
    return api_url


def _end(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM ``process``, then SIGKILL after 10 s.

    Every wait is bounded: a SIGTERM handler may run this while the main thread was inside
    one of ``process``'s own waits, whose lock a wait with no timeout would block on.
    """
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def _healthy(api_url: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{api_url}/health", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


_RUNNING: list[DetachedServer] = []
"""The temporary servers this process started and has not stopped, a starting one included."""


@dataclass(eq=False)
class DetachedServer:
    """A ``prefect server start`` child in its own session (see the module docstring).

    Attributes:
        api_url: ``http://127.0.0.1:<port>/api`` ("" while it starts).
        process: The server process.
        log_path: Its output (removed with its folder once the server is stopped).
    """

    api_url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    @classmethod
    def start(cls, timeout_seconds: float) -> DetachedServer:
        """Start the server and wait (bounded) until its API answers ``/health``.

        Interrupted meanwhile (Ctrl-C, which its session does not reach; SIGTERM inside
        :func:`stopped_on_sigterm`), the server is stopped before the interrupt goes on.

        Raises:
            RuntimeError: it exited, or was not healthy within ``timeout_seconds``.
        """
        log_path = Path(tempfile.mkdtemp(prefix="glossogen-server-")) / "server.log"
        server = cls(
            "",
            _spawn(
                {**os.environ, "PREFECT_UI_ENABLED": "false"},
                log_path,
                start_new_session=True,  # a terminal's Ctrl-C reaches its process group only
            ),
            log_path,
        )
        _RUNNING.append(server)
        try:
            server.api_url = _answering_url(server.process, log_path, timeout_seconds)
        except RuntimeError as exc:
            _end(server.process)  # its log stays, for the message to name
            _RUNNING.remove(server)
            raise RuntimeError(f"the temporary {str(exc)[4:]}") from None
        except BaseException:
            server.stop(send_queued=False)
            raise
        return server

    def stop(self, send_queued: bool = True) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s); idempotent.

        First (unless ``send_queued`` is False: a Ctrl-C leaving at once) the logs and events
        this process queued for it are sent, at most 5 s each, so that nothing is retried
        against the stopped server at exit.
        """
        if self.process.poll() is None:
            if send_queued:
                from orchestration.runtime import send_queued as send

                send()
            _end(self.process)
            shutil.rmtree(self.log_path.parent, ignore_errors=True)
        if self in _RUNNING:  # after it ended: a SIGTERM meanwhile still waits for it
            _RUNNING.remove(self)


@contextmanager
def stopped_on_sigterm(said: str | Callable[[], str] | None = None) -> Iterator[None]:
    """While inside, SIGTERM stops this process's temporary servers, then ends it by the signal.

    The process ends as SIGTERM ends it (a shell's 143), once every server it started and has
    not stopped is stopped (see the module docstring), after ``said`` (when given; a function:
    what it returns when the signal comes) is printed as ``glossogen: error: <said>`` on
    stderr, as a Ctrl-C's line is, once a run of this process was claimed (:class:`_Told`).
    Outside, SIGTERM is handled as before; off the main thread (which alone takes signals)
    nothing changes.
    """
    from glossogen.launch import observing

    told = _Told(said)
    try:
        before = signal.signal(signal.SIGTERM, lambda *_: _stop_servers_then_end(told))
    except ValueError:  # not the main thread
        yield
        return
    try:
        with observing(told):  # a run's claim tells it (``run_claimed``)
            yield
    finally:
        signal.signal(signal.SIGTERM, before)


@dataclass
class _Told:
    """What a SIGTERM inside :func:`stopped_on_sigterm` says, and whether a run was claimed.

    An observer of the runs this process starts (:func:`glossogen.launch.observing`): a run's
    claim (``run_claimed``, as its folder is made, or a resume's session opens) sets
    ``claimed``. Before that there is no log whose end ``said`` could tell of (the temporary
    server was still starting, say): the exit status alone says it, as a Ctrl-C's.
    """

    said: str | Callable[[], str] | None
    claimed: bool = False

    def run_claimed(self, *_: object) -> None:
        """A run of this process was claimed: its log ends ``interrupted`` on a SIGTERM."""
        self.claimed = True


def _stop_servers_then_end(told: _Told) -> None:
    """Stop the servers, say ``told.said`` once a run was claimed, end by SIGTERM.

    Python runs the handler on the main thread between two bytecodes; the line goes out by one
    ``os.write`` to the descriptor, never through ``sys.stderr``'s buffer (a write to it the
    signal cut into would refuse a reentrant one).
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM does not cut the stops
    for server in list(_RUNNING):
        server.stop(send_queued=False)  # the process ends at once: nothing is retried
    if told.said is not None and told.claimed:
        text = told.said() if callable(told.said) else told.said
        with contextlib.suppress(OSError):  # a closed stderr: the exit status still says it
            os.write(2, f"glossogen: error: {text}\n".encode(errors="replace"))
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
