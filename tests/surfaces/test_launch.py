"""Launching a run through the CLI and MCP (REST has none): ``run``, ``run --resume`` and the
derived runs (fork, replace, cross-run replace) take the same limits and refuse a bad one,
an unknown provider, a knob of the wrong type or a run that ended alike, nothing claimed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.played_runs import play_run
from tests.surfaces.drive import (
    DERIVED,
    LIMITS,
    Answer,
    _cli,
    _mcp,
    launch_through,
    with_played_source,
)


@pytest.mark.parametrize("surface", ["cli", "mcp"])
def test_a_fork_whose_source_does_not_replay_is_refused_alike_by_the_cli_and_mcp(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fork-at-round --replay`` and ``fork_run(replay=True)``: one line, exit 1 / a tool
    error, nothing claimed."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), "veyru", rounds=2)
    log = Path(folder.log_url)
    lines = log.read_text().splitlines()
    seat = ""
    for index, text in enumerate(lines):  # a seat's first message says something else
        event = json.loads(text)
        calls = event.get("tool_calls") or [{}]
        if event["event_type"] == "llm_response_received" and "text" in calls[0].get("args", {}):
            calls[0]["args"]["text"] = "Something else."
            lines[index], seat = json.dumps(event), event["agent_id"]
            break
    log.write_text("\n".join(lines) + "\n")
    before = sorted(p.name for p in (runs / "veyru").iterdir())
    if surface == "cli":
        answer = _cli(capsys, "fork-at-round", "veyru", "--source-run-dir", folder.url,
                      "--after-round", "1", "--runs-dir", str(runs), "--replay")  # fmt: skip
    else:
        answer = _mcp(str(runs), "fork_run", source_run_id=folder.run_id, after_round=1,
                      replay=True)[0]  # fmt: skip
    assert (answer.refused, answer.status) == (True, 1 if surface == "cli" else "tool error")
    assert answer.line.startswith(
        f"rounds 1..1 do not replay from the tape: first divergence: {seat} call 2 "
        "(round 1): request sha256 "
    )
    assert sorted(p.name for p in (runs / "veyru").iterdir()) == before


REFUSED_LIMITS = [
    ("max_agent_turns", "0", 0, "{name} must be at least 1, got 0"),
    ("run_timeout_seconds", "0", 0.0, "{name} must be a number of seconds above 0, got 0"),
    ("spend_cap_usd", "-1", -1.0, "{name} must be a number of USD above 0, got -1"),
    ("rounds_after", "0", 0, "{name} must be at least 1, got 0"),
]


RUN_LIMITS = REFUSED_LIMITS[:3]
"""The limits ``run`` and ``run --resume`` take: worded as the derived runs' (issue 32: the
value as typed, ``got 0`` for ``--run-timeout 0`` everywhere)."""
FRACTIONAL_TIMEOUT = ("run_timeout_seconds", "-0.5", -0.5,
                      "{name} must be a number of seconds above 0, got -0.5")  # fmt: skip

REFUSED = (
    [(operation, *limit) for operation in ("run", "resume") for limit in RUN_LIMITS]
    + [(operation, *limit) for operation in DERIVED for limit in REFUSED_LIMITS]
    + [(operation, *FRACTIONAL_TIMEOUT) for operation in ("run", "resume", *DERIVED)]
)
"""Each launching operation with each limit it takes, refused."""
UNKNOWN_PROVIDER = (
    "{name}: unknown provider 'nope' (known: anthropic, openai, google-gla, xai, groq, "
    "mistral, deepseek, openrouter, ollama, self-hosted, scripted, local)"
)


@pytest.mark.parametrize("surface", ["cli", "mcp"])
@pytest.mark.parametrize(
    ("operation", "field", "flag_value", "value", "line"),
    REFUSED,
    ids=[f"{o}-{f}" for o, f, *_ in REFUSED],
)
def test_a_launch_refuses_a_bad_limit_alike_through_the_cli_and_mcp(
    surface: str,
    operation: str,
    field: str,
    flag_value: str,
    value: float,
    line: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    played_source: Path,
) -> None:
    """``glossogen run`` and ``start_run``, and each derived operation, take the same limits:
    each refused in one line naming it (the CLI's flag, MCP's argument), nothing claimed."""
    runs = tmp_path / "runs"
    if operation != "run":
        with_played_source(runs, played_source)
    before = sorted(p.name for p in runs.glob("veyru/*"))
    answer = launch_through(surface, operation, runs, field, value, flag_value, capsys)
    name = LIMITS[field] if surface == "cli" else field
    assert answer == Answer(True, line.format(name=name), 64 if surface == "cli" else "tool error")
    assert sorted(p.name for p in runs.glob("veyru/*")) == before


TURN_CAP_WARNING = (
    "{name} 1 likely ends the run before its 2 rounds: a veyru seat takes about 14 model "
    "requests over them (about 4.5 in a round's main phase and 2.5 in a postmortem, the "
    "scenario's cost profile, as the estimate assumes), so 1 turns cover about 0.2 of them and "
    "the run would end incomplete; {name} 14 covers 2"
)
"""The turn-cap warning of a derived veyru run (1 round copied, 1 played) capped at 1 turn."""


@pytest.mark.parametrize("operation", list(DERIVED))
def test_a_derived_run_warns_of_a_tiny_turn_cap_through_mcp_as_the_cli_does(
    operation: str, prefect_api: str, tmp_path: Path, played_source: Path
) -> None:
    """``fork_run``, ``replace_agent`` and ``cross_run_replace_agent`` with
    ``max_agent_turns 1`` list the launch's shared turn-cap warning in ``warnings`` (was: none;
    the CLI's derived commands print it after ``glossogen: warning:``)."""
    from tests.fixtures.polling import wait_until
    from tests.mcp.conftest import gone, pid_of

    runs = tmp_path / "runs"
    with_played_source(runs, played_source)
    run_id = f"veyru/{played_source.name}"
    _, tool, seat = DERIVED[operation]
    donor_id = {"donor_run_id": run_id} if operation == "cross-run" else {}
    answer, result = _mcp(str(runs), tool, source_run_id=run_id, after_round=1, rounds_after=1,
                          max_agent_turns=1, **seat, **donor_id)  # fmt: skip
    assert (answer.refused, result is not None) == (False, True), answer
    assert result is not None
    pid = pid_of(result)
    if pid is not None:
        wait_until(lambda: gone(pid), "the derived run exits")
    assert result["warnings"] == [TURN_CAP_WARNING.format(name="max_agent_turns")]


@pytest.mark.parametrize("surface", ["cli", "mcp"])
@pytest.mark.parametrize("operation", ["run", "replace", "cross-run"])
def test_an_unknown_provider_is_named_alike_by_every_launch(
    surface: str,
    operation: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    played_source: Path,
) -> None:
    """``run --provider nope`` and ``replace-agent``/``cross-run-replace-agent --provider
    nope`` (and their tools) refuse it in one line naming ``--provider`` / ``provider`` (was
    ``--knobs: unknown provider`` for the replacements), exit 64, nothing claimed."""
    runs = tmp_path / "runs"
    if operation != "run":
        with_played_source(runs, played_source)
    before = sorted(p.name for p in runs.glob("veyru/*"))
    answer = launch_through(surface, operation, runs, "provider", "nope", "nope", capsys)
    name = "--provider" if surface == "cli" else "provider"
    status = 64 if surface == "cli" else "tool error"
    assert answer == Answer(True, UNKNOWN_PROVIDER.format(name=name), status)
    assert sorted(p.name for p in runs.glob("veyru/*")) == before


@pytest.mark.parametrize("surface", ["cli", "mcp"])
@pytest.mark.parametrize("operation", list(DERIVED))
def test_a_derived_runs_knobs_are_taken_and_refused_alike_by_the_cli_and_mcp(
    surface: str,
    operation: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    played_source: Path,
) -> None:
    """``--knobs FILE`` and the tools' ``knobs``: a knob of the wrong type in it is one line
    naming the knob, exit 65 / a tool error, nothing claimed."""
    runs = tmp_path / "runs"
    with_played_source(runs, played_source)
    knobs = tmp_path / "knobs.json"
    knobs.write_text('{"round_count": "x"}')
    before = sorted(p.name for p in runs.glob("veyru/*"))
    answer = launch_through(surface, operation, runs, "knobs", str(knobs), str(knobs), capsys)
    line = "invalid knob 'round_count' = \"x\": Input should be a valid integer"
    assert answer == Answer(True, line, 65 if surface == "cli" else "tool error")
    assert sorted(p.name for p in runs.glob("veyru/*")) == before


@pytest.mark.parametrize("surface", ["cli", "mcp"])
def test_resuming_an_ended_run_is_refused_alike_by_the_cli_and_mcp(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``glossogen run --resume`` and ``resume_run`` of a run that ended: one line, exit 65 /
    a tool error, nothing claimed or appended."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), "veyru", rounds=1)
    log = Path(folder.log_url).read_bytes()
    if surface == "cli":
        answer = _cli(capsys, "run", "veyru", "--resume", folder.url)
    else:
        answer = _mcp(str(runs), "resume_run", run_id=folder.run_id)[0]
    fork = {"cli": "fork-at-round", "mcp": "fork_run (source_run_id, after_round)"}[surface]
    line = (
        f"run {folder.run_id} already ended (simulation_ended); use {fork} to play further "
        "rounds from it"
    )
    assert answer == Answer(True, line, 65 if surface == "cli" else "tool error")
    assert [p.name for p in (runs / "veyru").iterdir()] == [Path(folder.url).name]
    assert Path(folder.log_url).read_bytes() == log


@pytest.mark.parametrize(("surface", "status"), [("cli", 77), ("mcp", "tool error")])
def test_a_launch_failing_two_checks_is_refused_for_the_same_one_by_the_cli_and_mcp(
    surface: str,
    status: int | str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No key and a cap the estimate passes: ``glossogen run`` and ``start_run`` run the one
    library launch check in one order, so both name the missing key (was: MCP checked the cap
    first and named it), exit 77 / a tool error, nothing claimed."""
    monkeypatch.chdir(tmp_path)  # no .env to find
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    runs = tmp_path / "runs"
    seat = {"model": "claude-sonnet-4-6", "provider": "anthropic"}
    if surface == "cli":
        answer = _cli(capsys, "run", "veyru", "--model", seat["model"], "--provider",
                      seat["provider"], "--config", "knobs_default", "--runs-dir", str(runs),
                      "--spend-cap-usd", "0.0001")  # fmt: skip
    else:
        answer = _mcp(str(runs), "start_run", scenario="veyru", spend_cap_usd=0.0001, **seat)[0]
    line = (
        "missing credentials: ANTHROPIC_API_KEY (provider anthropic, agent field_observer); "
        "ANTHROPIC_API_KEY (judge provider anthropic)"
    )
    assert answer == Answer(True, line, status)
    assert not list(runs.glob("veyru/*"))
