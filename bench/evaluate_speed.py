"""Speed of scoring the deterministic metrics of a 20-round, 3-agent run.

Synthesises the run through our own event log writer (veyru, 3 agents, 20 rounds, each agent
sending ``--messages`` messages per round on ``link`` plus the model responses and tool events a
played run logs around each message), then times, in this process and without Prefect:

1. baseline: reading the log (``read_events``), the floor any evaluation pays;
2. evaluation: ``plan_evaluation`` (reads and hashes the log, builds the scenario) plus scoring
   every deterministic metric plus writing the report.

Prints messages per second of (2) and the ratio (2) / (1), medians over ``--repeats``.
Usage: ``VIRTUAL_ENV= uv run --no-sync python bench/evaluate_speed.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from glossogen.evaluation import (  # noqa: E402
    get_metric,
    metric_names,
    plan_evaluation,
    score_all,
    write_outcomes,
)
from glossogen.eventlog import (  # noqa: E402
    AgentRegistered,
    EventLogWriter,
    LlmResponseReceived,
    MessageSent,
    RoundCompleted,
    RoundResultRecorded,
    RoundStarted,
    SimulationEnded,
    SimulationStarted,
    ToolCallInvoked,
    ToolResultReceived,
    read_events,
)
from glossogen.scenario import load_scenario  # noqa: E402

AGENTS = ("field_observer", "stabilization_engineer", "second_observer")
WORDS = "brace jade cobalt amber frost edges drone hot shell red throb thaw tap L4 4s".split()


def synthesise(run_dir: Path, rounds: int, per_agent: int) -> int:
    """Write the run's log; return how many messages it holds."""
    run_dir.mkdir(parents=True)
    knobs = load_scenario("veyru").knobs_model().model_dump(mode="json")
    n = 0
    with EventLogWriter(str(run_dir / "veyru.jsonl")) as w:
        w.append(SimulationStarted(run_id=f"veyru/{run_dir.name}", scenario_name="veyru",
                                   scenario_config=knobs, model="scripted", provider="scripted"))  # fmt: skip
        for a in AGENTS:
            w.append(AgentRegistered(agent_id=a, role=a, display_name=a, team_id="team",
                                     model="scripted", provider="scripted"))  # fmt: skip
        for r in range(1, rounds + 1):
            w.append(RoundStarted(round_number=r))
            for i in range(per_agent):
                for a in AGENTS:
                    n += 1
                    text = " ".join(WORDS[(n + k) % len(WORDS)] for k in range(1 + n % 5))
                    call = f"{a}-{n}"
                    w.append(LlmResponseReceived(round_number=r, agent_id=a, model="scripted",
                                                 provider="scripted", cycle=i, cost_usd=0.0,
                                                 tool_calls=[{"tool_name": "send_message"}]))  # fmt: skip
                    w.append(ToolCallInvoked(round_number=r, agent_id=a, tool_name="send_message",
                                             tool_call_id=call, args={"channel_id": "link", "text": text}))  # fmt: skip
                    w.append(MessageSent(round_number=r, channel_id="link", sender_id=a, text=text,
                                         delivered_text=text, chars=len(text), budget_chars=150))  # fmt: skip
                    w.append(ToolResultReceived(round_number=r, agent_id=a, tool_name="send_message",
                                                tool_call_id=call, result={"status": "sent"}))  # fmt: skip
            w.append(
                RoundResultRecorded(round_number=r, team_id="team", success=r % 3 != 0, reason="x")
            )
            w.append(RoundCompleted(round_number=r, phase="postmortem"))
        w.append(SimulationEnded(status="completed", rounds_played=rounds, rounds_won=None,
                                 total_messages=n, total_chars=None, total_cost_usd=0.0,
                                 duration_seconds=None))  # fmt: skip
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--messages", type=int, default=5, help="messages per agent per round")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    deterministic = [n for n in metric_names() if get_metric(n).kind == "deterministic"]
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "veyru" / "1700000000"
        messages = synthesise(run_dir, args.rounds, args.messages)
        log = str(run_dir / "veyru.jsonl")
        events = len(read_events(log).events)
        baseline, evaluation = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            read_events(log)
            baseline.append(time.perf_counter() - start)
            start = time.perf_counter()
            plan = plan_evaluation(str(run_dir), deterministic)
            outcomes = asyncio.run(score_all(plan))
            write_outcomes(plan, outcomes)
            evaluation.append(time.perf_counter() - start)
        failed = [o.name for o in outcomes if o.result is not None and o.result.status != "ok"]
    read_s, eval_s = statistics.median(baseline), statistics.median(evaluation)
    print(f"run: {args.rounds} rounds, {len(AGENTS)} agents, {messages} messages, {events} events")
    print(f"metrics scored: {len(deterministic)} deterministic ({', '.join(deterministic)})")
    print(
        f"baseline (read the log):        {read_s * 1000:8.1f} ms  {messages / read_s:10.0f} messages/s"
    )
    print(
        f"evaluate (load, score, report): {eval_s * 1000:8.1f} ms  {messages / eval_s:10.0f} messages/s"
    )
    print(f"ratio evaluate / read: {eval_s / read_s:.2f}x (median of {args.repeats})")
    if failed:
        print(f"FAILED metrics: {', '.join(failed)}")


if __name__ == "__main__":
    main()
