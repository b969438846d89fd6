"""The staged-scenario parts of the contract: stage progress, hidden codes, majority rulings."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import pytest
from pydantic import BaseModel

from glossogen.cli import main
from glossogen.scenario import (
    Code,
    CodeLeakError,
    JudgeDecision,
    StageProgress,
    codes_in,
    hidden_codes,
    judge_by_majority,
)


class _Part(BaseModel):
    name: str
    serial: Annotated[str, Code()]


class _Case(BaseModel):
    parts: list[_Part]
    key: Annotated[int, Code("variant {}")]
    table: Annotated[dict[str, int], Code()]
    note: str


def test_hidden_codes_reads_marked_fields_nested_lists_and_dict_keys():
    case = _Case(
        parts=[_Part(name="pump", serial="PX-1"), _Part(name="valve", serial="VX-2")],
        key=2,
        table={"T-9": 1},
        note="PX-1 is fine here: not a code field",
    )
    assert hidden_codes(case) == {"PX-1", "VX-2", "variant 2", "T-9"}


def test_codes_in_matches_whole_words_only():
    assert codes_in("apply variant 2 to PX-1.", {"PX-1", "variant 2", "VX-2"}) == [
        "PX-1",
        "variant 2",
    ]
    assert codes_in("variant 21 and XPX-1", {"PX-1", "variant 2"}) == []


def test_stage_progress_counts_attempts_and_opens_the_next_stage():
    p = StageProgress(total=2)
    assert (p.stage, p.attempt(), p.attempt()) == (1, 1, 2)
    assert p.accept() is True and (p.stage, p.attempts, p.finished) == (2, 0, False)
    assert p.accept() is False and p.finished and p.stage == 2


def _refused(**kw: object) -> None:
    # refused before any call: the round context is never reached (the real judge path is
    # played over HTTP in test_staged_scenario_runs.py)
    asyncio.run(
        judge_by_majority(None, "q", "fit the pump", lambda: JudgeDecision(True, "x"), **kw)  # type: ignore[arg-type]
    )


def test_an_even_vote_count_or_a_leaked_code_is_refused_before_any_call():
    with pytest.raises(ValueError, match="votes must be a positive odd number, got 2"):
        _refused(votes=2)
    with pytest.raises(CodeLeakError, match="judge instructions contain hidden codes: pump"):
        _refused(votes=1, codes={"pump", "PX-1"})


def test_the_scenarios_are_listed_with_their_presets_and_have_a_schema(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["scenarios"])
    assert exited.value.code == 0
    rows = dict(line.split("\t")[:2] for line in capsys.readouterr().out.splitlines())
    presets = "presets: knobs_default, knobs_no_postmortem, knobs_tight_budget"
    assert rows["orbital_anomaly"] == rows["drive_module_repair"] == presets
    for name, knob, default in (
        ("orbital_anomaly", "round_budget_chars", 600),
        ("drive_module_repair", "judge_votes", 3),
    ):
        with pytest.raises(SystemExit) as exited:
            main(["schema", name])
        assert exited.value.code == 0
        schema = json.loads(capsys.readouterr().out)
        assert schema["properties"][knob]["default"] == default
        assert schema["properties"][knob]["description"]
        assert schema["additionalProperties"] is False
