"""Start a throwaway PostgreSQL cluster on 127.0.0.1 to back a local Prefect server.

Prefect's default database, SQLite, takes one writer at a time: with tens of flow runs at once
(an in-process sweep of 40 runs), its API answers 503 while the database is locked, the Prefect
client backs off 2, 4, 8, 16 s, and runs fail (measured: ``bench/sweep_throughput.py``).
Prefect's documentation recommends PostgreSQL for that load; this starts one from the machine's
own ``initdb`` and ``pg_ctl`` (on ``PATH``, or Debian's) for benchmarks and local sweeps.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BIND_TRIES = 5
"""Ports tried before giving up: PostgreSQL cannot take port 0 (its socket file is named after
the port), so a port the OS named free is tried, and another one if the server then finds it
taken ("Address already in use": another process bound it in between)."""

THROWAWAY = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
"""Settings of a cluster nobody recovers after a crash: no flush to disk, a commit does not
wait for its WAL record, and no whole page is written to the WAL after each checkpoint."""

UNPRIVILEGED_USER = "nobody"
"""PostgreSQL refuses to run as root: as root, the cluster runs as this user."""


DEBIAN_SERVERS = Path("/usr/lib/postgresql")
"""Where Debian's PostgreSQL server packages put their programs, one ``<major>/bin`` each (not on
``PATH``: the machines this project runs on link them into ``/usr/local/bin``, a new Debian
install of ``postgresql`` does not)."""


def postgres_programs() -> dict[str, str] | None:
    """The paths of ``initdb`` and ``pg_ctl``: on ``PATH``, else Debian's newest; else None."""
    found = {name: shutil.which(name) for name in ("initdb", "pg_ctl")}
    if all(found.values()):
        return {name: str(path) for name, path in found.items()}
    majors = [d for d in DEBIAN_SERVERS.glob("*/bin") if d.parent.name.isdigit()]
    for bin_dir in sorted(majors, key=lambda d: int(d.parent.name), reverse=True):
        if (bin_dir / "initdb").exists() and (bin_dir / "pg_ctl").exists():
            return {name: str(bin_dir / name) for name in ("initdb", "pg_ctl")}
    return None


def postgres_available() -> bool:
    """True when ``initdb`` and ``pg_ctl`` are installed (:func:`postgres_programs`)."""
    return postgres_programs() is not None


@contextmanager
def local_postgres() -> Iterator[str]:
    """Start a PostgreSQL cluster on 127.0.0.1 and yield a Prefect database URL for it.

    The URL is ``postgresql+asyncpg://prefect@127.0.0.1:<port>/postgres`` (the cluster's
    default database; trust auth, loopback only; :data:`THROWAWAY` settings). The
    cluster and its folder are removed when the context exits.

    Raises:
        RuntimeError: ``initdb``/``pg_ctl`` are missing, or the cluster did not start (the
            message names its log).
    """
    programs = postgres_programs()
    if programs is None:
        raise RuntimeError("initdb and pg_ctl are not installed: install PostgreSQL's server")
    # A TemporaryDirectory, not mkdtemp and a finally: its finalizer removes the folder even when
    # a Ctrl-C lands before the block is entered (u57b: the test command left one in /tmp).
    with tempfile.TemporaryDirectory(
        prefix="glossogen-postgres-", ignore_cleanup_errors=True
    ) as name:
        folder = Path(name)
        as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(folder, user=UNPRIVILEGED_USER)
            as_user = ["runuser", "-u", UNPRIVILEGED_USER, "--"]
        data, log = folder / "data", folder / "postgres.log"

        def run(program: str, *argv: str) -> None:
            command = [*as_user, programs[program], *argv]
            done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
            if done.returncode:
                raise RuntimeError(f"{program} failed: {done.stderr.strip()[-300:]} (log: {log})")

        run("initdb", "-D", str(data), "-U", "prefect", "--auth=trust", "-E", "UTF8")
        for tried in range(1, BIND_TRIES + 1):
            port = _unbound_port()
            options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} {THROWAWAY}"
            try:
                run("pg_ctl", "-D", str(data), "-l", str(log), "-o", options, "-w", "start")
                break
            except RuntimeError:
                taken = log.exists() and "Address already in use" in log.read_text()
                if not taken or tried == BIND_TRIES:
                    raise
                log.unlink()
        try:
            yield f"postgresql+asyncpg://prefect@127.0.0.1:{port}/postgres"
        finally:
            run("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")


def _unbound_port() -> int:
    """A port no socket of this machine holds right now (the caller retries if one takes it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
