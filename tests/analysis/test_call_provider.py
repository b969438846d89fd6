"""At the call grain ``provider`` and ``model`` are the call's own, the run's ``run_provider``.

A two-round prisoners_dilemma run whose ``--provider`` is ``openai`` (``gpt-4.1-mini``, served
by the OpenAI stub over real HTTP) with ``player_b`` overridden onto the ``scripted``
provider: its calls are ``scripted``'s, unbilled (cost 0), and ``player_a``'s ``openai``'s,
each billed at the stub's usage. Grouped by ``provider``, the call grain gives one group per
provider; ``call_level.csv`` holds the call's ``provider`` and the run's ``run_provider``.
"""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from mcp import Client
from typer.testing import CliRunner

from glossogen.cli import app
from glossogen.eventlog import LlmResponseReceived, RunView
from glossogen.launch import RunRequest
from glossogen.mcp import build_server
from glossogen.server import create_app
from tests.fixtures.model_stubs import StubModelServer
from tests.providers.ungated import play_ungated


def _two_providers(runs: Path) -> str:
    """Play the module's run into ``runs``; return its folder."""
    request = RunRequest(scenario="prisoners_dilemma", model="gpt-4.1-mini", provider="openai",
                         runs_dir=str(runs), config="knobs_default",
                         overrides=["round_count=2", "model_overrides.player_b.model=scripted",
                                    "model_overrides.player_b.provider=scripted"])  # fmt: skip
    return play_ungated(request).run_url


def _cost_by_provider(runs: Path) -> dict[str, tuple[int, float]]:
    """``analyze --grain call --by provider --measure cost_usd:sum``: (n, sum) per provider."""
    grouped = CliRunner().invoke(app, ["analyze", "--runs-dir", str(runs), "--grain", "call",
                                       "--by", "provider", "--measure", "cost_usd:sum",
                                       "--json"])  # fmt: skip
    assert grouped.exit_code == 0, grouped.output
    return {
        g["keys"]["provider"]: (g["cells"][0]["n"], g["cells"][0]["value"])
        for g in json.loads(grouped.stdout)["groups"]
    }


def test_call_rows_carry_their_own_provider(pd_stub: StubModelServer, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run_url = _two_providers(runs)
    view = RunView.load(f"{run_url}/prisoners_dilemma.jsonl")
    answered = [e for e in view.counted if isinstance(e, LlmResponseReceived)]
    by_seat = {e.agent_id for e in answered}
    assert by_seat == {"player_a", "player_b"}
    assert {(e.agent_id, e.model, e.provider) for e in answered} == {
        ("player_a", "gpt-4.1-mini", "openai"),
        ("player_b", "scripted", "scripted"),
    }
    openai = [e for e in answered if e.provider == "openai"]
    scripted = [e for e in answered if e.provider == "scripted"]
    assert len(openai) == len(pd_stub.requests)
    assert {e.cost_usd for e in scripted} == {0.0}

    cli = CliRunner()
    fields = cli.invoke(app, ["analyze", "--runs-dir", str(runs), "--grain", "call",
                              "--list-fields", "--json"])  # fmt: skip
    assert fields.exit_code == 0, fields.output
    families = {f["name"]: f["family"] for f in json.loads(fields.stdout)["fields"]}
    assert (families["provider"], families["model"], families["run_provider"]) == (
        "table", "table", "run"
    )  # fmt: skip

    got = _cost_by_provider(runs)
    assert [e.cost_usd for e in openai] == [0.00042] * 10  # the stub's usage, priced
    assert ({p: n for p, (n, _) in got.items()}, got["scripted"][1]) == (
        {"openai": 10, "scripted": 10}, 0.0
    )  # fmt: skip

    out = tmp_path / "out"
    exported = cli.invoke(app, ["export", "--runs-dir", str(runs), "--out", str(out),
                                "--frames", "call_level"])  # fmt: skip
    assert exported.exit_code == 0, exported.output
    with open(out / "call_level.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    header = list(rows[0])
    assert header[:41] == [
        "run_id", "scenario_name", "round_number", "phase", "agent_id", "role", "model",
        "provider", "cycle", "input_tokens", "cache_read_tokens", "cache_write_tokens",
        "output_tokens", "cost_usd", "latency_seconds", "retries", "finish_reason",
        "failure_kind", "status", "status_detail", "timestamp", "rounds_played", "rounds_won",
        "message_count", "total_chars", "total_cost_usd", "judge_cost_usd", "total_input_tokens",
        "total_cache_read_tokens", "total_cache_write_tokens", "total_cache_write_1h_tokens",
        "total_output_tokens", "total_cached_input_share", "duration_seconds", "run_provider",
        "providers", "models", "labels", "model_class", "has_evaluation", "judge_flips",
    ]  # fmt: skip
    assert header.count("provider") == 1 and "knob.model_overrides.player_b.provider" in header
    own = ("agent_id", "round_number", "phase", "model", "provider", "cycle", "input_tokens",
           "output_tokens", "cost_usd", "finish_reason", "failure_kind", "run_provider",
           "providers")  # fmt: skip
    assert [tuple(r[c] for c in own) for r in rows] == [
        (e.agent_id, str(e.round_number), e.phase, e.model, e.provider, str(e.cycle),
         str(e.input_tokens), str(e.output_tokens), str(e.cost_usd),
         "stop" if e.provider == "openai" else "", "", "openai", "openai; scripted")
        for e in answered
    ]  # fmt: skip
    assert len(rows) == 20


def test_the_call_grains_cost_sum_is_the_served_spend(
    pd_stub: StubModelServer, tmp_path: Path
) -> None:
    """Money is added exactly: the ten calls the stub served at $0.00042 sum to the run's
    0.0042 (a float sum gives 0.0042000000000000015), on every surface; a mean, a median and
    a comparison's difference of money too."""
    runs = tmp_path / "runs"
    _two_providers(runs)
    assert len(pd_stub.requests) == 10  # the stub served ten, each priced $0.00042 in the log
    assert _cost_by_provider(runs) == {"openai": (10, 0.0042), "scripted": (10, 0.0)}

    cli = CliRunner()
    query = ["--runs-dir", str(runs), "--grain", "call", "--measure", "cost_usd:sum",
             "--measure", "cost_usd:mean", "--measure", "cost_usd:median"]  # fmt: skip
    as_json = cli.invoke(app, ["analyze", *query, "--json"])
    assert as_json.exit_code == 0, as_json.output
    cells = json.loads(as_json.stdout)["groups"][0]["cells"]
    assert [(c["measure"], c["value"], c["n"]) for c in cells] == [
        ("cost_usd:sum", 0.0042, 20), ("cost_usd:mean", 0.00021, 20),
        ("cost_usd:median", 0.00021, 20),
    ]  # fmt: skip
    as_csv = cli.invoke(app, ["analyze", *query, "--csv"])
    assert [line.split(",")[:3] for line in as_csv.stdout.splitlines()] == [
        ["measure", "value", "n"], ["cost_usd:sum", "0.0042", "20"],
        ["cost_usd:mean", "0.00021", "20"], ["cost_usd:median", "0.00021", "20"],
    ]  # fmt: skip
    table = cli.invoke(app, ["analyze", *query])
    assert [line.split()[:3] for line in table.stdout.splitlines()[2:5]] == [
        ["cost_usd:sum", "0.0042", "20"], ["cost_usd:mean", "0.00021", "20"],
        ["cost_usd:median", "0.00021", "20"],
    ]  # fmt: skip
    compared = cli.invoke(app, ["analyze", "--runs-dir", str(runs), "--grain", "call", "--by",
                                "provider", "--measure", "cost_usd", "--compare",
                                "provider=scripted,openai", "--json"])  # fmt: skip
    comparison = json.loads(compared.stdout)["comparisons"][0]
    assert (comparison["a_value"], comparison["b_value"], comparison["difference"]) == (
        0.0, 0.00042, 0.00042
    )  # fmt: skip
    run_grain = cli.invoke(app, ["analyze", "--runs-dir", str(runs), "--measure",
                                 "total_cost_usd:sum", "--json"])  # fmt: skip
    assert json.loads(run_grain.stdout)["groups"][0]["cells"][0]["value"] == 0.0042

    client = TestClient(create_app(str(runs)))
    body = {"grain": "call", "by": ["provider"], "measures": [{"field": "cost_usd", "agg": "sum"}]}
    answered = client.post("/api/g/local/runs/analysis/query", json=body)
    assert [(g["keys"], g["cells"][0]["value"]) for g in answered.json()["groups"]] == [
        ({"provider": "openai"}, 0.0042), ({"provider": "scripted"}, 0.0)
    ]  # fmt: skip
    rendered = client.post("/api/g/local/runs/analysis/render",
                           json={"result": answered.json(), "chart": "bar"})  # fmt: skip
    assert rendered.json()["csv"].splitlines()[1].split(",")[:4] == [
        "openai", "cost_usd:sum", "0.0042", "10"
    ]  # fmt: skip

    async def through_mcp() -> Any:
        async with Client(build_server(str(runs))) as mcp_client:
            got = await mcp_client.call_tool("analyze_runs", {
                "grain": "call", "by": ["provider"], "measures": ["cost_usd:sum"]})  # fmt: skip
            return got.structured_content

    tool = asyncio.run(through_mcp())
    assert [g["cells"][0]["value"] for g in tool["groups"]] == [0.0042, 0.0]

    board = tmp_path / "spend.yaml"
    board.write_text(
        "queries:\n  spend: {grain: call, by: [provider], measures: "
        "[{field: cost_usd, agg: sum}]}\ncharts:\n  - {name: spend, query: spend}\n"
    )
    report = tmp_path / "report"
    done = cli.invoke(app, ["analyze", "--runs-dir", str(runs), "--dashboard", str(board),
                            "--out", str(report)])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert (report / "spend.csv").read_text().splitlines()[1].split(",")[:3] == [
        "openai", "cost_usd:sum", "0.0042"
    ]  # fmt: skip
    kept = json.loads((report / "results.json").read_text())
    assert [g["cells"][0]["value"] for g in kept["spend"]["groups"]] == [0.0042, 0.0]
    assert '<td class="num">0.0042</td>' in (report / "index.html").read_text()
