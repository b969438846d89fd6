"""Selecting runs: every filter example of the spec, against the fixture cohort."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from glossogen.cli._refusals import said_of_selection
from glossogen.export import (
    FilterSelection,
    KnobCondition,
    RunIdSelection,
    RunsDirError,
    SelectedRuns,
    SelectionError,
    select_runs,
    selection_of,
)
from tests.export.conftest import CUT, FORK, OLD, A, B, C, Cohort

ALL = sorted([A, B, C, FORK, CUT, OLD])
VEYRU = [A, B, FORK, CUT, OLD]


def _ids(cohort: Cohort, **filters: object) -> list[str]:
    found = select_runs(str(cohort.runs_dir), FilterSelection(**filters))  # type: ignore[arg-type]  # each test names valid fields
    return [r.run_id for r in found.records]


def _refusal(cohort: Cohort, *knob: str) -> str:
    with pytest.raises(SelectionError) as caught:
        _ids(cohort, knob=list(knob))
    assert caught.value.field == "knob"
    return caught.value.message


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, ALL),
        ({"scenario": ["prisoners_dilemma"]}, [C]),
        ({"scenario": ["veyru", "prisoners_dilemma"]}, ALL),
        ({"labels": ["baseline_oss", "budget=800"]}, [A]),
        ({"labels": ["baseline"]}, [C, B]),  # a bare flag never substring-matches baseline_oss
        ({"labels": ["budget"]}, []),  # a flag is not a key=value label
        ({"labels": ["budget=80"]}, []),
        ({"run_id_contains": "veyru/17950000"}, [A, B, FORK, CUT]),
        ({"contains_agent_id": "player_a"}, [C]),
        # The reference pages' 0.5 word: every completed run, the 0.5 one's included.
        ({"status": "scenario_complete"}, [C, A, B, FORK, OLD]),
        ({"status": "completed"}, [C, A, B, FORK, OLD]),
        ({"status": "stopped"}, [CUT]),  # no simulation_ended and no live writer
        ({"status": "running"}, []),  # no writer holds any of them
        ({"status": "COMPLETED", "scenario": ["prisoners_dilemma"]}, [C]),
    ],
)
def test_filters_select_exactly(cohort: Cohort, filters: dict, expected: list[str]) -> None:
    assert _ids(cohort, **filters) == sorted(expected, key=ALL.index)


@pytest.mark.parametrize("word", ["bogus", "complete"])  # "": an empty value (test_fourth_user)
def test_a_status_no_run_can_have_is_refused_naming_it(cohort: Cohort, word: str) -> None:
    with pytest.raises(SelectionError) as caught:
        _ids(cohort, status=word)
    known = "completed, incomplete, error, interrupted, running, stopped, queued"
    assert (caught.value.field, caught.value.message) == (
        "status",
        f"status {word!r} is no run's status (one of {known}, or scenario_complete)",
    )
    assert said_of_selection(caught.value) == (
        f"--status {word!r} is no run's status (one of {known}, or scenario_complete)"
    )


@pytest.mark.parametrize(
    ("knob", "expected"),
    [
        # The spec's example: no played run records round_time_budget_seconds (a 0.5 knob):
        # unrecorded keeps nothing; the 0.5 run records 150.
        (["round_time_budget_seconds>=200", "postmortem_enabled=true"], []),
        (["round_time_budget_seconds>=100", "postmortem_enabled=true"], [OLD]),
        (["round_budget_chars>=200"], [B, CUT]),
        (["round_budget_chars<200"], [A, FORK]),
        (["round_budget_chars=150.0"], [A, FORK]),
        (["round_budget_chars!=150"], [B, CUT]),
        (["seed=7", "round_count>2"], [B, CUT]),
        (["noise_replacement_mode=MASK"], [A, B, FORK, CUT, OLD]),  # case-insensitive
        (["noise_replacement_mode!=mask"], []),
        (["model_overrides.field_observer.model=scripted"], [FORK]),  # dotted nested knob
        (["model_overrides.field_observer.model=SCRIPTED-field_observer"], [OLD]),
        (["agent_model_settings.temperature=0.5"], [B, CUT]),
        (["agent_model_settings.temperature=null"], [A, FORK]),
        # null is the only reserved word: never swapped vs swapped vs not at round 16.
        (["swap_round=null"], [OLD]),
        (["swap_round!=null"], []),
        (["swap_round!=16"], [OLD]),
        (["swap_round>3"], []),
        (["swap_round<=16"], []),
        (["judge_model=none"], []),  # 'none' is an ordinary string, not null
        (["judge_model=unset"], []),
        (["judge_model="], []),  # the empty string, not a null test
        (["judge_model=null", "scenario_name=veyru"], []),  # scenario_name is no knob
        (["judge_model=null"], [A, B, FORK, CUT]),
        (["judge_model!=null"], [OLD]),
        (["no_scenario_declares_this=1"], []),  # not an error, selects nothing
    ],
)
def test_knob_conditions_select_exactly(cohort: Cohort, knob: list[str], expected: list) -> None:
    assert _ids(cohort, scenario=["veyru"], knob=knob) == expected


def test_an_ordering_operator_on_a_string_is_refused(cohort: Cohort) -> None:
    message = _refusal(cohort, "noise_replacement_mode>mask")
    assert message == (
        "knob 'noise_replacement_mode>mask': knob 'noise_replacement_mode', operator '>', "
        "value 'mask': the run records a string; only = and != apply"
    )


def test_a_value_not_readable_as_the_recorded_number_is_refused(cohort: Cohort) -> None:
    assert _refusal(cohort, "round_count>=lots") == (
        "knob 'round_count>=lots': knob 'round_count', operator '>=', value 'lots': "
        "the run records a number"
    )


def test_a_value_not_readable_as_the_recorded_boolean_is_refused(cohort: Cohort) -> None:
    assert _refusal(cohort, "postmortem_enabled=maybe") == (
        "knob 'postmortem_enabled=maybe': knob 'postmortem_enabled', operator '=', "
        "value 'maybe': the run records a boolean; write true or false"
    )
    assert "has no order" in _refusal(cohort, "postmortem_enabled>=true")


def test_a_list_or_mapping_knob_is_not_filterable(cohort: Cohort) -> None:
    assert "not filterable" in _refusal(cohort, "calm_rounds=[]")
    assert "not filterable" in _refusal(cohort, "agent_model_settings=1")


NO_OPERATOR = "no operator; write <knob><op><value> with op one of != >= <= = > <"


@pytest.mark.parametrize(
    ("text", "why"),
    [("round_count", NO_OPERATOR), ("  ", NO_OPERATOR), ("=5", "no knob name before ="),
     ("round_count~5", NO_OPERATOR)],
)  # fmt: skip
def test_a_condition_without_operator_or_knob_is_refused(text: str, why: str) -> None:
    with pytest.raises(SelectionError) as caught:
        KnobCondition.parse(text)
    assert caught.value.field == "knob"
    assert caught.value.message == f"knob {text!r}: {why}"
    assert said_of_selection(caught.value) == f"--knob {text!r}: {why}"


def test_operators_parse_longest_first() -> None:
    assert KnobCondition.parse("a>=1") == KnobCondition("a", ">=", "1")
    assert KnobCondition.parse("a!=b=c") == KnobCondition("a", "!=", "b=c")
    assert KnobCondition.parse("x<=") == KnobCondition("x", "<=", "")


def test_explicit_ids_report_those_that_no_longer_resolve(cohort: Cohort) -> None:
    found = select_runs(
        str(cohort.runs_dir),
        RunIdSelection(run_ids=[B, "veyru/1", A, B]),
    )
    assert [r.run_id for r in found.records] == [B, A]
    assert found.missing_run_ids == ["veyru/1"]
    with pytest.raises(SelectionError) as caught:  # not <scenario>/<run>: refused, not missing
        selection_of(run_ids=[B, "../etc"])
    assert said_of_selection(caught.value) == (
        "--run-id '../etc': not a run id (<scenario>/<run_dir_name>, relative to the runs "
        "directory)"
    )


def test_a_selection_over_the_limit_names_it_and_the_flag(cohort: Cohort) -> None:
    with pytest.raises(SelectionError) as caught:
        select_runs(str(cohort.runs_dir), {"kind": "filters", "scenario": ["veyru"]}, max_runs=4)
    assert caught.value.field == "max_runs"
    assert caught.value.message == (
        "the selection holds 5 runs, over the 4-run limit; narrow the selection or raise max_runs"
    )
    assert said_of_selection(caught.value) == (
        "the selection holds 5 runs, over the 4-run limit; "
        "narrow the selection or raise it with --max-runs"
    )
    found = select_runs(str(cohort.runs_dir), {"kind": "filters", "labels": ["baseline"]}, 2)
    assert len(found.records) == 2


def test_a_knob_nobody_declares_selects_nothing_without_error(cohort: Cohort) -> None:
    assert _ids(cohort, knob=["no_such_knob=1"]) == []
    assert _ids(cohort, knob=["no_such_knob!=1"]) == []


def test_a_runs_dir_that_is_not_a_folder_is_refused(cohort: Cohort, tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    for path, what in ((tmp_path / "nope", "does not exist"),
                       (tmp_path / "file.txt", "is a file, not a folder")):  # fmt: skip
        with pytest.raises(RunsDirError) as caught:
            select_runs(str(path), {"kind": "filters"})
        assert str(caught.value) == f"{str(path)!r} {what}"


def test_an_empty_or_blank_run_id_list_is_invalid() -> None:
    for run_ids in ([], [""], ["  "]):
        with pytest.raises(ValidationError):
            RunIdSelection(run_ids=run_ids)


def test_a_folder_not_named_as_a_run_is_never_selected(
    cohort: Cohort, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from glossogen.cli import main

    runs = tmp_path / "runs"
    shutil.copytree(cohort.runs_dir / C, runs / C)
    for stray in ("notes/drafts", "prisoners_dilemma/scratch", "cap/1795000001x"):
        (runs / stray).mkdir(parents=True)
    found = select_runs(str(runs), FilterSelection(status="completed"))
    assert ([r.run_id for r in found.records], found.scanned, found.unreadable) == ([C], 1, {})
    with pytest.raises(SelectionError) as caught:
        select_runs(str(runs), FilterSelection(scenario=["nope"]))
    assert caught.value.message == (
        f"scenario 'nope' has no run under {runs} (scenarios there: prisoners_dilemma)"
    )
    with pytest.raises(SystemExit) as exited:
        main(
            ["export", "--runs-dir", str(runs), "--out", str(tmp_path / "out"), "--scenario", "cap"]
        )
    assert (exited.value.code, capsys.readouterr().err) == (
        65,
        f"glossogen: error: --scenario 'cap' has no run under {runs} "
        "(scenarios there: prisoners_dilemma)\n",
    )
    assert not (tmp_path / "out").exists()


def _seen(found: SelectedRuns) -> tuple[list[tuple[str, str, str]], dict, list, list, int]:
    return ([(r.run_id, r.run_url, r.scenario) for r in found.records], found.unreadable,
            found.missing_run_ids, found.unstarted, found.scanned)  # fmt: skip


def test_a_selection_reading_no_log_fact_selects_the_same_runs(
    cohort: Cohort, tmp_path: Path
) -> None:
    """``log_facts=False`` (a cohort to evaluate) reads a log's head alone, selecting alike.

    The same runs, folders, unreadable runs (a log that is no run's, one whose
    ``simulation_started`` does not validate, a broken ``labels.json``), unstarted ones and
    a second name of one folder; a filter on the log's facts still reads them.
    """
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(cohort.runs_dir, runs, symlinks=True)
    started = (runs / A / "veyru.jsonl").read_text().splitlines(keepends=True)
    damaged = {
        "veyru/1795000101": "".join(started[1:]),  # no simulation_started
        "veyru/1795000102": started[0].replace('"round_number":0', '"round_number":"x"')
        + "".join(started[1:]),
        "veyru/1795000103": "".join(started),
        "veyru/1795000104": None,  # a claim: config.json, no log yet
    }
    for run_id, log in damaged.items():
        (runs / run_id).mkdir(parents=True)
        (runs / run_id / "config.json").write_text("{}")
        if log is not None:
            (runs / run_id / "veyru.jsonl").write_text(log)
    (runs / "veyru/1795000103/labels.json").write_text("{broken")
    (runs / "veyru/1795000105").symlink_to(runs / A)
    for selection in (
        FilterSelection(),
        FilterSelection(labels=["baseline"]),
        FilterSelection(status="completed"),
        FilterSelection(contains_agent_id="player_a"),
        RunIdSelection(run_ids=[*damaged, "veyru/1795000105", A, "veyru/1"]),
    ):
        every = select_runs(str(runs), selection)
        heads = select_runs(str(runs), selection, log_facts=False)
        assert _seen(heads) == _seen(every)
        log_filter = getattr(selection, "status", None) or getattr(
            selection, "contains_agent_id", None
        )
        assert {r.facts.head_only for r in heads.records} <= {not log_filter}
    found = select_runs(str(runs), FilterSelection(), log_facts=False)
    assert sorted(found.unreadable) == ["veyru/1795000101", "veyru/1795000102", "veyru/1795000103"]
    assert found.unreadable["veyru/1795000101"] == (  # within the runs dir (was its abs path)
        "veyru/1795000101/veyru.jsonl is not a run log (no simulation_started event)"
    )
    assert found.unstarted == ["veyru/1795000104"]
    assert [r.run_id for r in found.records] == sorted(ALL, key=lambda r: (r.split("/")[0], r))


def test_the_check_judges_a_knob_value_by_the_claims_config_and_hands_on_its_listing(
    cohort: Cohort, tmp_path: Path
) -> None:
    """``check_selection`` left a knob value the recorded type cannot read to
    ``select_runs`` (inside a cohort's flow run); it judges it now from each run's
    ``config.json`` with no log read (the logs are deleted here), in ``select_runs``' words,
    and returns the listing ``select_runs`` takes instead of listing the folder again."""
    import shutil

    from glossogen.export import check_selection
    from glossogen.storage import RunStore

    runs = tmp_path / "runs"
    shutil.copytree(cohort.runs_dir, runs)
    for log in runs.glob("*/*/*.jsonl"):
        log.unlink()
    with pytest.raises(SelectionError) as caught:
        check_selection(str(runs), FilterSelection(knob=["round_count>=lots"]))
    assert caught.value.message == _refusal(cohort, "round_count>=lots")
    assert check_selection(str(cohort.runs_dir), RunIdSelection(run_ids=[A])) is None
    with pytest.raises(SelectionError) as caught:  # its log deleted: as export refuses it
        check_selection(str(runs), RunIdSelection(run_ids=[A]))
    assert caught.value.message == f"run ids that no longer resolve: {A}"
    listed = check_selection(str(cohort.runs_dir), FilterSelection(scenario=["veyru"]))
    assert listed == RunStore(str(cohort.runs_dir)).list_runs()
    chosen = select_runs(str(cohort.runs_dir), FilterSelection(scenario=["veyru"]), listed=[A])
    assert [r.run_id for r in chosen.records] == [A]  # the listing handed on, not the folder's
