"""Bad sweep specs are refused in one line with the right exit code, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.sweep import (
    SweepError,
    SweepOptions,
    TrialKey,
    expand_grid,
    idempotency_key,
    load_spec,
    plan_sweep,
)

ISSUE_SPEC = """\
scenario: prisoners_dilemma
config: knobs_default
model: scripted
provider: scripted
runs_dir: ./runs
grid:
  round_count: [2, 3]
trials: 2
spend_cap_usd: 1.0
"""


def _sweep(spec: Path, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main(["sweep", str(spec), *options])
    return int(exited.value.code), capsys.readouterr().err


AT = "sweep spec 'SPEC': "  # SPEC: the spec file's path
KNOBS = (
    "agent_model_settings, channel_noise_level, idle_floor_seconds, judge_model, "
    "judge_model_settings, judge_provider, labels, max_round_duration_seconds, model_overrides, "
    "noise_replacement_mode, payoff_punishment, payoff_reward, payoff_sucker, payoff_temptation, "
    "postmortem_duration_seconds, postmortem_enabled, round_count, scheduled_events, "
    "scripted_misplay_share, seed"
)


@pytest.mark.parametrize(
    ("change", "code", "message"),
    [
        (
            ISSUE_SPEC + "trails: 3\ncolour: blue\n",
            65,
            AT + "unknown key(s) trails, colour",
        ),
        (
            ISSUE_SPEC.replace("trials: 2", "trials: 11"),
            65,
            AT + "trials: Input should be less than or equal to 10 (got 11)",
        ),
        (
            ISSUE_SPEC.replace("prisoners_dilemma", "prisoners_dilema"),
            65,
            "cell cf33d9c92 (round_count=2): unknown scenario 'prisoners_dilema' (installed: "
            "drive_module_repair, orbital_anomaly, prisoners_dilemma, signal_game, "
            "spot_the_difference, veyru)",
        ),
        (
            ISSUE_SPEC.replace("knobs_default", "./missing.json"),
            66,
            "cell cf33d9c92 (round_count=2): config file 'TMP/missing.json' does not exist",
        ),
        (
            ISSUE_SPEC.replace("round_count: [2, 3]", "round_cnt: [2, 3]"),
            65,
            "cell c48dad1df (round_cnt=2): unknown knob 'round_cnt', did you mean 'round_count'? "
            f"(known: {KNOBS})",
        ),
        (
            ISSUE_SPEC.replace("[2, 3]\n", "[2, 3]\n  models: [{model: gpt-4.1-mini}]\n"),
            65,
            AT + "grid: grid axis 'models' item 1 must be {model, provider} and nothing else, "
            "got {'model': 'gpt-4.1-mini'}",
        ),
        (
            ISSUE_SPEC.replace("[2, 3]", "[]"),
            65,
            AT + "grid: grid axis 'round_count' has no values",
        ),
        (
            ISSUE_SPEC.replace("[2, 3]", "[2, 2]"),
            65,
            AT + "grid: grid axis 'round_count' repeats the value 2: each cell must be distinct",
        ),
        (
            ISSUE_SPEC.replace("trials: 2", "trials: 0"),
            65,
            AT + "trials: Input should be greater than or equal to 1 (got 0)",
        ),
        (
            ISSUE_SPEC.replace("trials: 2", 'trials: "two"'),
            65,
            AT + 'trials: Input should be a valid integer (got "two")',
        ),
        (
            ISSUE_SPEC.replace("trials: 2", "trials: true"),
            65,
            AT + "trials: Input should be a valid integer (got true)",
        ),
        (
            ISSUE_SPEC.replace("spend_cap_usd: 1.0", "spend_cap_usd: -1"),
            65,
            AT + "spend_cap_usd: Input should be greater than or equal to 0 (got -1)",
        ),
        (
            ISSUE_SPEC.replace("spend_cap_usd: 1.0", "spend_cap_usd: .inf"),
            65,
            AT + "spend_cap_usd: Input should be a finite number (got Infinity)",
        ),
        (
            ISSUE_SPEC.replace("spend_cap_usd: 1.0", "spend_cap_usd: true"),
            65,
            AT + "spend_cap_usd: Input should be a valid number (got true)",
        ),
        (
            ISSUE_SPEC + "max_agent_turns: true\n",
            65,
            AT + "max_agent_turns: Input should be a valid integer (got true)",
        ),
        (
            ISSUE_SPEC + 'vary_seed: "yes"\n',
            65,
            AT + 'vary_seed: Input should be a valid boolean (got "yes")',
        ),
        (
            ISSUE_SPEC + "trials: 5\n",
            65,
            AT + "line 10, column 1: duplicate key 'trials' (first at line 8)",
        ),
        (
            ISSUE_SPEC.replace("[2, 3]\n", "[2, 3]\n  round_count: [4]\n"),
            65,
            AT + "line 8, column 3: duplicate key 'round_count' (first at line 7)",
        ),
        (
            ISSUE_SPEC.replace("[2, 3]", "[2, 3"),
            65,
            "sweep spec 'SPEC' is not YAML: line 8, column 7: expected ',' or ']', but got ':'",
        ),
        (
            ISSUE_SPEC.replace("provider: scripted", "provider: nopeprov"),
            65,
            "cell cf16b6bc9 (round_count=2): provider: unknown provider 'nopeprov' (known: anthropic, openai, "
            "google-gla, xai, groq, mistral, deepseek, openrouter, ollama, self-hosted, "
            "scripted, local)",
        ),
        (
            ISSUE_SPEC + "name: ''\n",
            65,
            AT + "sweep name '': use 1-64 of letters, digits, '.', '-' and '_' (set 'name:')",
        ),
    ],
    ids=[
        "unknown-keys",
        "trials-11",
        "unknown-scenario",
        "missing-config",
        "bad-knob",
        "bad-models-axis",
        "empty-axis",
        "repeated-grid-value",
        "trials-0",
        "trials-not-a-number",
        "trials-boolean",
        "negative-cap",
        "infinite-cap",
        "boolean-cap",
        "boolean-turns",
        "string-flag",
        "duplicate-key",
        "duplicate-grid-axis",
        "yaml-line-number",
        "unknown-provider",
        "empty-name",
    ],
)
def test_a_bad_spec_is_refused_in_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: str, code: int, message: str
) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(change)
    exit_code, err = _sweep(spec, capsys)
    assert exit_code == code
    assert err.splitlines() == [
        "glossogen: error: " + message.replace("SPEC", str(spec)).replace("TMP", str(tmp_path))
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]


def test_a_missing_spec_file_is_unreadable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exit_code, err = _sweep(tmp_path / "nowhere.yaml", capsys)
    assert exit_code == 66
    assert err.strip().splitlines() == [
        f"glossogen: error: sweep spec '{tmp_path / 'nowhere.yaml'}' cannot be read: "
        "No such file or directory"
    ]
    assert list(tmp_path.iterdir()) == []


def test_a_bad_stability_mode_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(ISSUE_SPEC)
    exit_code, err = _sweep(spec, capsys, "--stability-retry", "twice")
    assert exit_code == 64
    assert err.splitlines() == [
        "glossogen: error: --stability-retry 'twice': use judge_replay or agent_rerun"
    ]


def test_relative_paths_resolve_against_the_spec_folder(tmp_path: Path) -> None:
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "knobs.json").write_text('{"round_count": 4, "postmortem_enabled": false}')
    spec_file = folder / "grid.yaml"
    spec_file.write_text(ISSUE_SPEC.replace("knobs_default", "knobs.json"))
    spec, sweep_id = load_spec(spec_file)
    assert sweep_id == "grid"
    assert spec.runs_dir == str(folder / "runs")
    assert spec.config == str(folder / "knobs.json")


def test_a_cap_written_with_an_exponent_is_a_number(tmp_path: Path) -> None:
    spec_file = tmp_path / "small.yaml"
    spec_file.write_text(ISSUE_SPEC.replace("spend_cap_usd: 1.0", "spend_cap_usd: 5e-2"))
    assert load_spec(spec_file)[0].spend_cap_usd == 0.05  # PyYAML alone read the text "5e-2"


def test_cells_trials_and_requests_carry_the_sweep_labels_and_budgets(tmp_path: Path) -> None:
    spec_file = tmp_path / "pd.yaml"
    spec_file.write_text(ISSUE_SPEC + "knobs:\n  postmortem_enabled: false\nvary_seed: true\n")
    spec, sweep_id = load_spec(spec_file)
    cells = expand_grid(spec)
    assert [c.params for c in cells] == [{"round_count": 2}, {"round_count": 3}]
    assert cells[0].overrides == ("postmortem_enabled=false", "round_count=2")
    assert [c.cell_id for c in expand_grid(spec)] == [c.cell_id for c in cells]
    options = SweepOptions(max_turns=7, run_timeout_seconds=30)
    sweep = plan_sweep(spec, sweep_id, str(spec_file), options)
    assert sweep.main_keys() == [
        TrialKey(cells[0].cell_id, 1),
        TrialKey(cells[1].cell_id, 1),
        TrialKey(cells[0].cell_id, 2),
        TrialKey(cells[1].cell_id, 2),
    ]
    request = sweep.request(TrialKey(cells[1].cell_id, 2), epoch=1)
    assert (request.max_agent_turns, request.run_timeout_seconds) == (7, 30)
    assert request.overrides == [
        "postmortem_enabled=false",
        "round_count=3",
        "seed=43",
        'labels.sweep="pd"',
        f'labels.cell="{cells[1].cell_id}"',
        'labels.trial="2"',
        'labels.epoch="1"',
        'labels.part="main"',
    ]
    # Qualification: short budgets except those the user set (round_count is in the grid).
    quali = plan_sweep(spec, sweep_id, str(spec_file), SweepOptions())
    (key,) = quali.qualification_keys()
    short = quali.request(key, epoch=1)
    assert (short.max_agent_turns, short.run_timeout_seconds) == (20, 300.0)
    assert "round_count=1" not in short.overrides
    assert idempotency_key("pd", TrialKey(cells[0].cell_id, 2), 1) == f"pd/{cells[0].cell_id}/2"
    assert idempotency_key("pd", key, 3, 1) == f"pd/{cells[0].cell_id}/1/qualification/e3/r1"
    nonced = idempotency_key("pd", TrialKey(cells[0].cell_id, 2), 1, nonce="0a1b2c3d4e5f")
    assert nonced == f"pd/{cells[0].cell_id}/2@0a1b2c3d4e5f"


def test_concurrency_0_names_its_value_and_the_usage_line_names_the_choices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(ISSUE_SPEC)
    exit_code, err = _sweep(spec, capsys, "--concurrency", "0")
    assert (exit_code, err) == (64, "glossogen: error: --concurrency 0: use 1 or more\n")
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    help_text = capsys.readouterr().out
    assert help_text.splitlines()[0] == "Usage: glossogen sweep [OPTIONS] {SPEC_PATH}"
    assert "--stability-retry [judge_replay|agent_rerun]" in help_text


def test_a_runs_dir_that_cannot_be_created_is_unreadable_66(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(ISSUE_SPEC.replace("./runs", "/proc/nope/runs"))
    exit_code, err = _sweep(spec, capsys)
    assert (exit_code, err) == (
        66,
        "glossogen: error: cannot create runs dir /proc/nope/runs: No such file or directory\n",
    )


def test_a_runs_dir_probe_leaves_nothing_behind(tmp_path: Path) -> None:
    spec_file = tmp_path / "s.yaml"
    spec_file.write_text(ISSUE_SPEC.replace("./runs", "./a/b/runs"))
    spec, sweep_id = load_spec(spec_file)
    plan_sweep(spec, sweep_id, str(spec_file), SweepOptions())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


def test_a_capped_model_without_a_price_is_named_with_its_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    spec_file = tmp_path / "s.yaml"
    spec_file.write_text(
        ISSUE_SPEC.replace(
            "model: scripted\nprovider: scripted", "model: gpt-nope\nprovider: openai"
        )
    )
    spec, sweep_id = load_spec(spec_file)
    with pytest.raises(SweepError) as refused:
        plan_sweep(spec, sweep_id, str(spec_file), SweepOptions())
    cell = expand_grid(spec)[0].cell_id
    assert (str(refused.value), refused.value.exit_code) == (
        f"cell {cell} (round_count=2): spend_cap_usd is set but openai:gpt-nope is not in the "
        "price catalogue (genai-prices), so its spend cannot be capped",
        65,
    )


def test_a_malformed_openai_base_url_is_refused_by_name_in_sweep_and_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1\nX-Injected: 1")
    spec_file = tmp_path / "s.yaml"
    spec_file.write_text(
        ISSUE_SPEC.replace(
            "model: scripted\nprovider: scripted", "model: gpt-4.1-mini\nprovider: openai"
        )
    )
    exit_code, err = _sweep(spec_file, capsys)
    cell = expand_grid(load_spec(spec_file)[0])[0].cell_id
    reason = "OPENAI_BASE_URL is not a URL: it contains whitespace or a control character"
    assert (exit_code, err) == (
        65,
        f"glossogen: error: cell {cell} (round_count=2): openai:gpt-4.1-mini: {reason}\n",
    )
    with pytest.raises(SystemExit) as exited:
        main(
            ["run", "prisoners_dilemma", "--model", "gpt-4.1-mini", "--provider", "openai"]
            + ["--config", "knobs_default", "--runs-dir", str(tmp_path / "r"), "--dry-run"]
        )
    assert exited.value.code == 65
    assert capsys.readouterr().err == f"glossogen: error: openai:gpt-4.1-mini: {reason}\n"
