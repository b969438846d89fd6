"""orbital_anomaly and drive_module_repair over real HTTP (their CLI runs: test_scenario_runs)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from glossogen.eventlog import JudgeCalled, read_events
from glossogen.launch import RunRequest
from scenarios.drive_module_repair.catalogue import draw_case
from scenarios.drive_module_repair.events import DriveModuleRepairReplacementJudged
from scenarios.orbital_anomaly.events import OrbitalAnomalyActuationJudged
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply
from tests.providers.ungated import play_ungated
from tests.scenarios._runs import verdicts

# -- real HTTP: every seat a stub OpenAI model with canned tool calls ----------------------


def _actor(tool: str, action: str) -> object:
    """The seat holding ``tool`` acts once, then says it is done; every other seat stands by."""

    def respond(req: RecordedRequest) -> StubReply:
        if tool in req.tool_names:
            if req.tool_results:
                return StubReply(text="done")
            return StubReply(tool_calls=[(tool, {"action": action})])
        return StubReply(text="standing by")

    return respond


def test_orbital_anomaly_over_real_http(
    prefect_api: str, openai_stub: StubModelServer, tmp_path: Path
) -> None:
    case = {
        "stages": [{"fault_id": "CM-02", "unit": "transponder 2", "configuration": "nominal string",
                    "hold_seconds": 12, "setting": 7}],
        "variant_index": 2,
    }  # fmt: skip
    action = (
        "change over to the other transponder and offset the carrier of transponder 2 "
        "(nominal string) by 7 kilohertz, hold 12 seconds"
    )
    openai_stub.responder = _actor("actuate_panel", action)  # type: ignore[assignment]
    result = play_ungated(
        RunRequest(
            scenario="orbital_anomaly", model="gpt-5.4", provider="openai",
            runs_dir=str(tmp_path), config="knobs_default",
            overrides=["round_count=1", "postmortem_enabled=false", "judge_provider=scripted",
                       "scheduled_events=" + json.dumps(
                           [{"kind": "inject_case", "round": 1, "payload": case}])],
        )
    )  # fmt: skip
    assert result.status == "completed"
    events = read_events(f"{result.run_url}/orbital_anomaly.jsonl").events
    (judged,) = [e for e in events if isinstance(e, OrbitalAnomalyActuationJudged)]
    assert (judged.action, judged.match) == (action, True)
    assert judged.reason == "procedure on the transponder 2 at 7 kilohertz, held 12 s"
    assert verdicts(Path(result.run_url) / "orbital_anomaly.jsonl") == [
        (1, "crew", True, "1 of 1 stages cleared")
    ]
    seats = {r.body["model"] for r in openai_stub.requests if isinstance(r.body, dict)}
    assert seats == {"gpt-5.4"}
    offered = [r for r in openai_stub.requests if "actuate_panel" in r.tool_names]
    # the astronaut's acting turn, and its "done" turn if it comes before the round settles
    assert 1 <= len(offered) <= 2


def test_drive_module_repair_over_real_http_with_a_judge_split_two_to_one(
    prefect_api: str, openai_stub: StubModelServer, tmp_path: Path
) -> None:
    import random

    drawn = draw_case(random.Random("http"), module_count_weights=[1], fault_count_weights=[1])
    module = drawn.modules[0]
    payload = {"modules": [module.model_dump(mode="json")]}
    (component,) = module.faulty
    action = f"Drive module {module.module}, {component}: {module.replacement(component).compact()}"
    seat = _actor("service_component", action)
    votes = itertools.cycle([True, False, True])

    def respond(req: RecordedRequest) -> StubReply:
        if "final_result" in req.tool_names:  # the judge's structured ruling
            yes = next(votes)
            reason = "every step as the sheet says" if yes else "the torque reads wrong"
            return StubReply(tool_calls=[("final_result", {"success": yes, "reason": reason})])
        return seat(req)  # type: ignore[operator]

    openai_stub.responder = respond  # type: ignore[assignment]
    result = play_ungated(
        RunRequest(
            scenario="drive_module_repair", model="gpt-5.4", provider="openai",
            runs_dir=str(tmp_path), config="knobs_default",
            overrides=["round_count=1", "postmortem_enabled=false", "judge_provider=openai",
                       "judge_model=gpt-5.4",
                       "scheduled_events=" + json.dumps(
                           [{"kind": "inject_case", "round": 1, "payload": payload}])],
        )
    )  # fmt: skip
    assert result.status == "completed"
    log = Path(result.run_url) / "drive_module_repair.jsonl"
    events = read_events(str(log)).events
    calls = [e for e in events if isinstance(e, JudgeCalled)]
    assert sorted(c.success for c in calls) == [False, True, True]
    assert all(c.provider == "openai" and c.question == action for c in calls)
    (judged,) = [e for e in events if isinstance(e, DriveModuleRepairReplacementJudged)]
    assert sorted(v["success"] for v in judged.votes) == [False, True, True]
    assert (judged.match, judged.reason) == (True, "every step as the sheet says")
    assert verdicts(log) == [(1, "bay_crew", True, "1 of 1 faults fixed")]
