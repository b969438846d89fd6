r"""``glossogen mcp`` over stdio answers a request holding text that is not UTF-8, and refuses a
number JSON reads as no finite one (``1e400``, ``NaN``) as the CLI refuses it.

JSON can escape a lone surrogate (``"\udcff"``), which is no UTF-8 text. The SDK's stdio
transport (mcp 2.3) cannot parse such a line and drops it: the client would wait for ever. Our
server answers it with a JSON-RPC error naming the argument and the value, and goes on serving;
a raw byte that is not UTF-8 (which the SDK read as U+FFFD) is answered the same way.
The lines are written to the server's stdin as a client writes them (the SDK's own client
cannot send such a string: it encodes its requests as UTF-8).
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from tests.fixtures.played_runs import play_run
from tests.mcp.conftest import server_env

ANSWER_SECONDS = 60.0
"""How long a line may take to be answered (a cold start imports glossogen, about 3 CPU-s)."""


def _lines(stdout: IO[bytes]) -> queue.Queue[bytes]:
    """The server's stdout lines, as they come, on a queue (a thread reads the pipe)."""
    out: queue.Queue[bytes] = queue.Queue()

    def read() -> None:
        for line in stdout:
            out.put(line)

    threading.Thread(target=read, daemon=True).start()
    return out


def _ask(server: subprocess.Popen[bytes], line: bytes, answers: queue.Queue[bytes]) -> Any:
    assert server.stdin is not None
    server.stdin.write(line + b"\n")
    server.stdin.flush()
    return json.loads(answers.get(timeout=ANSWER_SECONDS))


@contextmanager
def _served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], queue.Queue[bytes], str]]:
    """``glossogen mcp`` over stdio on one played run, initialized: the server, its answers
    and the run's id; stdin closed at the end and the exit checked (0)."""
    runs = tmp_path / "runs"
    played = play_run(str(runs), "veyru", rounds=1, now_unix=1_790_000_000)
    server = subprocess.Popen(
        [sys.executable, "-m", "glossogen", "mcp", "--runs-dir", str(runs)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=server_env(), cwd=tmp_path,
    )  # fmt: skip
    assert server.stdout is not None and server.stdin is not None
    answers = _lines(server.stdout)
    try:
        hello = _ask(server, json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "0"}},
        }).encode(), answers)  # fmt: skip
        assert hello["id"] == 1 and "result" in hello
        server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        yield server, answers, played.run_id
    finally:
        server.stdin.close()
        server.wait(timeout=ANSWER_SECONDS)
    assert server.returncode == 0


ANALYZE = (b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": '
           b'"analyze_runs", "arguments": {"measures": ["total_chars%s"]}}}')  # fmt: skip


def _error(request_id: int | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def test_text_that_is_not_utf8_is_answered_with_an_error_naming_it_and_serving_goes_on(
    tmp_path: Path,
) -> None:
    """An escaped lone surrogate, and a raw byte that is not UTF-8 (was read as U+FFFD:
    ``measure 'total_chars\\ufffd': no such field``), each named as not UTF-8 text; a raw byte
    outside any string (no request to read: no id either) answered in one line."""
    lines = [
        (b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": '
         b'"list_runs", "arguments": {"labels": ["ok", "\\udcff"]}}}',
         _error(2, -32602, "labels.1 '\\udcff': not UTF-8 text")),
        (ANALYZE % (3, b"\xff"), _error(3, -32602, "measures.0 'total_chars\\udcff': not UTF-8 text")),
        (ANALYZE % (4, b"\\udcff"),
         _error(4, -32602, "measures.0 'total_chars\\udcff': not UTF-8 text")),
        (b'{"jsonrpc": "2.0", "id": 5, \xff}',
         _error(None, -32700, "the request line is not UTF-8 text")),
    ]  # fmt: skip
    with _served(tmp_path) as (server, answers, run_id):
        assert [_ask(server, line, answers) for line, _ in lines] == [want for _, want in lines]
        listed = _ask(server, b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": '
                              b'{"name": "list_runs", "arguments": {}}}', answers)  # fmt: skip
        assert listed["id"] == 6
        runs = listed["result"]["structuredContent"]["runs"]
        assert [r["run_id"] for r in runs] == [run_id]  # still serving


def test_a_spend_cap_that_reads_as_no_finite_number_is_refused_as_the_cli_refuses_it(
    tmp_path: Path,
) -> None:
    """``evaluate_runs`` took ``spend_cap_usd`` ``1e400`` (JSON reads it as infinity),
    ``Infinity`` and ``NaN``, which ``--spend-cap-usd`` refuses: refused now in the library's
    check (``refusals.finite_number``), before any flow run."""
    with _served(tmp_path) as (server, answers, _run_id):
        said = {}
        for number, cap in enumerate([b"1e400", b"Infinity", b"-Infinity", b"NaN"], start=2):
            line = (b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": '
                    b'"evaluate_runs", "arguments": {"metrics": ["round_success"], '
                    b'"spend_cap_usd": %s}}}') % (number, cap)  # fmt: skip
            answer = _ask(server, line, answers)
            assert answer["result"]["isError"] is True, answer
            said[cap.decode()] = answer["result"]["content"][0]["text"]
    prefix = "Error executing tool evaluate_runs: spend_cap_usd: "
    assert said == {
        "1e400": prefix + "'inf' is not a finite number",
        "Infinity": prefix + "'inf' is not a finite number",
        "-Infinity": prefix + "'-inf' is not a finite number",
        "NaN": prefix + "'nan' is not a number",
    }
