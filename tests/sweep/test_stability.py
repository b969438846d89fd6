"""--stability-retry judge_replay: the logged judge calls asked again tell flaky from stable.

The judge is ``openai:gpt-4.1-mini`` answered by the stub model server over HTTP: it rules
"failed" the first time it sees a prompt and "succeeded" the second time, a judge that does not
reproduce its own rulings.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glossogen.cli import main
from tests.fixtures.model_stubs import RecordedRequest, StubModelServer, StubReply

VEYRU_SPEC = """\
scenario: veyru
model: scripted
provider: scripted
knobs:
  round_count: 1
  postmortem_enabled: false
  postmortem_after_swap: false
  judge_provider: openai
  judge_model: gpt-4.1-mini
trials: 1
"""


def _sweep(spec: Path | str, *options: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main(["sweep", str(spec), *options])
    return int(exited.value.code)


def test_a_judge_that_changes_its_ruling_makes_the_failure_flaky(
    prefect_api: str,
    openai_stub: StubModelServer,
    tmp_path: Path,
) -> None:
    seen: set[str] = set()

    def judge(req: RecordedRequest) -> StubReply:
        prompt = json.dumps(req.messages, sort_keys=True)
        again = prompt in seen
        seen.add(prompt)
        ruling = {"success": again, "reason": "second look" if again else "first look"}
        return StubReply(tool_calls=[("final_result", ruling)])

    openai_stub.responder = judge
    spec = tmp_path / "judged.yaml"
    spec.write_text(VEYRU_SPEC)
    assert _sweep(spec, "--stability-retry", "judge_replay") == 0
    summary = json.loads((tmp_path / "runs/sweeps/judged/run_summary.json").read_text())
    (cell,) = summary["cells"]
    (trial,) = cell["trials"]
    # The first attempt stays authoritative: the round is lost, the trial failed the metric.
    assert (trial["state"], trial["verdicts"], trial["passed"]["round_success"]) == (
        "done",
        [False],
        False,
    )
    sample = trial["stability_sample"]
    assert len(seen) == 1  # the run's one judge call (one round), a distinct prompt
    assert len(openai_stub.requests) == 2  # asked exactly once more
    assert (sample["mode"], sample["replayed"], sample["agreed"]) == ("judge_replay", 1, 0)
    assert sample["outcome"] == "not_reproduced"
    # One gpt-4.1-mini call at the stub's usage (10 in, 5 out) at $0.40/$1.60 per MTok
    # (the locked genai-prices): $0.000004 + $0.000008, for the run and again for the replay.
    assert (trial["scores"]["cost_usd"], sample["cost_usd"]) == (1.2e-05, 1.2e-05)
    assert (cell["stability"], cell["stability_detail"]) == (
        "flaky",
        "1 of 1 failure(s) did not reproduce",
    )
    assert summary["spend"]["spent_usd"] == 2.4e-05  # the run and its replay
    # The replay wrote nothing to the run's log.
    log = tmp_path / "runs" / trial["run_id"] / "veyru.jsonl"
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert sum(e["event_type"] == "judge_called" for e in logged) == 1


def test_deterministic_verdicts_cannot_be_replayed(prefect_api: str, tmp_path: Path) -> None:
    spec = tmp_path / "pd.yaml"
    spec.write_text(
        "scenario: prisoners_dilemma\nmodel: scripted\nprovider: scripted\n"
        "knobs: {round_count: 1, postmortem_enabled: false, scripted_misplay_share: 1.0}\n"
    )
    assert _sweep(str(spec), "--stability-retry", "judge_replay") == 0
    summary = json.loads((tmp_path / "runs/sweeps/pd/run_summary.json").read_text())
    (cell,) = summary["cells"]
    assert cell["stability"] == "unmeasured"
    assert cell["trials"][0]["stability_sample"]["detail"] == (
        "no judge call to replay (the verdicts are deterministic)"
    )


def test_a_judge_replay_the_cap_cannot_admit_is_not_run(
    prefect_api: str,
    openai_stub: StubModelServer,
    tmp_path: Path,
) -> None:
    openai_stub.responder = lambda req: StubReply(
        tool_calls=[("final_result", {"success": False, "reason": "no"})]
    )
    spec = tmp_path / "judged.yaml"
    spec.write_text(VEYRU_SPEC + "spend_cap_usd: 1.0\n")
    assert _sweep(spec) == 0  # the run, judged (lost), with room to spare
    summary = json.loads((tmp_path / "runs/sweeps/judged/run_summary.json").read_text())
    (trial,) = summary["cells"][0]["trials"]
    run_cost = trial["scores"]["cost_usd"]  # scripted agents: all of it is the judge's
    # one judge call at the stub's usage (10 in, 5 out) at $0.40/$1.60 per MTok (genai-prices)
    assert (run_cost, trial["verdicts"]) == (1.2e-05, [False])
    asked = len(openai_stub.requests)
    assert asked == 1

    # Half a run's judging left under the cap: the replay (the same calls again) does not fit.
    spec.write_text(VEYRU_SPEC + "spend_cap_usd: 1.8e-05\n")
    assert _sweep(spec, "--stability-retry", "judge_replay") == 20
    summary = json.loads((tmp_path / "runs/sweeps/judged/run_summary.json").read_text())
    (cell,) = summary["cells"]
    assert len(openai_stub.requests) == asked  # no judge call was asked again
    assert summary["aborted"]["reason"] == "spend_cap"
    assert summary["aborted"]["detail"] == (
        "spent $0.000012 + judge replay ~$0.000012 would pass the cap $0.000018; "
        "1 judge replay(s) not run"
    )
    assert (cell["stability"], cell["stability_detail"]) == (
        "unmeasured",
        "a failed trial's second sample could not be measured",
    )
    assert summary["spend"]["spent_usd"] == 1.2e-05
