"""The tables: golden CSVs for a 3-run selection, cell by cell, and the rules a user notices.

The golden files in ``golden/`` hold every column of the five tables for runs A, B and C of
the fixture cohort, ``message_id`` and ``duration_seconds`` replaced by ``<volatile>``. When a
scenario's text or a table's columns change on purpose, regenerate them with
``GLOSSOGEN_UPDATE_GOLDEN=1 pytest tests/export/test_tables.py`` and review the diff.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from glossogen.export import (
    FRAMES,
    RunIdSelection,
    RunRecord,
    SelectionError,
    available_columns,
    build_frames,
    legend,
    select_runs,
    write_tables,
)
from glossogen.export._cells import flatten_knobs
from glossogen.export._frames import model_class
from glossogen.export._tables import check_picks
from tests.export.conftest import CUT, OLD, VOLATILE, A, B, C, Cohort, metric, write_report

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("GLOSSOGEN_UPDATE_GOLDEN") == "1"


def _records(cohort: Cohort, *run_ids: str) -> list[RunRecord]:
    return select_runs(str(cohort.runs_dir), RunIdSelection(run_ids=list(run_ids))).records


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def _stable(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{k: ("<volatile>" if k in VOLATILE else v) for k, v in r.items()} for r in rows]


@pytest.fixture(scope="module")
def golden_out(cohort: Cohort, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("golden-out")
    counts = write_tables(
        _records(cohort, A, B, C), FRAMES, str(out), include_metric_summaries=True
    )
    assert counts == {
        "run_level": 3,
        "round_level": 2,
        "agent_level": 6,
        "message_level": 36,
        "round_context": 7,
        "call_level": 114,
    }
    return out


@pytest.mark.parametrize("table", [*FRAMES, "columns"])
def test_tables_match_the_golden_files_cell_by_cell(golden_out: Path, table: str) -> None:
    header, rows = _read(golden_out / f"{table}.csv")
    golden = GOLDEN / f"{table}.csv"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        with golden.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, header, lineterminator="\n")
            writer.writeheader()
            writer.writerows(_stable(rows))
    want_header, want_rows = _read(golden)
    assert header == want_header
    assert len(rows) == len(want_rows)
    for i, (got, want) in enumerate(zip(_stable(rows), want_rows, strict=True)):
        for column in header:
            assert (i, column, got[column]) == (i, column, want[column])


def test_the_0_5_run_exports_like_our_own(cohort: Cohort, tmp_path: Path) -> None:
    write_tables(_records(cohort, OLD), ["run_level", "message_level"], str(tmp_path))
    _, runs = _read(tmp_path / "run_level.csv")
    run = runs[0]
    assert {k: run[k] for k in ("status", "status_detail", "rounds_played", "rounds_won")} == {
        "status": "completed",
        "status_detail": "scenario_complete",
        "rounds_played": "5",
        "rounds_won": "5",
    }
    assert (run["message_count"], run["model_class"], run["provider"]) == (
        "28",
        "closed",
        "anthropic",
    )
    assert run["knob.round_time_budget_seconds"] == "150"
    assert run["knob.swap_round"] == "" and run["judge_cost_usd"] == ""  # recorded null, unknown
    assert run["agent_role.field_observer"] == "Field Observer"
    _, messages = _read(tmp_path / "message_level.csv")
    link = [m for m in messages if m["channel_id"] == "link"]
    assert len(link) == 18 and {m["phase"] for m in link} == {"main"}
    assert sum(int(m["chars"]) for m in link) == 456
    assert {m["is_primary_channel"] for m in link} == {"true"}
    post = [m for m in messages if m["channel_id"] == "postmortem"]
    assert len(post) == 10 and {m["is_primary_channel"] for m in post} == {"false"}
    assert [m["message_index_in_round"] for m in link if m["round_number"] == "1"][:3] == [
        "0",
        "1",
        "2",
    ]


def test_a_cut_log_costs_only_its_own_rows(cohort: Cohort, tmp_path: Path) -> None:
    counts = write_tables(_records(cohort, B, CUT), ["run_level", "message_level"], str(tmp_path))
    _, runs = _read(tmp_path / "run_level.csv")
    cut = runs[1]
    assert (cut["run_id"], cut["status"], cut["rounds_played"], cut["message_count"]) == (
        CUT,
        "stopped",
        "1",
        "7",
    )
    _, messages = _read(tmp_path / "message_level.csv")
    per_run = {r: sum(1 for m in messages if m["run_id"] == r) for r in (B, CUT)}
    assert per_run == {B: 14, CUT: 7}
    assert counts["message_level"] == 21


def test_blank_is_never_zero(cohort: Cohort) -> None:
    frames = build_frames(_records(cohort, A, B, C), ["run_level"])
    run = {r["run_id"]: r for r in frames["run_level"].to_dicts()}
    assert run[A]["metric.round_success"] == 0.5
    assert run[B]["metric.round_success"] is None  # failed: no number
    assert run[B]["metric_rounds.round_success"] == 3
    assert run[C]["metric.round_success"] is None  # no report
    assert run[C]["metric_rounds.round_success"] is None
    assert run[A]["metric_rounds.language_repetition"] == 0  # run-level score only
    assert (run[A]["has_evaluation"], run[C]["has_evaluation"]) == (True, False)


def test_repetition_factor_joins_the_sidecar_by_message_id(cohort: Cohort) -> None:
    frame = build_frames(_records(cohort, A, C), ["message_level"])["message_level"]
    factors = frame.filter(frame["run_id"] == A)["repetition_factor"].to_list()
    assert factors[:4] == [1.0, None, 1.5, None]
    assert frame.filter(frame["run_id"] == C)["repetition_factor"].null_count() == 8


def test_columns_and_metrics_can_be_picked(cohort: Cohort) -> None:
    frames = build_frames(
        _records(cohort, A, B),
        ["run_level", "round_level"],
        columns=["status", "knob.round_count", "label.budget"],
        metrics=["round_success"],
        repeat_run_columns=False,
    )
    assert frames["run_level"].columns == [
        "run_id",
        "scenario_name",
        "status",
        "knob.round_count",
        "label.budget",
        "metric.round_success",
        "metric_rounds.round_success",
    ]
    assert frames["round_level"].columns == [
        "run_id",
        "scenario_name",
        "round_number",
        "metric.round_success",
    ]
    assert frames["round_level"].rows() == [(A, "veyru", 1, 0.0), (A, "veyru", 2, 1.0)]


def test_spreadsheet_injection_and_control_characters(cohort: Cohort, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "veyru").mkdir(parents=True)
    target = runs / "veyru" / "1795000001"
    import shutil

    shutil.copytree(cohort.folder(A), target)
    notes = ["=1+1", "+cmd", "@notation established", "\tlead tab", "-3 is negative",
             "line one\nline two\r\nthree", "bell\x07 and nul\x00 gone"]  # fmt: skip
    write_report(
        target,
        "veyru",
        {
            "round_success": metric(
                "round_success",
                0.5,
                7,
                summary="=HYPERLINK(x)",
                per_round=[
                    {"round_number": i + 1, "value": 1.0, "team_id": "team", "note": note}
                    for i, note in enumerate(notes)
                ],
            )
        },
    )
    records = select_runs(str(runs), {"kind": "filters"}).records
    write_tables(records, ["run_level", "round_level"], str(tmp_path / "out"),
                 include_metric_summaries=True)  # fmt: skip
    _, rounds = _read(tmp_path / "out" / "round_level.csv")
    assert [r["metric_note.round_success"] for r in rounds] == [
        "'=1+1",
        "'+cmd",
        "'@notation established",
        "'\tlead tab",
        "-3 is negative",
        "line one line two three",
        "bell and nul gone",
    ]
    _, run = _read(tmp_path / "out" / "run_level.csv")
    assert run[0]["metric_summary.round_success"] == "'=HYPERLINK(x)"
    lines = (tmp_path / "out" / "round_level.csv").read_text().splitlines()
    assert len(lines) == 8  # no newline survives inside a cell


def test_knobs_flatten_scalars_mappings_and_lists() -> None:
    assert flatten_knobs(
        {"a": 1, "m": {"x": {"model": "m1"}, "e": {}}, "l": [1, {"k": "v"}], "n": None}
    ) == {"knob.a": 1, "knob.m.x.model": "m1", "knob.l": '[1,{"k":"v"}]', "knob.n": None}


@pytest.mark.parametrize(
    ("providers", "expected"),
    [
        ({"scripted"}, None),
        ({"local"}, "open"),
        ({"anthropic", "openai"}, "closed"),
        ({"anthropic", "groq"}, "mixed"),
        ({"openrouter"}, None),
        ({"anthropic", "mistral"}, None),
        ({"nobody-knows"}, None),
        (set(), None),
    ],
)
def test_model_class_from_the_providers_weights(providers: set, expected: str | None) -> None:
    assert model_class(providers) == expected


def test_the_legend_counts_runs_filling_each_column(cohort: Cohort) -> None:
    records = _records(cohort, A, B, C)
    frames = build_frames(records, ["run_level", "agent_level"])
    table = {(r["table"], r["column"]): r for r in legend(dict(frames), records).to_dicts()}
    assert table[("run_level", "label.budget")]["runs_filled"] == 2
    assert table[("run_level", "label_flag.baseline")]["family"] == "label_flag"
    assert table[("run_level", "metric.round_success")]["unit"] == "share of rounds won"
    assert table[("run_level", "metric.round_success")]["runs_filled"] == 1
    assert table[("run_level", "total_chars")]["unit"] == "characters"
    assert table[("agent_level", "metric.mean_chars_per_message")]["runs_filled"] == 1


def test_available_columns_describes_the_preview(cohort: Cohort) -> None:
    found = available_columns(_records(cohort, A, B, C))
    assert found["runs_without_report"] == 1
    assert found["metrics"] == [
        {"name": "language_repetition", "runs": 1, "round_rows": 0, "agent_rows": 0},
        {"name": "mean_chars_per_message", "runs": 1, "round_rows": 1, "agent_rows": 1},
        {"name": "round_success", "runs": 2, "round_rows": 2, "agent_rows": 0},
    ]
    json.dumps(found)  # the REST preview serialises it as is


def test_a_scenario_that_does_not_rebuild_leaves_channel_columns_empty(
    cohort: Cohort, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import shutil

    ghost = tmp_path / "runs" / "ghost" / "1795000100"
    ghost.mkdir(parents=True)
    shutil.copy(cohort.folder(A) / "veyru.jsonl", ghost / "ghost.jsonl")
    shutil.copy(cohort.folder(A) / "config.json", ghost / "config.json")
    records = select_runs(str(tmp_path / "runs"), {"kind": "filters"}).records
    with caplog.at_level("WARNING", logger="glossogen.export"):
        frame = build_frames(records, ["message_level"])["message_level"]
    assert frame.height == 14
    assert frame["is_primary_channel"].null_count() == 14
    assert frame["team_id"].null_count() == 14
    assert frame["sender_role"].to_list()[:2] == ["field_observer", "stabilization_engineer"]
    assert "ghost/1795000100: is_primary_channel and team_id left empty" in caplog.text
    assert "unknown scenario 'ghost'" in caplog.text


def test_a_round_is_one_row_and_several_teams_are_averaged(cohort: Cohort, tmp_path: Path) -> None:
    import shutil

    runs = tmp_path / "runs"
    target = runs / "veyru" / "1795000001"
    shutil.copytree(cohort.folder(A), target)
    per_team = [
        {"round_number": 1, "value": 1.0, "team_id": "north", "note": "won: held"},
        {"round_number": 1, "value": 0.0, "team_id": "south", "note": "lost: budget"},
        {"round_number": 2, "value": 1.0, "team_id": "north", "note": "won: held"},
        {"round_number": 2, "value": 1.0, "team_id": "south", "note": None},
        {"round_number": 3, "value": 0.0, "team_id": "north", "note": None},
        {"round_number": 3, "value": 0.0, "team_id": "south", "note": None},
    ]
    write_report(
        target,
        "veyru",
        {
            "round_success": metric("round_success", 1 / 3, 3, per_round=per_team),
            "mean_chars_per_message": metric(
                "mean_chars_per_message",
                20.0,
                1,
                per_round=[{"round_number": 2, "value": 20.0, "team_id": None, "note": "n=3"}],
            ),
        },
    )
    records = select_runs(str(runs), {"kind": "filters"}).records
    frames = build_frames(records, ["run_level", "round_level"], include_metric_summaries=True,
                          repeat_run_columns=False)  # fmt: skip
    rounds = frames["round_level"].select(
        "round_number",
        "metric.round_success",
        "metric.mean_chars_per_message",
        "metric_note.round_success",
        "metric_note.mean_chars_per_message",
    )
    assert rounds.rows() == [
        (1, 0.5, None, "north: won: held; south: lost: budget", None),
        (2, 1.0, 20.0, "north: won: held", "n=3"),
        (3, 0.0, None, None, None),
    ]
    run = frames["run_level"].to_dicts()[0]
    assert (run["metric_rounds.round_success"], run["metric_rounds.mean_chars_per_message"]) == (
        3,
        1,
    )
    units = {(r["table"], r["column"]): r["unit"] for r in legend(frames, records).to_dicts()}
    assert units[("round_level", "metric.round_success")] == (
        "share of rounds won; per round: mean over the teams reporting it"
    )
    assert units[("run_level", "metric.round_success")] == "share of rounds won"


def test_providers_lists_every_provider_a_mixed_run_used(cohort: Cohort, tmp_path: Path) -> None:
    import shutil

    target = tmp_path / "runs" / "veyru" / "1795000001"
    shutil.copytree(cohort.folder(A), target)
    log = target / "veyru.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        event = json.loads(line)
        if event.get("agent_id") == "field_observer" and event["event_type"] == "agent_registered":
            lines[i] = json.dumps({**event, "provider": "openai", "model": "gpt-5.4"}) + "\n"
    log.write_text("".join(lines))
    records = select_runs(str(tmp_path / "runs"), {"kind": "filters"}).records
    run = build_frames(records, ["run_level"])["run_level"].to_dicts()[0]
    assert (run["provider"], run["providers"], run["models"], run["model_class"]) == (
        "scripted",
        "openai; scripted",
        "gpt-5.4; scripted",
        None,  # a scripted seat runs no model with weights: the class is not guessed
    )


def test_column_and_metric_picks_the_tables_do_not_hold_are_refused(cohort: Cohort) -> None:
    records = _records(cohort, A, B)
    with pytest.raises(SelectionError) as caught:
        build_frames(records, ["run_level"], columns=["status", "knob.nope", "metric.x"])
    assert (caught.value.field, caught.value.message) == (
        "columns",
        "unknown columns for these tables of this selection: 'knob.nope', 'metric.x'; "
        "metric columns are picked by metric name in metrics",
    )
    with pytest.raises(SelectionError) as caught:
        build_frames(records, ["round_level"], metrics=["round_success", "perplexity"])
    assert (caught.value.field, caught.value.message) == (
        "metrics",
        "unknown metrics for this selection (no selected run's report has them): 'perplexity'",
    )
    with pytest.raises(SelectionError):  # run context is not on round rows when not repeated
        build_frames(records, ["round_level"], columns=["status"], repeat_run_columns=False)
    picked = build_frames(records, ["message_level", "round_context"],
                          columns=["text", "injection.field_observer"], repeat_run_columns=False)  # fmt: skip
    assert picked["round_context"].columns == ["run_id", "scenario_name", "round_number",
                                               "injection.field_observer"]  # fmt: skip


def test_no_run_gives_header_only_tables(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    frames = build_frames([], FRAMES, columns=["knob.anything"], metrics=["anything"])
    assert {name: frame.height for name, frame in frames.items()} == dict.fromkeys(FRAMES, 0)
    assert frames["message_level"].columns[:3] == ["run_id", "scenario_name", "round_number"]
    assert frames["round_level"].columns == ["run_id", "scenario_name", "round_number"]


def test_round_context_says_which_team_won_each_ranked_round(tmp_path: Path) -> None:
    """Two-team spot_the_difference: both teams were eligible in both rounds; the ranking
    (fewest characters) named b in round 1 and a in round 2, and the table says so, as MCP's
    ``get_run``, the console and the run page do."""
    from tests.fixtures.played_runs import play_run

    run = play_run(str(tmp_path), "spot_the_difference", rounds=2, now_unix=1_700_000_401)
    records = select_runs(str(tmp_path), RunIdSelection(run_ids=[run.run_id])).records
    out = tmp_path / "out"
    write_tables(records, ["round_context"], str(out))
    header, rows = _read(out / "round_context.csv")
    assert header[:6] == [
        "run_id", "scenario_name", "round_number", "winners", "outcome.a", "outcome.b",
    ]  # fmt: skip
    assert [(r["round_number"], r["winners"], r["outcome.a"], r["outcome.b"]) for r in rows] == [
        ("1", "b", "eligible", "won"),
        ("2", "a", "won", "eligible"),
    ]
    picked = ["winners", "outcome.a", "outcome.b"]
    check_picks(records, ["round_context"], picked, None)  # a pick of them is not refused
