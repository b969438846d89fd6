"""A PREFECT_API_URL naming no server: every command that needs it says so in one line with the
URL and the reason, exits 69 (transport), and writes nothing."""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from glossogen.cli import main
from orchestration.runtime import using_api_url

REPO = Path(__file__).resolve().parents[2]
CASE = REPO / "tests/cases/glossogen-0.5-runs/veyru/1795939736"
SPEC = """\
scenario: prisoners_dilemma
config: knobs_default
model: scripted
provider: scripted
runs_dir: ./runs
trials: 1
"""


@pytest.fixture
def dead_api(monkeypatch: pytest.MonkeyPatch, refused_port: int) -> Iterator[str]:
    """A Prefect API URL on a loopback port that refuses connections, exported for the test."""
    url = f"http://127.0.0.1:{refused_port}/api"
    monkeypatch.setenv("PREFECT_API_URL", url)
    with using_api_url(url):
        yield url


@pytest.fixture
def hanging_up_api() -> Iterator[str]:
    """A Prefect API URL whose server reads each request and closes the connection unanswered
    (the whole request is read first: closing on unread bytes would reset the connection)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def hang_up() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:  # the listener was closed: the test is over
                return
            with connection:
                received = b""
                while b"\r\n\r\n" not in received:
                    chunk = connection.recv(4096)
                    if not chunk:
                        break
                    received += chunk

    threading.Thread(target=hang_up, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/api"
    try:
        with using_api_url(url):
            yield url
    finally:
        listener.close()


def _exit_code(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    return int(exited.value.code or 0)


COMMANDS = {
    "pools-apply": ["pools", "apply"],
    "deploy": ["deploy"],
    "deploy-no-pools": ["deploy", "--no-pools"],
    "run": ["run", "prisoners_dilemma", "--model", "scripted", "--provider", "scripted",
            "--config", "knobs_default", "--runs-dir", "TMP/runs"],
    "sweep": ["sweep", "TMP/spec.yaml"],
    "fork-at-round": ["fork-at-round", "veyru", "--source-run-dir", "TMP/source",
                      "--after-round", "1", "--runs-dir", "TMP/runs"],
    # a metric that calls a model goes through the evaluate flow (deterministic ones do not)
    "evaluate": ["evaluate", "veyru", "--run-dir", "TMP/source", "--metrics", "shorthand_codes",
                 "--model", "gpt-4.1-mini", "--provider", "openai"],
}  # fmt: skip


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_command_needing_the_api_names_the_url_and_writes_nothing(
    dead_api: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-used")  # the judge's; checked before the API
    (tmp_path / "spec.yaml").write_text(SPEC)
    shutil.copytree(CASE, tmp_path / "source")
    argv = [a.replace("TMP", str(tmp_path)) for a in COMMANDS[command]]
    assert _exit_code(argv) == 69
    assert capsys.readouterr().err.splitlines() == [
        f"glossogen: error: cannot reach the Prefect API at {dead_api}: connection refused"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["source", "spec.yaml"]
    assert [p.name for p in (tmp_path / "source").iterdir()] == ["veyru.jsonl"]


def test_deterministic_metrics_are_scored_in_process_whatever_the_api(
    dead_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(CASE, tmp_path / "source")
    argv = [
        "evaluate",
        "veyru",
        "--run-dir",
        str(tmp_path / "source"),
        "--metrics",
        "round_success",
    ]
    assert _exit_code(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split("\t")[0] == "round_success"
    assert (
        out[-1]
        == f"report: {tmp_path / 'source' / 'veyru_report.json'} · evaluation cost $0.000000"
    )
    assert sorted(p.name for p in (tmp_path / "source").iterdir()) == [
        "veyru.jsonl",
        "veyru_report.json",
    ]


def test_a_server_that_hangs_up_is_named_with_what_it_did(
    hanging_up_api: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _exit_code(["pools", "apply"]) == 69
    assert capsys.readouterr().err.splitlines() == [
        f"glossogen: error: cannot reach the Prefect API at {hanging_up_api}: "
        "server disconnected without sending a response"
    ]


def test_a_password_in_the_api_url_is_left_out_of_the_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], refused_port: int
) -> None:
    port = refused_port
    url = f"http://admin:hunter2@127.0.0.1:{port}/api"
    monkeypatch.setenv("PREFECT_API_URL", url)
    with using_api_url(url):
        assert _exit_code(["pools", "apply"]) == 69
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"glossogen: error: cannot reach the Prefect API at http://127.0.0.1:{port}/api: "
        "connection refused"
    ]
    assert "hunter2" not in err


@pytest.mark.parametrize(("status", "problem"), [
    (401, None),  # reachable: a server behind auth (Cloud, basic auth) answers its client later
    (403, None),
    (404, "it answered HTTP 404 at /health (is it a Prefect server's /api URL?)"),
])  # fmt: skip
def test_an_answering_server_is_reachable_unless_it_has_no_health_route(
    status: int, problem: str | None
) -> None:
    from glossogen.cli._prefect_api import health_problem

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def answer() -> None:
        connection, _ = listener.accept()
        with connection:
            received = b""
            while b"\r\n\r\n" not in received:
                received += connection.recv(4096)
            connection.sendall(
                f"HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".encode()
            )

    server = threading.Thread(target=answer, daemon=True)
    server.start()
    try:
        assert health_problem(f"http://127.0.0.1:{listener.getsockname()[1]}/api") == problem
    finally:
        server.join(timeout=10)  # bound: a teardown's
        listener.close()
