"""What the fresh user of issue 32 (u43b) found the surfaces still doing apart, each fixed.

Each operation through the CLI (``glossogen`` in this process: its exit code and its lines) and
MCP (the SDK's client on ``build_server`` in-process), as ``tests/surfaces/``
drives them: evaluate_run scored by the CLI's own entry (no Prefect server for an in-process
evaluation), a missing ``--knobs``/``knobs`` file named, ``fork_run(replay=True)`` saying what
was replayed, ``estimate_run`` taking the dry run's limits, ``resume_run`` a judge cache,
``export_runs`` the raw zip; and the CLI's wording of a value that is not UTF-8, of a flag left
without its value, and of a ``--channel-visibility`` no run could take (64, usage).
"""

from __future__ import annotations

import asyncio
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.eventlog import RunView
from tests.fixtures.played_runs import after_round_1, play_run
from tests.fixtures.polling import wait_until
from tests.surfaces.drive import DERIVED, Answer, _cli, _mcp, launch_through

ENTRY = {"status": "ok", "score": 1.0, "rounds": 2}
"""round_success of a scripted 2-round veyru run, as its report holds it."""


@pytest.fixture
def no_prefect_server() -> Iterator[None]:
    """No Prefect API configured and no temporary server allowed: a flow run fails at once."""
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_SERVER_EPHEMERAL_ENABLED,
        temporary_settings,
    )

    with temporary_settings(
        updates={PREFECT_SERVER_EPHEMERAL_ENABLED: False}, restore_defaults={PREFECT_API_URL}
    ):
        yield


@pytest.mark.parametrize("surface", ["cli", "mcp"])
def test_evaluating_a_run_starts_no_prefect_server_on_either_surface(
    surface: str, no_prefect_server: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """u43b: MCP ``evaluate_run`` started a temporary Prefect server and a flow (27 s) where
    ``glossogen evaluate`` scores in-process (2.8 s). Both go through ``evaluate_planned``:
    with no server to be had, both score the run, alike."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), "veyru", rounds=2, now_unix=1_790_000_000)
    if surface == "cli":
        answer = _cli(capsys, "evaluate", "veyru", "--run-dir", folder.url, "--metrics",
                      "round_success")  # fmt: skip
        assert answer == Answer(
            False, "round_success\t1\tshare of rounds won\t2 of 2 rounds won", 0
        )
    else:
        answer, result = _mcp(str(runs), "evaluate_run", run_id=folder.run_id,
                              metrics=["round_success"])  # fmt: skip
        assert (answer.refused, answer.status) == (False, "ok")
        assert result is not None
        assert {k: result["entries"]["round_success"][k] for k in ENTRY} == ENTRY
    report = json.loads((Path(folder.url) / "veyru_report.json").read_text())
    assert {k: report["metrics"]["round_success"][k] for k in ENTRY} == ENTRY


@pytest.mark.parametrize("surface", ["cli", "mcp"])
@pytest.mark.parametrize("operation", list(DERIVED))
def test_a_knobs_file_that_is_not_there_is_named_with_its_flag(
    surface: str, operation: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """u43b: ``--knobs /nonexistent.json`` named neither ``--knobs`` nor ``knobs``. One line
    naming the flag (the argument) and the path, 66, nothing claimed."""
    runs = tmp_path / "runs"
    play_run(str(runs), "veyru", rounds=2)
    missing = str(tmp_path / "nonexistent.json")
    before = sorted(p.name for p in runs.glob("veyru/*"))
    answer = launch_through(surface, operation, runs, "knobs", missing, missing, capsys)
    name = "--knobs" if surface == "cli" else "knobs"
    line = f"{name}: config file '{missing}' does not exist"
    assert answer == Answer(True, line, 66 if surface == "cli" else "tool error")
    assert sorted(p.name for p in runs.glob("veyru/*")) == before


def _ended(folder: str) -> bool:
    view = RunView.load(f"{folder}/veyru.jsonl")
    return view.status not in ("running", "stopped") and view.ended is not None


def test_a_fork_with_replay_says_what_was_replayed_on_both_surfaces(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """u43b: MCP ``fork_run(replay=True)`` answered without the line ``fork-at-round
    --replay`` prints. Two sources played alike, one forked through each surface: the same
    line (``Launched.replayed``), and each fork plays on to its end."""
    by_cli = play_run(str(tmp_path / "a"), "veyru", rounds=2, now_unix=1_790_000_000)
    by_mcp = play_run(str(tmp_path / "b"), "veyru", rounds=2, now_unix=1_790_000_000)
    assert by_cli.run_id == by_mcp.run_id
    with pytest.raises(SystemExit) as exited:
        main(["fork-at-round", "veyru", "--source-run-dir", by_cli.url, "--after-round", "1",
              "--runs-dir", str(tmp_path / "a"), "--replay"])  # fmt: skip
    out, err = capsys.readouterr()
    assert (exited.value.code, err) == (0, "")
    said, new_id, new_dir = out.splitlines()
    answer, result = _mcp(str(tmp_path / "b"), "fork_run", source_run_id=by_mcp.run_id,
                          after_round=1, replay=True)  # fmt: skip
    assert answer.refused is False
    assert result is not None
    # round 1's 27 llm_response_received, and its 111 events after the 3 of round 0
    # (simulation_started, two agent_registered), counted from the source's log:
    recorded = [json.loads(line) for line in Path(by_cli.log_url).read_text().splitlines()]
    assert sum(e["round_number"] == 1 for e in recorded) == 111
    assert sum(e["round_number"] == 1 and e["event_type"] == "llm_response_received"
               for e in recorded) == 27  # fmt: skip
    line = (
        f"replayed rounds 1..1 of {by_cli.run_id} from its tape: 27 calls, 114 events "
        "reproduced; the new run's rounds 1..1 are the replay's"
    )
    assert (said, result["replayed"]) == (line, line)
    assert new_id.startswith("new_run_id=veyru/")
    for folder in (new_dir.removeprefix("new_run_dir="), f"{tmp_path}/b/{result['run_id']}"):
        wait_until(lambda f=folder: _ended(f), f"the fork in {folder} ends")
        assert RunView.load(f"{folder}/veyru.jsonl").status == "completed"


def _estimate_cli(capsys: pytest.CaptureFixture[str], *flags: str) -> Answer:
    return _cli(capsys, "run", "veyru", "--model", "gpt-4o-mini", "--provider", "openai",
                "--config", "knobs_default", "--runs-dir", "unused", "--dry-run", *flags)  # fmt: skip


@pytest.mark.parametrize("surface", ["cli", "mcp"])
def test_the_dry_run_and_estimate_run_take_and_check_the_same_limits(
    surface: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """u43b: ``estimate_run`` lacked ``spend_cap_usd`` and ``run_timeout_seconds``, so the dry
    run's cap check could not be reached through it. A cap the estimate passes is refused alike
    (65 / a tool error); limits within it are echoed back (the CLI's line, the tool's fields)."""
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # the seats' and the judge's
        monkeypatch.setenv(key, "not-used")  # an estimate calls no model
    monkeypatch.chdir(tmp_path)
    if surface == "cli":
        refused = _estimate_cli(capsys, "--spend-cap-usd", "1e-9")
        taken = _estimate_cli(capsys, "--spend-cap-usd", "10", "--run-timeout", "60")
        assert taken.line.endswith(", run timeout 60 s, spend cap $10.000000")
    else:
        asked = {"scenario": "veyru", "model": "gpt-4o-mini", "provider": "openai"}
        refused = _mcp(str(tmp_path), "estimate_run", **asked, spend_cap_usd=1e-9)[0]
        _, result = _mcp(str(tmp_path), "estimate_run", **asked, spend_cap_usd=10.0,
                         run_timeout_seconds=60.0)  # fmt: skip
        assert result is not None
        assert (result["spend_cap_usd"], result["run_timeout_seconds"]) == (10.0, 60.0)
    name = "--spend-cap-usd" if surface == "cli" else "spend_cap_usd"
    line = (
        f"{name} 1e-09: the dry-run estimate of the 5 rounds to play is $0.026729 ($0.005346 "
        "per round), above the cap"
    )
    assert refused == Answer(True, line, 65 if surface == "cli" else "tool error")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("surface", ["cli", "mcp"])
def test_a_resumes_dry_run_is_estimate_run_with_the_run_id(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run --resume --dry-run`` had no tool: ``estimate_run(run_id=...)`` is it, checked as
    the resume is (a limit change refused unless ``allow_config_change``), the rounds still to
    play estimated. Nothing claimed, the log untouched."""
    runs = tmp_path / "runs"
    run_id = asyncio.run(after_round_1(str(runs), ending="interrupted"))
    log = (runs / run_id / "veyru.jsonl").read_bytes()
    limits = {"spend_cap_usd": 10.0, "run_timeout_seconds": 60.0}
    if surface == "cli":
        dry = ["run", "veyru", "--resume", str(runs / run_id), "--dry-run", "--spend-cap-usd",
               "10", "--run-timeout", "60"]  # fmt: skip
        refused = _cli(capsys, *dry)
        taken = _cli(capsys, *dry, "--allow-config-change")
        assert taken.line.endswith(", 2 rounds, max_agent_turns 200, run timeout 60 s, "
                                   "spend cap $10.000000")  # fmt: skip
        assert capsys.readouterr() == ("", "")
        with pytest.raises(SystemExit):
            main([*dry, "--allow-config-change"])
        assert "estimated cost: $0.0000 for 1 rounds ($0.0000 per round)" in (
            capsys.readouterr().out.splitlines()
        )
    else:
        refused = _mcp(str(runs), "estimate_run", run_id=run_id, **limits)[0]
        _, result = _mcp(str(runs), "estimate_run", run_id=run_id, allow_config_change=True,
                         **limits)  # fmt: skip
        assert result is not None
        assert (result["rounds"], result["total_cost_usd"]) == (1, 0.0)
        assert (result["spend_cap_usd"], result["run_timeout_seconds"]) == (10.0, 60.0)
    name = "--allow-config-change" if surface == "cli" else "allow_config_change"
    line = (
        "the config differs from the one the run recorded (run_timeout_seconds null -> 60.0, "
        f"spend_cap_usd null -> 10.0); pass {name} to resume under the new one"
    )
    assert refused == Answer(True, line, 65 if surface == "cli" else "tool error")
    assert [p.name for p in (runs / "veyru").iterdir()] == [run_id.split("/")[1]]
    assert (runs / run_id / "veyru.jsonl").read_bytes() == log


@pytest.mark.parametrize("surface", ["cli", "mcp"])
def test_a_resume_refuses_a_judge_cache_that_is_a_file_alike(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """u43b: ``resume_run`` lacked ``judge_cache``. ``run --resume --judge-cache`` and
    ``resume_run(judge_cache=...)`` take it in the ``ResumeRequest``; a file is refused alike,
    64 / a tool error, the log untouched."""
    runs = tmp_path / "runs"
    play_run(str(runs), "veyru", rounds=2)
    cache = tmp_path / "cache.json"
    cache.write_text("{}")
    (source,) = (runs / "veyru").iterdir()
    log = (source / "veyru.jsonl").read_bytes()
    if surface == "cli":
        answer = _cli(capsys, "run", "veyru", "--resume", str(source), "--judge-cache",
                      str(cache))  # fmt: skip
    else:
        answer = _mcp(str(runs), "resume_run", run_id=f"veyru/{source.name}",
                      judge_cache=str(cache))[0]  # fmt: skip
    name = "--judge-cache" if surface == "cli" else "judge_cache"
    line = f"{name} {str(cache)!r} is a file, not a folder"
    assert answer == Answer(True, line, 64 if surface == "cli" else "tool error")
    assert (source / "veyru.jsonl").read_bytes() == log


def test_a_resume_plans_the_judge_cache_it_is_given(tmp_path: Path) -> None:
    """What ``resume_run(judge_cache=...)`` hands the detached player (``ResumeRequest`` on its
    stdin) and ``run --resume --judge-cache`` plans: the cache, not a change from the record
    (it is never recorded)."""
    from glossogen.launch import ResumeRequest, plan_resume

    runs = tmp_path / "runs"
    run_id = asyncio.run(after_round_1(str(runs), ending="interrupted"))
    cache = tmp_path / "cache"
    request = ResumeRequest(run_dir=str(runs / run_id), judge_cache=str(cache))
    plan, point = plan_resume(ResumeRequest.model_validate_json(request.model_dump_json()))
    assert (plan.judge_cache, point.config_changes, point.limit_changes) == (str(cache), {}, {})
    assert plan_resume(request.model_copy(update={"judge_cache": None}))[0].judge_cache is None


def _zipped(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as archive:
        return sorted(n for n in archive.namelist() if not n.endswith("/"))


@pytest.mark.parametrize("surface", ["cli", "mcp"])
def test_export_writes_the_raw_zip_on_both_surfaces(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """u43b: ``export_runs`` had no raw zip. ``export --raw --include-atif`` and
    ``export_runs(raw=True, include_atif=True)`` write the same members; logs without ``raw``
    are refused alike, nothing written."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), "veyru", rounds=1, now_unix=1_790_000_000)
    out = tmp_path / "out"
    bare = tmp_path / "bare"
    files: list[str]
    if surface == "cli":
        done = _cli(capsys, "export", "--runs-dir", str(runs), "--out", str(out), "--frames",
                    "run_level", "--raw", "--include-atif")  # fmt: skip
        assert done == Answer(False, f"exported 1 run to {out}", 0)
        refused = _cli(capsys, "export", "--runs-dir", str(runs), "--out", str(bare),
                       "--include-logs")  # fmt: skip
        expected = Answer(True, "--include-logs and --include-atif apply to --raw", 64)
        files = sorted(p.name for p in out.iterdir())
    else:
        answer, result = _mcp(str(runs), "export_runs", out=str(out), frames=["run_level"],
                              raw=True, include_atif=True)  # fmt: skip
        assert (answer.refused, result is not None) == (False, True)
        assert result is not None
        files = sorted(Path(f).name for f in result["files"])
        refused = _mcp(str(runs), "export_runs", out=str(bare), include_logs=True)[0]
        expected = Answer(True, "include_logs and include_atif apply to raw", "tool error")
    assert files == ["run_level.csv", "runs.zip"]
    assert refused == expected
    assert not bare.exists()
    run = f"veyru/{Path(folder.url).name}"
    assert _zipped(out / "runs.zip") == [
        "manifest.csv",
        f"{run}/atif/field_observer.json",
        f"{run}/atif/stabilization_engineer.json",
        f"{run}/config.json",
        f"{run}/labels.json",
        f"{run}/veyru.jsonl",
    ]


@pytest.mark.parametrize(
    ("argv", "line", "code"),
    [
        (["--channel-visibility", "r\udcffn"],
         "--channel-visibility 'r\\xffn': use full, none or from_round:R, or channel=rule "
         "pairs such as link=full,postmortem=none", 64),
        (["--channel-visibility", "bogus"],
         "--channel-visibility 'bogus': use full, none or from_round:R, or channel=rule pairs "
         "such as link=full,postmortem=none", 64),
        (["--knobs", "/tmp/r\udcffn.json"],
         "--knobs: config file '/tmp/r\\xffn.json' does not exist", 66),
    ],
    ids=["not-utf-8", "bad-spelling", "knobs-not-utf-8"],
)  # fmt: skip
def test_the_cli_names_a_value_that_is_not_utf_8_by_its_bytes_and_a_bad_spelling_is_usage(
    argv: list[str], line: str, code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """u43b: a value that is not UTF-8 was echoed ``'r\\udcffn'`` (now the byte typed,
    ``'r\\xffn'``), and a ``--channel-visibility`` of no known spelling exited 65 where every
    other bad flag value exits 64 (README: 64 usage). Nothing claimed."""
    runs = tmp_path / "runs"
    folder = play_run(str(runs), "veyru", rounds=2)
    answer = _cli(capsys, "replace-agent", "veyru", "--source-run-dir", folder.url,
                  "--after-round", "1", "--runs-dir", str(runs), "--replaced-agent-id",
                  "field_observer", "--model", "m", "--provider", "scripted", *argv)  # fmt: skip
    assert answer == Answer(True, line, code)
    assert [p.name for p in (runs / "veyru").iterdir()] == [Path(folder.url).name]


def test_a_flag_left_without_its_value_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """u43b: ``--source-run-dir --after-round 2`` (the folder forgotten) said ``Missing option
    '--after-round'.: got '2'``. Now the flag left without a value is named, 64."""
    answer = _cli(capsys, "fork-at-round", "veyru", "--source-run-dir", "--after-round", "2",
                  "--runs-dir", str(tmp_path))  # fmt: skip
    line = "--source-run-dir has no value: it took the flag '--after-round' as its value"
    assert answer == Answer(True, line, 64)
    assert list(tmp_path.iterdir()) == []
