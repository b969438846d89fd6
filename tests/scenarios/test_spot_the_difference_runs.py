"""spot_the_difference over real HTTP: every seat and the judge a stub OpenAI model (its CLI
runs: test_scenario_runs)."""

from __future__ import annotations

from pathlib import Path

from glossogen.eventlog import JudgeCalled, read_events
from glossogen.launch import RunRequest
from scenarios.spot_the_difference.events import (
    SpotTheDifferenceSubmissionJudged,
)
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.providers.ungated import play_ungated
from tests.scenarios._runs import verdicts

NAME = "spot_the_difference"


# -- real HTTP: every seat and the judge a stub OpenAI model ----------------------------------


ANSWER = ["the large olive wheel in the centre was removed"]


def test_one_team_over_real_http_with_an_llm_judge(
    prefect_api: str, openai_stub: StubModelServer, tmp_path: Path
) -> None:
    def respond(req: RecordedRequest) -> StubReply:
        if "final_result" in req.tool_names:  # the judge's item ruling
            ruling = {"matched": [1], "false_positives": 0, "reason": "the one removal, stated"}
            return StubReply(tool_calls=[("final_result", ruling)])
        if req.tool_results:
            return StubReply(text="done")
        return StubReply(tool_calls=[("submit_differences", {"differences": ANSWER})])

    openai_stub.responder = respond  # type: ignore[assignment]
    result = play_ungated(
        RunRequest(
            scenario=NAME, model="gpt-5.4", provider="openai", runs_dir=str(tmp_path),
            config="knobs_single_team",
            overrides=["round_count=1", "postmortem_enabled=false", "easy_round_numbers=[1]",
                       "judge_provider=openai", "judge_model=gpt-5.4"],
        )
    )  # fmt: skip
    assert result.status == "completed"
    log = Path(result.run_url) / f"{NAME}.jsonl"
    events = read_events(str(log)).events
    calls = [e for e in events if isinstance(e, JudgeCalled)]
    assert [(c.provider, c.question, c.detail, c.success) for c in calls] == [
        ("openai", f"1. {ANSWER[0]}", {"matched": [1], "false_positives": 0}, True)
    ] * 2
    judged = [e for e in events if isinstance(e, SpotTheDifferenceSubmissionJudged)]
    assert sorted((j.agent_id, j.complete) for j in judged) == [
        ("viewer_left", True),
        ("viewer_right", True),
    ]
    assert verdicts(log) == [(1, "team", True, "the 1 difference found, 0 characters")]
    offered = [r for r in openai_stub.requests if "submit_differences" in r.tool_names]
    # each seat's submitting turn, and its "done" turn if it comes before the round settles
    assert 2 <= len(offered) <= 4
