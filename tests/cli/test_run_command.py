"""``glossogen run`` as a user types it, in-process (``main``): the lines a run prints, bad
input refused. A process of its own only where the process is the point: what a fresh one
imports, and a first run that starts a temporary Prefect server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from glossogen.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _cli(
    *args: str, cwd: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int | str | None, str, str]:
    """``glossogen ARGS`` run in ``cwd`` by the CLI's own entry: exit code, stdout, stderr."""
    monkeypatch.chdir(cwd)
    capsys.readouterr()  # what came before is not this command's
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def test_run_prints_the_run_id_at_once_and_a_summary_at_the_end(
    prefect_api: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _cli(
        "run",
        "prisoners_dilemma",
        "--model",
        "scripted",
        "--provider",
        "scripted",
        "--runs-dir",
        "./runs",
        "--config",
        "knobs_default",
        "round_count=3",
        cwd=tmp_path,
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert code == 0, err
    lines = out.splitlines()
    run_id = next(line for line in lines if line.startswith("new_run_id=")).removeprefix(
        "new_run_id="
    )
    run_dir = Path(
        next(line for line in lines if line.startswith("new_run_dir=")).removeprefix("new_run_dir=")
    )
    assert run_dir == tmp_path / "runs" / run_id
    assert [line.split(":")[0] for line in lines if line.startswith("round ")] == [
        "round 1/3",
        "round 2/3",
        "round 3/3",
    ]
    assert lines[-1].startswith(
        f"{run_id} completed: 2/3 rounds won · 12 messages · 440 characters (postmortems included) · $0.000000 · "
    )
    assert (run_dir / "prisoners_dilemma.jsonl").is_file()
    assert json.loads((run_dir / "config.json").read_text())["round_count"] == 3


def test_a_run_that_held_no_postmortem_does_not_say_postmortems_included(
    prefect_api: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _cli("run", "prisoners_dilemma", "--model", "scripted", "--provider",
                          "scripted", "--runs-dir", "./runs", "--config", "knobs_no_postmortem",
                          "round_count=3", cwd=tmp_path, monkeypatch=monkeypatch,
                          capsys=capsys)  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    run_id = next(line for line in lines if line.startswith("new_run_id=")).removeprefix(
        "new_run_id="
    )
    assert lines[-1].startswith(
        f"{run_id} completed: 2/3 rounds won · 6 messages · 186 characters · $0.000000 · "
    ), lines[-1]


def test_missing_model_is_a_usage_error_64(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "run",
                "prisoners_dilemma",
                "--provider",
                "scripted",
                "--runs-dir",
                str(tmp_path / "runs"),
                "--config",
                "knobs_default",
            ]
        )
    assert exited.value.code == 64
    assert capsys.readouterr().err.strip() == "glossogen: error: Missing option '--model'."
    assert not (tmp_path / "runs").exists()


def test_schema_prints_the_knobs_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["schema", "prisoners_dilemma"])
    assert exited.value.code == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["properties"]["round_count"]["minimum"] == 1
    assert schema["properties"]["payoff_reward"]["default"] == 3
    assert schema["additionalProperties"] is False


def test_scenarios_lists_each_scenario_with_its_presets(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["scenarios"])
    assert exited.value.code == 0
    rows = {
        line.split("\t")[0]: line.split("\t")[1] for line in capsys.readouterr().out.splitlines()
    }
    assert rows["prisoners_dilemma"] == "presets: knobs_default, knobs_no_postmortem"
    assert rows["veyru"] == "presets: knobs_default, knobs_intern"


def test_help_and_read_only_commands_do_not_import_prefect(tmp_path: Path) -> None:
    probe = "import sys; from glossogen.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\nprint('prefect' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_with_no_server_configured_the_first_run_waits_for_a_temporary_one(
    fresh_prefect_home: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["PREFECT_HOME"] = str(fresh_prefect_home)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "glossogen",
            "run",
            "prisoners_dilemma",
            "--model",
            "scripted",
            "--provider",
            "scripted",
            "--runs-dir",
            "./runs",
            "--config",
            "knobs_default",
            "round_count=1",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "waiting for a temporary local Prefect server to start" in done.stderr
    assert "Prefect server ready after" in done.stderr
    assert "completed: " in done.stdout.splitlines()[-1]


@pytest.mark.parametrize(
    ("runs_dir", "code", "line"),
    [
        ("", 64, "--runs-dir '' is empty: give it a value"),
        ("A_FILE/runs", 66, "runs dir 'A_FILE/runs': A_FILE is a file, not a folder"),
    ],
)
def test_an_unusable_runs_dir_is_refused_before_prefect_starts(
    runs_dir: str, code: int, line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "A_FILE").write_text("not a folder")
    runs_dir = runs_dir.replace("A_FILE", str(tmp_path / "A_FILE"))
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "run",
                "prisoners_dilemma",
                "--model",
                "s",
                "--provider",
                "scripted",
                "--config",
                "knobs_default",
                "--runs-dir",
                runs_dir,
            ]
        )
    assert exited.value.code == code
    assert capsys.readouterr().err.splitlines() == [
        "glossogen: error: " + line.replace("A_FILE", str(tmp_path / "A_FILE"))
    ]


def test_a_missing_bucket_is_refused_with_exit_69(
    s3_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "run",
                "prisoners_dilemma",
                "--model",
                "s",
                "--provider",
                "scripted",
                "--config",
                "knobs_default",
                "--runs-dir",
                "s3://no-such-bucket-here/runs",
            ]
        )
    assert exited.value.code == 69
    assert capsys.readouterr().err.splitlines() == [
        "glossogen: error: runs dir 's3://no-such-bucket-here/runs': "
        "bucket 'no-such-bucket-here' does not exist"
    ]


def test_a_run_whose_agents_run_out_of_turns_ends_incomplete_with_exit_1(
    prefect_api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "run",
                "prisoners_dilemma",
                "--model",
                "s",
                "--provider",
                "scripted",
                "--config",
                "knobs_default",
                "--runs-dir",
                str(tmp_path),
                "--max-agent-turns",
                "3",
            ]
        )
    captured = capsys.readouterr()
    assert exited.value.code == 1
    assert captured.err.splitlines() == [
        "glossogen: warning: --max-agent-turns 3 likely ends the run before its 5 rounds: a "
        "prisoners_dilemma seat takes about 22 model requests over them (about 2.5 in a round's "
        "main phase and 2 in a postmortem, the scenario's cost profile, as the estimate "
        "assumes), so 3 turns cover about 1.0 of them and the run would end incomplete; "
        "--max-agent-turns 22 covers 5",
        "glossogen: error: run incomplete: every agent reached --max-agent-turns 3",
    ]
    lines = captured.out.splitlines()
    run_id = lines[2].removeprefix("new_run_id=")
    assert (
        lines[4]
        == "round 1/5: won (player_a cooperate, player_b cooperate) · 2 messages · 62 characters"
    )
    # the run's duration is wall-clock time, so only its shape is fixed
    assert re.fullmatch(
        re.escape(
            f"{run_id} incomplete: 1/1 rounds won · 2 messages · 62 characters "
            "· $0.000000 · tokens 1718 in (0 cache read, 0 cache write, "
            "0 of it 1 h), 66 out, 0.0% of input from cache · "
        )
        + r"\d+\.\d s",
        lines[5],
    ), lines[5]
    assert len(lines) == 6


def test_an_s3_endpoint_with_no_server_is_named_unreachable_not_a_missing_bucket(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    refused_port: int,
) -> None:
    import s3fs

    port = refused_port
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-never-shown")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    s3fs.S3FileSystem.clear_instance_cache()
    monkeypatch.chdir(tmp_path)
    try:
        with pytest.raises(SystemExit) as exited:
            main(
                [
                    "run",
                    "prisoners_dilemma",
                    "--model",
                    "s",
                    "--provider",
                    "scripted",
                    "--config",
                    "knobs_default",
                    "--runs-dir",
                    "s3://qa-bucket/runs",
                ]
            )
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
    assert exited.value.code == 69
    assert capsys.readouterr().err.splitlines() == [
        "glossogen: error: storage error at s3://qa-bucket/runs: EndpointConnectionError: "
        f'Could not connect to the endpoint URL: "http://127.0.0.1:{port}/qa-bucket"'
    ]
    assert list(tmp_path.iterdir()) == []


REPO = Path(__file__).resolve().parents[2]
RUN_PATH_PROBE = """
import sys
import glossogen.cli.run
import flows.simulate
from glossogen.scenario._registry import load_scenario
load_scenario("veyru")
from glossogen.eventlog import read_events
read = read_events("tests/replay/tapes/veyru/1767225600/veyru.jsonl")
assert read.events and not read.unknown_lines and not read.invalid_lines, read
heavy = %r
print(sorted(name for name in heavy if name in sys.modules))
"""
HEAVY_FOR_A_RUN = [
    "polars", "pyarrow", "numpy", "mcp", "uvicorn", "openai", "anthropic", "google.genai",
    "groq", "mistralai", "opentelemetry.sdk", "llama_cpp", "glossogen.export",
    "glossogen.analysis", "glossogen.server", "glossogen.mcp", "glossogen.evaluation",
    "glossogen.sweep", "glossogen.verify",
    # a plain run neither forks nor surveys stale runs nor records a worker's flow run
    "glossogen.derive._fork", "glossogen.derive._stale", "glossogen.derive._visibility",
    "glossogen.derive._config", "glossogen.derive._prefix",
    "orchestration.deployments",
    # the reader of a run's log loads no other scenario (every scenario only for a line of a
    # type the registered classes lack)
    "scenarios.spot_the_difference", "scenarios.prisoners_dilemma", "scenarios.signal_game",
    "scenarios.orbital_anomaly", "scenarios.drive_module_repair",
]  # fmt: skip


def test_a_run_path_imports_none_of_the_heavy_modules_it_does_not_use(tmp_path: Path) -> None:
    """The run command, the simulate flow, a scenario and a read of its log: no optional
    provider SDK, no tables, export, analysis, server, MCP, tracing SDK (tracing off), sweep
    code, fork or other scenario."""
    done = subprocess.run(
        [sys.executable, "-c", RUN_PATH_PROBE % HEAVY_FOR_A_RUN],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={k: v for k, v in os.environ.items() if not k.startswith("LANGFUSE_")},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
