"""An event stream whose client disconnects stops sending (a real ``glossogen serve``, a real
socket that reads the first frames and closes, as ``curl | head`` does)."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlparse

import httpx

from tests.fixtures.played_runs import play_run
from tests.server.serving import serving


def test_a_stream_whose_client_left_writes_nothing_more(tmp_path: Path) -> None:
    run = play_run(str(tmp_path / "runs"), "orbital_anomaly", rounds=3)  # ~700 KB of events
    log: list[bytes] = []
    with serving(str(tmp_path / "runs"), log=log) as base:
        url = urlparse(base)
        with socket.create_connection((url.hostname, url.port), timeout=None) as client:
            client.sendall(
                f"GET /api/g/local/runs/{run.run_id}/events HTTP/1.1\r\nHost: x\r\n\r\n".encode()
            )
            got = b""
            while got.count(b"\nevent: ") < 3:  # the first three events, then hang up
                chunk = client.recv(4096)
                assert chunk, got
                got += chunk
        assert b"event: simulation_started" in got
        assert httpx.get(f"{base}/api/health", timeout=None).status_code == 200
    text = b"".join(log).decode()
    # Each write to the closed socket was a warning (156 of them for this run before).
    assert "socket.send() raised" not in text, text[-2000:]
