"""Claims: one create-only file per (sweep, cell, trial, part, epoch, relaunch) before a launch.

Two launches of the same spec at the same time both read a ledger with no run of a trial yet;
without a claim both would pay for it. Before launching, a sweep creates
``<runs_dir>/sweeps/<sweep_id>/claims/<cell>-<trial>-<part>-e<epoch>-r<relaunch>.json``
create-only (locally ``O_CREAT | O_EXCL``; on S3 a put with ``If-None-Match: *``, fsspec's
``mode="create"``, as ``RunStore.claim_run_dir`` does), so exactly one launch wins it.

A claim names its owner (host, pid, launch token, time) and carries a random ``nonce``, part of
the launch's Prefect idempotency key: a launch that takes a dead owner's claim over keeps its
nonce (so it gets the flow run the dead owner created, never a second one), while a trial of
another runs folder, or of a ledger that was deleted, gets a fresh one (never an old flow run
whose run folder is elsewhere or gone). A claim can be taken over when its owner
is dead: on the same host, no process with that pid (or, in this process, a launch that was
closed); from another host, older than :data:`CLAIM_TTL_SECONDS`
(a launcher's run shows up in the ledger within seconds, and a run that then stops is
relaunched under the next ``relaunch`` number, hence a new claim name).
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from glossogen.storage import is_local, join, open_fs, translate_errors
from glossogen.sweep._grid import TrialKey

CLAIMS_FOLDER = "claims"
_ACTIVE: set[str] = set()
"""Tokens of this process's open :class:`TrialClaims` (a sweep launch still running here)."""
CLAIM_TTL_SECONDS = 600.0
"""A claim from another host this old (seconds) whose trial has no run is presumed dead."""


def claim_name(key: TrialKey, epoch: int, relaunch: int, resume: int = 0) -> str:
    """The claim file of one launch: ``<cell>-<trial>-<part>-e<epoch>-r<relaunch>.json``.

    ``-m<n>`` comes before ``.json`` for the resume of a run that has logged ``n`` endings.
    """
    base = f"{key.cell_id}-{key.trial}-{key.part}-e{epoch}-r{relaunch}"
    return base + (f"-m{resume}" if resume else "") + ".json"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a live process of another user
    return True


@dataclass
class TrialClaims:
    """The claims folder of one sweep.

    Args:
        sweep_url: The sweep's folder (``<runs_dir>/sweeps/<sweep_id>``, local or fsspec URL).
        clock: Unix seconds (injected in tests).
        host: This machine's name.
        pid: This process's id.
    """

    sweep_url: str
    clock: Callable[[], float] = time.time
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    nonces: dict[str, str | None] = field(default_factory=dict)
    """The ``nonce`` of each claim this launch took, by claim name (None: a claim written
    before claims carried one)."""

    def __post_init__(self) -> None:
        """Open the folder's file system (nothing is created yet); count this launch live."""
        _ACTIVE.add(self.token)
        self.url = join(self.sweep_url, CLAIMS_FOLDER)
        self.fs, self.path = open_fs(self.url)
        self.local = is_local(self.fs)

    def owner(self, name: str) -> dict[str, Any] | None:
        """The owner recorded in claim ``name`` (None: no such claim, or unreadable)."""
        try:
            with translate_errors(self.url, self.fs):
                return json.loads(self.fs.cat_file(f"{self.path}/{name}"))
        except (FileNotFoundError, ValueError):
            return None

    def owner_dead(self, owner: dict[str, Any] | None) -> bool:
        """True when the claim's owner cannot still be launching (see the module docstring)."""
        if owner is None:
            return True
        if owner.get("host") == self.host:
            if owner.get("pid") == self.pid:  # this process: is that launch still open?
                return owner.get("token") not in _ACTIVE
            return not _pid_alive(int(owner.get("pid", 0)))
        return self.clock() - float(owner.get("claimed_at", 0.0)) >= CLAIM_TTL_SECONDS

    def _create(self, name: str, nonce: str | None = None) -> bool:
        nonce = nonce or uuid.uuid4().hex[:12]
        owner = {"host": self.host, "pid": self.pid, "token": self.token, "nonce": nonce}
        data = json.dumps({**owner, "claimed_at": self.clock()}, sort_keys=True).encode()
        path = f"{self.path}/{name}"
        with translate_errors(self.url, self.fs):
            try:
                if self.local:
                    os.makedirs(self.path, exist_ok=True)
                    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                    try:
                        os.write(fd, data)
                    finally:
                        os.close(fd)
                else:
                    self.fs.pipe_file(path, data, mode="create")
            except FileExistsError:
                return False
        self.nonces[name] = nonce
        return True

    def take(self, name: str) -> bool:
        """Claim ``name``; True when this process may launch it.

        An existing claim is taken over only when its owner is dead (removed, then created
        create-only again, so of two takers only one wins), keeping its ``nonce``. The nonce
        of a claim taken is in :attr:`nonces`.

        Raises:
            StorageError: the storage is unreachable.
        """
        if self._create(name):
            return True
        owner = self.owner(name)
        if owner is not None and owner.get("token") == self.token:
            self.nonces[name] = owner.get("nonce")
            return True  # this launch's own claim
        if not self.owner_dead(owner):
            return False
        with translate_errors(self.url, self.fs):
            try:
                self.fs.rm_file(f"{self.path}/{name}")
            except FileNotFoundError:
                pass
        if not self._create(name, (owner or {}).get("nonce")):
            return False
        if owner is not None and not owner.get("nonce"):
            self.nonces[name] = None  # an older claim: its launch's key had no nonce
        return True

    def close(self) -> None:
        """End this launch: its claims now count as dead (their trials have runs, or failed)."""
        _ACTIVE.discard(self.token)

    def describe(self, name: str) -> str:
        """``pid P on H since T`` of claim ``name``'s owner, for the summary."""
        owner = self.owner(name) or {}
        return f"pid {owner.get('pid', '?')} on {owner.get('host', '?')}"
