"""Ledger audit (issue 28's proof): every request a model server answered is in the log, priced.

Plays ``--runs`` runs over real HTTP, each against a stub model server of its own on 127.0.0.1
(``tests/fixtures/model_stubs.py``; a port per run, so every request the stub answered belongs
to that run) and a local Prefect server, through the simulate flow (``flows.simulate``) or the
CLI. A seeded schedule mixes, run by run:

- the scenario: prisoners_dilemma (both seats on the stub) or veyru (scripted seats, its judge
  on the stub);
- the wire: OpenAI (``gpt-4.1-mini``) or Anthropic (``claude-sonnet-4-5``), both priced by
  genai-prices;
- faults, 5-20% of requests: HTTP 500, 429 (``Retry-After`` 0.2 s), a malformed 200, a refusal
  (an answer, billed) and a held answer past the client's 1 s timeout (the client leaves:
  nothing served);
- the clock: game time (``GLOSSOGEN_TEST_VIRTUAL_CLOCK=1``: a phase ends when a seat settles
  the round while the other's request is in flight) or the real one with 2 s rounds and 0.05-0.6
  s answers (a phase limit ends on requests in flight);
- a third of the runs are a ``python -m glossogen run`` process SIGKILLed when the stub gets
  its k-th request (the stub's loop is held while the process dies, so no answer is sent
  meanwhile; the process sends API keys of its own, so a request of it the stub reads only
  after the death is known to have reached nobody), then continued with ``glossogen run
  SCENARIO --resume RUN_DIR``;
- some prisoners_dilemma runs, on both wires, have ``--spend-cap-usd``: what
  ``CAPPED_ANSWERS`` (20) of their dear answers cost (``CAPPED_BASE`` input tokens), or just
  above the dry-run estimate when that is higher, so the cap is reached mid-run, after about
  a dozen answers (the seats' requests in flight reserve their worst cases).

Every answer the stub renders carries a usage of its own: ``output_tokens`` 40 and
``input_tokens`` ``BASE + k`` for the run's k-th request. So a logged usage names the requests it
prices (one, or several for a judge whose answers failed validation), and the audit reconciles
request for request: each answered request (wire, model, usage) against the log's priced events
(``llm_response_received``, ``model_request_abandoned`` answered, ``agent_run_cycle_failed``
with tokens, ``judge_called``). Per run it checks: no answered request missing from the log and
no logged usage the stub never served; ``simulation_ended.total_cost_usd`` equals the served
usage priced with genai-prices (``calc_price``) to 1e-9 USD; a capped run logged and was served
no more than its cap; ``glossogen verify``'s rules (``RunView.check_books``) hold. An answer the
killed process received but had not logged when it died is counted apart from the missing ones
(``answers sent as they died``): the run passes only if its log marks as many requests of
unknown cost (``model_request_abandoned`` unanswered, so the total is a lower bound). An answer the
stub rendered after the client's timeout (a held one, or on a loaded machine any answer slower
than the 1 s timeout) is counted apart too (``answered after the client's timeout``): the run
passes only if its log marks at least as many timeouts of unknown cost.

Prints one line per run and ``ledger audit: N runs, R requests served, L logged, M missing, C
capped runs over cap, V verify failures, K killed and resumed``; exits 1 when anything is missing,
unpriced, over its cap or unverified, or when a planned kill did not happen (a run that ended
before its kill: ``P planned kills did not happen``), so an audit's kills are a third of its
runs (a capped run is killed at its 4th-10th request, before its cap ends it). ``--runs 3`` is a quick mode (one killed and capped, one capped on the real clock, one
judged).

The issue's proof asks for at least 2,000 requests: the default 35 runs serve about 2,050-2,150
answered (billed) requests; ``--min-requests N`` makes an audit that served fewer than N answered
requests exit 1 (``ledger audit: ... short of N``).

Usage: ``VIRTUAL_ENV= uv run --no-sync python bench/ledger_audit.py [--runs 35] [--seed 28]
[--min-requests 2000]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

OUT_TOKENS = 40
"""Output tokens of every answer the stub renders."""
BASE = 10_000
"""Input tokens of an answer are ``BASE + k`` (k: the run's k-th request, from 1)."""
CAPPED_BASE = 40_000
"""``BASE`` of a capped run: answers dear enough that the cap is reached mid-run."""
FAULTS = ("500", "429", "garbage", "refusal", "timeout")
WIRES = (("openai", "gpt-4.1-mini"), ("anthropic", "claude-sonnet-4-5"))
PD_ROUNDS, VEYRU_ROUNDS = 18, 6
COST_TOLERANCE_USD = 1e-9
KEYS = {"OPENAI_API_KEY": "sk-ledger-audit", "ANTHROPIC_API_KEY": "sk-ant-ledger-audit"}
KILLED_KEYS = {name: f"{key}-killed" for name, key in KEYS.items()}
"""The process that is killed sends keys of its own: the stub tells its requests apart."""


@dataclass
class Plan:
    """One run of the schedule."""

    index: int
    scenario: str
    provider: str
    model: str
    killed: bool
    capped: bool
    real_clock: bool
    fault_share: float
    kill_at: int  # the stub's request number that triggers the SIGKILL

    @property
    def label(self) -> str:
        """``pd/openai`` and the run's features."""
        name = "pd" if self.scenario == "prisoners_dilemma" else self.scenario
        tags = [f"{name}/{self.provider}", "real-clock" if self.real_clock else "game-clock"]
        tags += ["kill"] * self.killed + ["cap"] * self.capped
        return " ".join(tags)


def schedule(runs: int, seed: int) -> list[Plan]:
    """The runs to play: deterministic for ``seed``."""
    plans = []
    for i in range(runs):
        rng = random.Random(seed * 100_003 + i)
        scenario = "veyru" if i % 5 == 2 else "prisoners_dilemma"
        provider, model = WIRES[i % 2]
        pd = scenario == "prisoners_dilemma"
        capped = pd and (i % 4 == 1 or i % 8 == 0)  # both wires
        plans.append(
            Plan(
                index=i + 1,
                scenario=scenario,
                provider=provider,
                model=model,
                killed=i % 3 == 0,
                capped=capped,
                real_clock=pd and i % 3 == 1,
                fault_share=rng.uniform(0.05, 0.2),
                # A capped run is refused after about 15 requests: its kill comes before that.
                kill_at=rng.randint(4, 10) if capped or not pd else rng.randint(12, 40),
            )
        )
    return plans


@dataclass
class Served:
    """One answer the stub rendered with a usage (a billed request)."""

    k: int
    model: str | None
    input_tokens: int
    output_tokens: int
    before_kill: bool
    matched: bool = False


@dataclass
class Audit:
    """What one run's reconciliation found."""

    plan: Plan
    served: list[Served] = field(default_factory=list)
    faults: int = 0
    logged: int = 0
    missing: list[Served] = field(default_factory=list)
    lost_at_kill: list[Served] = field(default_factory=list)
    phantom: list[str] = field(default_factory=list)  # logged usages the stub never served
    killed_at: int | None = None  # the stub's request number at which the process was killed
    to_the_dead: int = 0  # answers the stub rendered for the killed process after it died
    priced_usd: float = 0.0  # the costs the log's priced events carry
    cost_unknown: int = 0  # requests the log marks unanswered, their cost unknown
    late: list[Served] = field(default_factory=list)  # answered after a client's timeout
    timed_out_unknown: int = 0  # timed-out requests the log marks cost-unknown
    unknown_usage_usd: float = 0.0  # answered usage the log carries in a cost-unknown failure
    abandoned: tuple[int, int] = (0, 0)  # requests a phase end abandoned: all, answered
    refused_in_round: int | None = None  # where the spend cap refused a request
    served_usd: float = 0.0
    logged_usd: float | None = None
    cap_usd: float | None = None
    status: str = "?"
    over_cap: bool = False
    broken: list[str] = field(default_factory=list)
    error: str = ""
    run_dir: str = ""

    @property
    def cost_ok(self) -> bool:
        """The logged total equals the served usage priced (less what a kill lost)."""
        lost = sum(price(self.plan, s.input_tokens, s.output_tokens) for s in self.lost_at_kill)
        late = sum(price(self.plan, s.input_tokens, s.output_tokens) for s in self.late)
        if self.logged_usd is None:  # a lower bound: some request's cost is unknown
            known = self.priced_usd if self.cost_unknown or self.timed_out_unknown else None
            expected = self.served_usd - lost - late - self.unknown_usage_usd
            return known is not None and abs(known - expected) <= COST_TOLERANCE_USD
        return (
            not self.late and abs(self.logged_usd - (self.served_usd - lost)) <= COST_TOLERANCE_USD
        )

    @property
    def silent_loss(self) -> int:
        """Answers lost at the kill that the log does not mark as requests of unknown cost."""
        return max(0, len(self.lost_at_kill) - self.cost_unknown)

    @property
    def silent_late(self) -> int:
        """Answers sent after the client's timeout that the log does not mark cost-unknown."""
        return max(0, len(self.late) - self.timed_out_unknown)

    @property
    def ok(self) -> bool:
        """Nothing missing (or lost unmarked), phantom, mispriced, over the cap or unverified."""
        return not (
            self.missing
            or self.silent_loss
            or self.silent_late
            or self.phantom
            or self.over_cap
            or self.broken
            or self.error
        ) and (self.cost_ok)


def price(plan: Plan, input_tokens: int, output_tokens: int) -> float:
    """USD of one usage of the run's model, by genai-prices directly."""
    from genai_prices import Usage, calc_price

    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    return float(calc_price(usage, model_ref=plan.model, provider_id=plan.provider).total_price)


def make_stub(plan: Plan, base: int) -> Any:
    """A started stub model server for one run: it answers as the run's seats or judge would,
    faults as the schedule says, records every answer it rendered, and kills on request."""
    from tests.fixtures.model_stubs import RecordedRequest, StubFault, StubModelServer
    from tests.fixtures.model_wires import StubReply
    from tests.providers.test_wire_formats import pd_player

    class AuditedStub(StubModelServer):
        def __init__(self) -> None:
            super().__init__()
            self.rng = random.Random(plan.index * 7919 + 1)
            self.count = 0
            self.faults = 0
            self.answered: list[Served] = []  # ``served`` is the stub's own list
            self.victim: subprocess.Popen[str] | None = None
            self.killed = False
            self.to_the_dead = 0  # answers rendered for the killed process after it died
            self.killed_at: int | None = None  # the request that triggered the kill
            self.timed_out: set[int] = set()  # requests answered past the client's timeout
            self.responder = self.respond

        def respond(self, req: RecordedRequest) -> Any:
            self.count += 1
            k = self.count
            if self.victim is not None and not self.killed and k >= plan.kill_at:
                # The stub's loop waits here while the process dies: no answer leaves meanwhile.
                self.killed, self.killed_at = True, k
                os.killpg(self.victim.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):  # the main thread reaps it
                    self.victim.wait(timeout=60)
                self.faults += 1
                return StubFault(status=500, message="the client was killed")
            if plan.scenario == "prisoners_dilemma":
                reply = pd_player(req)
            else:
                ruling = {"success": "rest" not in json.dumps(req.messages).lower(),
                          "reason": "as the text shows"}  # fmt: skip
                reply = StubReply(tool_calls=[(req.tool_names[0], ruling)])
            reply.input_tokens, reply.output_tokens = base + k, OUT_TOKENS
            reply.cache_read_tokens = reply.cache_write_tokens = 0
            reply.latency = self.rng.uniform(0.05, 0.6) if plan.real_clock else None
            if self.rng.random() >= plan.fault_share:
                return reply
            kind = self.rng.choice(FAULTS)
            if kind == "refusal":  # an answer: billed like any other
                reply.tool_calls, reply.text, reply.refusal = [], None, "I will not do that."
                return reply
            self.faults += 1
            if kind == "timeout":  # answered after the client's 1 s timeout: it has left
                self.timed_out.add(k)
                reply.latency = 5.0
                return reply
            if kind == "429":
                return StubFault(status=429, retry_after=0.2)
            if kind == "garbage":
                return StubFault(kind="garbage")
            return StubFault(status=500)

        def _render(self, r: Any, req: RecordedRequest) -> Any:
            if self.killed and req.api_key in KILLED_KEYS.values():
                self.to_the_dead += 1  # sent before it died, read after: nobody received it
            elif r.input_tokens > base:  # one of ours (a held answer's fallback is not)
                k = r.input_tokens - base
                self.answered.append(
                    Served(k, req.model, r.input_tokens, r.output_tokens, not self.killed)
                )
            return super()._render(r, req)

    return AuditedStub().start()


def overrides(plan: Plan) -> list[str]:
    """The knob overrides of a run."""
    if plan.scenario == "veyru":
        return [f"round_count={VEYRU_ROUNDS}", f"judge_provider={plan.provider}",
                f"judge_model={plan.model}", "judge_model_settings.timeout=1"]  # fmt: skip
    knobs = [f"round_count={PD_ROUNDS}", "agent_model_settings.timeout=1"]
    if plan.real_clock:
        return knobs + ["max_round_duration_seconds=2", "postmortem_duration_seconds=1",
                        "idle_floor_seconds=0.3"]  # fmt: skip
    return knobs + ["idle_floor_seconds=0.05"]


CAPPED_ANSWERS = 20
"""A capped run's cap is what this many of its dear answers cost: with the worst cases the
seats' requests in flight reserve, it is reached after about a dozen answers, mid-run."""


def spend_cap(plan: Plan, runs_dir: str) -> float:
    """The cap of :data:`CAPPED_ANSWERS` answers, or just above the dry-run estimate when that
    is higher (a cap below it is refused at launch)."""
    from glossogen.launch import estimate_cost, plan_run

    config = plan_run(request(plan, runs_dir, None))
    per_round = estimate_cost(config).per_round_usd or 0.0
    answers = CAPPED_ANSWERS * price(plan, CAPPED_BASE + CAPPED_ANSWERS, OUT_TOKENS)
    return round(max(per_round * PD_ROUNDS * 1.02, answers) + 0.005, 2)


def request(plan: Plan, runs_dir: str, cap: float | None) -> Any:
    """The run's ``RunRequest``."""
    from glossogen.launch import RunRequest

    pd = plan.scenario == "prisoners_dilemma"
    return RunRequest(
        scenario=plan.scenario,
        model=plan.model if pd else "scripted",
        provider=plan.provider if pd else "scripted",
        runs_dir=runs_dir,
        config="knobs_default",
        overrides=overrides(plan),
        spend_cap_usd=cap,
    )


def cli_args(plan: Plan, runs_dir: str, cap: float | None) -> list[str]:
    """``glossogen run`` arguments of the run."""
    pd = plan.scenario == "prisoners_dilemma"
    args = ["run", plan.scenario, "--model", plan.model if pd else "scripted",
            "--provider", plan.provider if pd else "scripted", "--runs-dir", runs_dir,
            "--config", "knobs_default"]  # fmt: skip
    if cap is not None:
        args += ["--spend-cap-usd", str(cap)]
    return args + overrides(plan)


def play_killed(plan: Plan, stub: Any, runs_dir: str, cap: float | None, log: Path) -> str:
    """Play the run in a ``python -m glossogen run`` process the stub kills; resume it here.

    Returns the run folder.
    """
    from glossogen.cli import main

    with log.open("w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-m", "glossogen", *cli_args(plan, runs_dir, cap)],
            stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=ROOT,
            env={**os.environ, **KILLED_KEYS},
            start_new_session=True,
        )  # fmt: skip
        stub.victim = child
        run_dir = ""
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("new_run_dir="):
                run_dir = line.strip().removeprefix("new_run_dir=")
        child.wait()
    if not run_dir:
        raise RuntimeError(f"the run process claimed no folder (see {log})")
    if not stub.killed:
        return run_dir  # it ended before the k-th request: nothing to resume
    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["run", plan.scenario, "--resume", run_dir])
        except SystemExit as exc:
            code = exc.code
    log.with_suffix(".resume").write_text(f"exit {code}\n{out.getvalue()}{err.getvalue()}")
    return run_dir  # how it ended (an error when the faults put a seat out) is in its log


def play(plan: Plan, runs_dir: str, stub: Any, cap: float | None, work: Path) -> str:
    """Play one run to its end; return its folder."""
    from flows.simulate import simulate

    os.environ.update({
        "OPENAI_BASE_URL": stub.openai_base_url, "ANTHROPIC_BASE_URL": stub.anthropic_base_url,
        "GLOSSOGEN_TEST_VIRTUAL_CLOCK": "0" if plan.real_clock else "1",
    })  # fmt: skip
    if plan.killed:
        return play_killed(plan, stub, runs_dir, cap, work / f"run{plan.index:02d}.stderr")
    import asyncio

    return str(asyncio.run(simulate(request(plan, runs_dir, cap))).run_url)


def reconcile(audit: Audit, stub: Any, run_dir: str) -> None:
    """Match the stub's answers with the log's priced events, request for request."""
    from glossogen.eventlog import (
        AgentRunCycleFailed,
        JudgeCalled,
        LlmResponseReceived,
        ModelRequestAbandoned,
        ModelRequestRefused,
        RunView,
    )
    from glossogen.storage import RunFolder
    from glossogen.verify import verify_run

    plan, base = audit.plan, CAPPED_BASE if audit.plan.capped else BASE
    audit.served, audit.faults = list(stub.answered), stub.faults
    audit.to_the_dead, audit.killed_at = stub.to_the_dead, stub.killed_at
    by_k = {s.k: s for s in audit.served}
    audit.served_usd = sum(price(plan, s.input_tokens, s.output_tokens) for s in audit.served)
    folder = RunFolder.at(run_dir)
    view = RunView.load(folder.log_url)
    abandoned = [e for e in view.events if isinstance(e, ModelRequestAbandoned)]
    audit.abandoned = (len(abandoned), sum(e.answered for e in abandoned))
    audit.cost_unknown = sum(not e.answered and e.cost_usd is None for e in abandoned)
    audit.timed_out_unknown = sum(
        isinstance(e, AgentRunCycleFailed) and e.error_kind == "timeout" and e.cost_usd is None
        for e in view.events
    )
    refused = [e for e in view.events if isinstance(e, ModelRequestRefused)]
    audit.refused_in_round = refused[0].round_number if refused else None
    for e in view.events:
        if isinstance(e, LlmResponseReceived | JudgeCalled):
            usage, model = (e.input_tokens, e.output_tokens), e.model
        elif isinstance(e, ModelRequestAbandoned) and e.answered:
            usage, model = (e.input_tokens, e.output_tokens), e.model
        elif isinstance(e, AgentRunCycleFailed) and (e.input_tokens or e.output_tokens):
            usage, model = (e.input_tokens, e.output_tokens), plan.model
        else:
            continue
        if model == "scripted":
            continue
        n, rest = divmod(usage[1], OUT_TOKENS)
        ks = _requests_of(usage[0] - n * base, n, by_k) if n and not rest else None
        if ks is None or model != plan.model:
            audit.phantom.append(f"{e.event_type} {usage} {model}")
            continue
        for k in ks:
            by_k[k].matched = True
        audit.priced_usd += e.cost_usd or 0.0
        if e.cost_usd is None and isinstance(e, AgentRunCycleFailed):  # a timeout's attempt
            audit.unknown_usage_usd += sum(
                price(plan, by_k[k].input_tokens, by_k[k].output_tokens) for k in ks
            )
        audit.logged += len(ks)
    unmatched = [s for s in audit.served if not s.matched]
    audit.late = [s for s in unmatched if s.k in stub.timed_out]  # answered after the client left
    # A request the stub did not hold can time out too: on a loaded machine an answer may take
    # longer than the client's 1 s timeout, and the stub still renders it. Each such answer is
    # set against a timeout the log marks cost-unknown, one for one, those the held requests
    # leave over; an answer no such mark covers is lost (at a kill) or missing.
    spare = audit.timed_out_unknown - len(audit.late)
    for s in unmatched:
        if s.k in stub.timed_out:
            continue
        if spare > 0:
            spare -= 1
            audit.late.append(s)
        elif plan.killed and s.before_kill:
            audit.lost_at_kill.append(s)
        else:
            audit.missing.append(s)
    ended = view.ended
    audit.status = ended.status if ended else "no end"
    audit.logged_usd = ended.total_cost_usd if ended else None
    if audit.cap_usd is not None:
        audit.over_cap = (audit.logged_usd or 0.0) > audit.cap_usd or (
            audit.served_usd > audit.cap_usd + COST_TOLERANCE_USD
        )
    audit.broken = [rule.text for rule in verify_run(folder).broken]


def _requests_of(k_sum: int, n: int, by_k: dict[int, Served]) -> list[int] | None:
    """The ``n`` unmatched requests whose numbers add up to ``k_sum`` (one, or a judge's
    consecutive failed attempts and its answer); None when no such requests were served."""
    if n == 1:
        s = by_k.get(k_sum)
        return [k_sum] if s is not None and not s.matched else None
    open_ks = sorted(k for k, s in by_k.items() if not s.matched)
    for i in range(len(open_ks) - n + 1):
        if sum(open_ks[i : i + n]) == k_sum:
            return open_ks[i : i + n]
    return None


def line(a: Audit) -> str:
    """One run's line."""
    p = a.plan
    logged = "null" if a.logged_usd is None else f"${a.logged_usd:.9f}"
    verdict = "ok" if a.ok else "FAIL"
    notes = []
    if p.killed:
        at = a.killed_at
        notes.append(f"killed at request {at}, resumed" if at else "ended before its kill")
    if a.missing:
        notes.append("missing k=" + ",".join(str(s.k) for s in a.missing))
    if a.late:
        notes.append(
            f"{len(a.late)} answered after the client's timeout, {a.timed_out_unknown} timeouts "
            "marked cost-unknown"
        )
    if a.lost_at_kill:
        notes.append(
            f"{len(a.lost_at_kill)} answered as it was killed, {a.cost_unknown} marked cost-unknown"
        )
    if a.to_the_dead:
        notes.append(f"{a.to_the_dead} read from the killed process after it died")
    if a.abandoned[0]:
        notes.append(f"{a.abandoned[0]} abandoned at a phase end, {a.abandoned[1]} answered")
    if a.phantom:
        notes.append("not served: " + "; ".join(a.phantom[:3]))
    if not a.cost_ok:
        notes.append("cost differs")
    if a.cap_usd is not None:
        refused = a.refused_in_round
        notes.append(
            f"cap ${a.cap_usd:g} "
            + ("PASSED" if a.over_cap else "held")
            + (f", refused in round {refused}" if refused is not None else ", not reached")
        )
    if a.broken:
        notes.append("verify: " + " | ".join(a.broken[:3]))
    if a.error:
        notes.append(a.error)
    return (
        f"run {p.index:02d} {p.label:<32} {a.status:<10} served {len(a.served):>3} "
        f"(+{a.faults} faults), logged {a.logged:>3}, missing {len(a.missing)}; "
        f"cost served ${a.served_usd:.9f} logged {logged}; {verdict}"
        + (f" ({'; '.join(notes)})" if notes else "")
    )


def main() -> int:
    """Play the schedule, print one line per run and the summary; 1 if anything is off."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=35, help="runs to play (default 35)")
    parser.add_argument("--seed", type=int, default=28, help="seed of the schedule (default 28)")
    parser.add_argument("--runs-dir", default="", help="where the runs go (default: a temp dir)")
    parser.add_argument(
        "--min-requests", type=int, default=0,
        help="exit 1 when fewer answered requests were served (default 0: no floor)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.runs < 1:
        parser.error(f"--runs {args.runs}: play at least 1")
    if args.min_requests < 0:
        parser.error(f"--min-requests {args.min_requests}: give 0 or more")
    sys.path.insert(0, str(ROOT))
    os.environ.update({**KEYS, "PREFECT_LOGGING_LEVEL": "ERROR"})
    from deployments.local_server import local_prefect_server

    runs_dir = args.runs_dir or tempfile.mkdtemp(prefix="ledger-audit-")
    work = Path(runs_dir) / "_audit"
    work.mkdir(parents=True, exist_ok=True)
    print(f"runs under {runs_dir}", flush=True)
    audits: list[Audit] = []
    started = time.monotonic()
    with local_prefect_server() as api:
        os.environ["PREFECT_API_URL"] = api
        for plan in schedule(args.runs, args.seed):
            audit = Audit(plan)
            cap = spend_cap(plan, runs_dir) if plan.capped else None
            audit.cap_usd = cap
            stub = make_stub(plan, CAPPED_BASE if plan.capped else BASE)
            try:
                audit.run_dir = play(plan, runs_dir, stub, cap, work)
                stub.stop()
                reconcile(audit, stub, audit.run_dir)
            except Exception as exc:  # a run that broke is a finding, not the end of the audit
                audit.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            finally:
                stub.stop()
            audits.append(audit)
            print(line(audit), flush=True)
    served = sum(len(a.served) for a in audits)
    agent = sum(len(a.served) for a in audits if a.plan.scenario == "prisoners_dilemma")
    logged = sum(a.logged for a in audits)
    missing = sum(len(a.missing) for a in audits)
    over = sum(a.over_cap for a in audits)
    unverified = sum(bool(a.broken) for a in audits)
    # What happened, not what was planned: a run that ended before its kill is not counted.
    killed = [a for a in audits if a.plan.killed and a.killed_at]
    unkilled = sum(a.plan.killed and not a.killed_at for a in audits)
    print(
        f"covered: {agent} agent requests and {served - agent} judge requests answered, "
        f"{sum(a.faults for a in audits)} faults; "
        f"{sum(a.abandoned[0] for a in audits)} requests abandoned at a phase end "
        f"({sum(a.abandoned[1] for a in audits)} answered); {len(killed)} runs killed and "
        f"resumed, {sum(len(a.lost_at_kill) for a in killed)} answers sent as they died "
        f"({sum(a.silent_loss for a in killed)} not marked cost-unknown); "
        f"{sum(len(a.late) for a in audits)} answered after the client's timeout "
        f"({sum(a.silent_late for a in audits)} not marked cost-unknown); "
        f"{sum(a.refused_in_round is not None for a in audits)} of "
        f"{sum(a.cap_usd is not None for a in audits)} capped runs refused a request; "
        f"{sum(not a.cost_ok for a in audits)} runs whose total is not the served usage priced; "
        f"{sum(bool(a.error) for a in audits)} runs broke; {time.monotonic() - started:.0f} s",
        flush=True,
    )
    run_dirs = [a.run_dir for a in audits if a.run_dir]
    verified = subprocess.run(
        [sys.executable, "-m", "glossogen", "verify", *run_dirs],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    said = (verified.stdout + verified.stderr).strip().splitlines()
    print(f"glossogen verify over {len(run_dirs)} runs: exit {verified.returncode}, "
          f"{said[-1] if said else ''}", flush=True)  # fmt: skip
    print(
        f"ledger audit: {len(audits)} runs, {served} requests served, {logged} logged, "
        f"{missing} missing, {over} capped runs over cap, {unverified} verify failures, "
        f"{len(killed)} killed and resumed"
        + (f"; {unkilled} planned kills did not happen" if unkilled else "")
        + (f"; short of {args.min_requests} requests" if served < args.min_requests else ""),
        flush=True,
    )
    if verified.returncode != 0 or served < args.min_requests or unkilled:
        return 1
    return 0 if all(a.ok for a in audits) else 1


if __name__ == "__main__":
    sys.exit(main())
