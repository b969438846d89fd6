"""Fault injection (issue 14's proof): 20% of model calls fail, mixed kinds, over real HTTP.

Plays a 10-round prisoners' dilemma (both players on the Anthropic-format stub) and a 5-round
veyru (scripted agents, its judge on the OpenAI-format stub) through the simulate flow's own
round loop (``flows.simulate.play_rounds``, needs ``PREFECT_API_URL``). A seeded draw makes
one call in five a fault: HTTP 500, 429 (``Retry-After`` 0.2 s), a refusal, invalid tool
arguments, or a held connection past the request timeout (1 s). Then it checks, from the log:

- the run completed or ended ``error``, and its ``model_errors`` match the faults logged;
- every logged cost equals its logged usage times the catalogue's rate (exactly, so to the
  cent), the tokens logged equal the tokens the stub answered with, and the run's total is
  their sum;
- every request that got no answer is counted: faults the stub served, and requests abandoned
  at a phase end (``model_request_abandoned``).

Usage: ``PREFECT_API_URL=... .venv/bin/python bench/fault_injection.py [--seed N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from glossogen.eventlog import (  # noqa: E402
    AgentRunCycleFailed,
    Event,
    JudgeCalled,
    LlmResponseReceived,
    ModelRequestAbandoned,
    RoundResultRecorded,
    SimulationEnded,
    read_events,
)
from glossogen.launch import RunRequest  # noqa: E402
from glossogen.pricing import logged_usd, price_call  # noqa: E402
from tests.fixtures.model_stubs import RecordedRequest, StubFault, StubModelServer  # noqa: E402
from tests.fixtures.model_wires import StubReply  # noqa: E402
from tests.providers.test_wire_formats import pd_player  # noqa: E402
from tests.providers.ungated import play_ungated  # noqa: E402

FAULT_SHARE = 0.2
KINDS = ("500", "429", "refusal", "bad_arguments", "timeout")
TOKENS: dict[str, Any] = {"input_tokens": 1000, "output_tokens": 50}


class Injector:
    """The stub's responder: the honest answer, or (one call in five) a fault; keeps count."""

    def __init__(self, seed: int, answer: Any, bad: Any) -> None:
        self.rng = random.Random(seed)
        self.answer, self.bad = answer, bad
        self.lock = threading.Lock()
        self.served: Counter[str] = Counter()
        self.answered_tokens = [0, 0]  # input, output of every reply the client received

    def __call__(self, req: RecordedRequest) -> StubReply | StubFault:
        with self.lock:
            kind = self.rng.choice(KINDS) if self.rng.random() < FAULT_SHARE else "ok"
            self.served[kind] += 1
            if kind == "500":
                return StubFault(status=500)
            if kind == "429":
                return StubFault(status=429, retry_after=0.2)
            if kind == "timeout":
                return StubFault(kind="timeout", seconds=3.0)
            if kind == "refusal":
                self._count(10, 5)  # a refusal is an answer: the stub's default usage
                return StubFault(kind="refusal", message="I will not do that.")
            reply = self.bad(req) if kind == "bad_arguments" else self.answer(req)
            self._count(reply.input_tokens, reply.output_tokens)
            return reply

    def _count(self, inp: int, out: int) -> None:
        self.answered_tokens[0] += inp
        self.answered_tokens[1] += out


def pd_answer(req: RecordedRequest) -> StubReply:
    reply = pd_player(req)
    reply.cache_read_tokens = 0
    reply.input_tokens, reply.output_tokens = TOKENS["input_tokens"], TOKENS["output_tokens"]
    return reply


def pd_bad(req: RecordedRequest) -> StubReply:
    return StubReply(tool_calls=[("lock_in", {"move": "banana"})], **TOKENS)


def judge_answer(req: RecordedRequest) -> StubReply:
    prompt = json.dumps(req.messages)
    ruling = {"success": "rest" not in prompt.lower(), "reason": "as the text shows"}
    return StubReply(tool_calls=[(req.tool_names[0], ruling)], **TOKENS)


def judge_bad(req: RecordedRequest) -> StubReply:
    return StubReply(tool_calls=[(req.tool_names[0], {"success": "perhaps"})], **TOKENS)


def audit(name: str, events: list[Event], injector: Injector, provider: str) -> dict[str, Any]:
    """Check spend and counts from the log against what the stub served."""
    ended = events[-1]
    assert isinstance(ended, SimulationEnded)
    wrong, tokens, total = 0, [0, 0], 0.0
    for e in events:
        if isinstance(e, LlmResponseReceived | ModelRequestAbandoned | JudgeCalled):
            model, on = e.model, e.provider
        elif isinstance(e, AgentRunCycleFailed):  # the judge's billed failed attempts
            model, on = JUDGE_MODEL, provider
        else:
            continue
        if isinstance(e, ModelRequestAbandoned) and e.cost_usd is None:
            continue  # unanswered: counted below, its cost unknown
        usage = (e.input_tokens, e.output_tokens)
        expected = (
            price_call(on, model, input_tokens=usage[0], output_tokens=usage[1])
            if any(usage)
            else 0.0
        )
        if e.cost_usd != expected:
            wrong += 1
        if on == provider:  # the stub's calls (scripted seats estimate their own tokens)
            tokens[0] += usage[0]
            tokens[1] += usage[1]
        total += e.cost_usd or 0.0
    failures = Counter(e.error_kind for e in events if isinstance(e, AgentRunCycleFailed))
    abandoned = [e for e in events if isinstance(e, ModelRequestAbandoned)]
    verdicts = [e for e in events if isinstance(e, RoundResultRecorded)]
    return {
        "run": name,
        "status": ended.status,
        "rounds": f"{ended.rounds_won}/{ended.rounds_played} won, "
        f"{sum(v.void for v in verdicts)} void",
        "stub_served": dict(injector.served),
        "model_errors_logged": dict(failures),
        "model_errors_in_simulation_ended": ended.model_errors,
        "abandoned_at_phase_end": f"{len(abandoned)} "
        f"({sum(e.answered for e in abandoned)} answered and priced, "
        f"{sum(e.cost_usd is None for e in abandoned)} unknown)",
        "abandoned_that_failed": [e.error for e in abandoned if not e.answered],
        "costs_not_equal_to_usage_times_rate": wrong,
        "tokens_stub_answered": injector.answered_tokens,
        "tokens_logged": tokens,
        "total_logged_usd": ended.total_cost_usd,
        "sum_of_call_costs_usd": logged_usd(total),
    }


JUDGE_MODEL = "gpt-4o-mini"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    stub = StubModelServer().start()
    os.environ.update({
        "ANTHROPIC_BASE_URL": stub.anthropic_base_url, "ANTHROPIC_API_KEY": "sk-ant-bench",
        "OPENAI_BASE_URL": stub.openai_base_url, "OPENAI_API_KEY": "sk-bench",
    })  # fmt: skip
    reports = []
    runs = tempfile.mkdtemp(prefix="fault-injection-")
    print(f"runs under {runs}", flush=True)
    pd = Injector(args.seed, pd_answer, pd_bad)
    stub.responder = pd
    result = play_ungated(
        RunRequest(
            scenario="prisoners_dilemma",
            model="claude-sonnet-4-6",
            provider="anthropic",
            runs_dir=runs,
            config="knobs_default",
            overrides=[
                "round_count=10",
                "idle_floor_seconds=0.05",
                "max_round_duration_seconds=20",
                "postmortem_duration_seconds=5",
                "agent_model_settings.timeout=1",
            ],
        )  # fmt: skip
    )
    events = read_events(f"{result.run_url}/prisoners_dilemma.jsonl").events
    reports.append(audit("prisoners_dilemma x10", events, pd, "anthropic"))
    judge = Injector(args.seed + 1, judge_answer, judge_bad)
    stub.responder = judge
    result = play_ungated(
        RunRequest(
            scenario="veyru",
            model="scripted",
            provider="scripted",
            runs_dir=runs,
            config="knobs_default",
            overrides=[
                "round_count=5",
                "judge_provider=openai",
                f"judge_model={JUDGE_MODEL}",
                "judge_model_settings.timeout=1",
            ],
        )  # fmt: skip
    )
    events = read_events(f"{result.run_url}/veyru.jsonl").events
    reports.append(audit("veyru x5 (judge faulted)", events, judge, "openai"))
    stub.stop()
    for report in reports:
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
