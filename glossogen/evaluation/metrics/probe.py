"""``protocol_probe`` (model): ask each agent, under its own model, about its team's conventions.

Each agent's recorded history (rebuilt from ``agent_history_appended``) is replayed to the model
it last played under, followed by one question of the bank; ``--probe-replicas`` calls per
(agent, question). Agents of one team that share a protocol should answer alike.

Every billed probe request is accounted as a run's are (:class:`ProbeLedger`, the run folder's
``protocol_probe_requests.jsonl``): logged as sent (``model_request_sent``, flushed) before it
goes out, then settled by one ``probe_request_settled``: answered and priced, failed, or
abandoned (cancelled unanswered; or in flight when an earlier evaluate was killed, logged when
the next probe opens the ledger), so ``glossogen verify`` can hold it to the ``requests`` rule.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any, Literal

from glossogen.evaluation._contract import (
    AgentObservation,
    MetricContext,
    MetricFailed,
    NotApplicable,
    Scored,
)
from glossogen.evaluation._registry import metric
from glossogen.evaluation._run import Seat
from glossogen.evaluation.metrics._observe import mean, plural, words
from glossogen.eventlog import (
    PROBE_LEDGER,
    EventLogWriter,
    ModelRequestSent,
    ProbeRequestSettled,
    read_events,
    settled_by,
)
from glossogen.pricing import add_costs, price_usage
from glossogen.storage import RunFolder

SIDECAR = "protocol_probe.jsonl"

QUESTIONS: dict[str, str] = {
    "codes": (
        "The rounds are over. In a few lines, list the abbreviations or codes your team uses on "
        "its channel and what each one means."
    ),
    "message_shape": (
        "What does a typical message of yours contain, and in what order do its pieces come?"
    ),
    "signals": (
        "How do you and your teammates signal that something is done, or that the other must act?"
    ),
    "agreements": "Which habits did your team agree to keep or to change after the rounds so far?",
}
"""The general question bank: id -> question, asked after the agent's whole history, for a
scenario that names no bank of its own (``Scenario.probe_questions``)."""

if TYPE_CHECKING:  # pydantic-ai is imported when a probe runs, not when metrics register
    from pydantic_ai.messages import ModelMessage, ModelResponse


def question_bank(scenario: str) -> dict[str, str]:
    """Return the probe's questions for ``scenario``: its own bank, else :data:`QUESTIONS`.

    The general bank also serves a scenario not installed here (a GlossoGen 0.5 log's, say).
    """
    from glossogen.scenario import UnknownScenarioError, load_scenario

    try:
        return dict(load_scenario(scenario).probe_questions) or QUESTIONS
    except UnknownScenarioError:
        return QUESTIONS


SCRIPTED_TOP_WORDS = 8
"""How many of its most used words a scripted agent names in its answer."""


def _jaccard(a: set[str], b: set[str]) -> float:
    """``|a & b| / |a | b|`` of two word sets; two empty answers agree fully (1.0)."""
    return len(a & b) / len(a | b) if a | b else 1.0


def _sent_texts(messages: list[ModelMessage]) -> list[str]:
    """Texts the agent sent with ``send_message`` in ``messages``."""
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    texts: list[str] = []
    for message in messages:
        if not isinstance(message, ModelResponse):
            continue
        for part in message.parts:
            if isinstance(part, ToolCallPart) and part.tool_name == "send_message":
                args = part.args if isinstance(part.args, dict) else json.loads(part.args or "{}")
                texts.append(str(args.get("text", "")))
    return texts


def _scripted_model(agent_id: str) -> Any:
    """A deterministic offline answerer: names the words the agent used most on its channels."""
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        counts = Counter(w for text in _sent_texts(messages) for w in words(text))
        top = sorted(counts, key=lambda w: (-counts[w], w))[:SCRIPTED_TOP_WORDS]
        text = f"We use: {' '.join(top)}." if top else "We have no conventions yet."
        return ModelResponse(parts=[TextPart(text)], model_name="scripted")

    return FunctionModel(answer, model_name="scripted")


def _replayable(history: list[ModelMessage]) -> tuple[list[ModelMessage], str | None]:
    """Drop a trailing response whose tool calls never returned; return the last instructions."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart

    kept = list(history)
    while (
        kept
        and isinstance(kept[-1], ModelResponse)
        and any(isinstance(p, ToolCallPart) for p in kept[-1].parts)
    ):
        kept.pop()
    instructions = next(
        (m.instructions for m in reversed(kept) if isinstance(m, ModelRequest) and m.instructions),
        None,
    )
    return kept, instructions


KILLED = "no answer: the evaluate that sent it was killed before it answered; its cost is unknown"
"""The error of a probe request an earlier evaluate left unsettled (logged by the next probe)."""


class ProbeLedger:
    """The probe's write-ahead ledger of billed requests, in the run folder (module docstring).

    Opening it settles what an earlier, killed evaluate left in flight (``abandoned``, cost
    unknown). Unbilled seats (``scripted``, ``local``) are not logged, as in a run; a probe
    that sends nothing billed writes no ledger.
    """

    def __init__(self, folder: RunFolder) -> None:
        """Open ``folder``'s ledger (appended to) and settle what it left in flight."""
        self._url = folder.file_url(PROBE_LEDGER)
        self._writer: EventLogWriter | None = None
        self._ids = itertools.count(1)
        earlier: list[Any] = read_events(self._url).events if folder.exists(PROBE_LEDGER) else []
        settled = {request for event in earlier for request in settled_by(event)}
        for event in earlier:
            if isinstance(event, ModelRequestSent) and event.request_id not in settled:
                settled.add(event.request_id)
                self._settle(event.request_id, event.agent_id, event.model, event.provider,
                             "abandoned", None, KILLED, {})  # fmt: skip

    def _append(self, event: ModelRequestSent | ProbeRequestSettled) -> None:
        if self._writer is None:
            self._writer = EventLogWriter(self._url)
        self._writer.append(event)

    def _settle(
        self,
        request_id: str,
        agent_id: str,
        model: str,
        provider: str,
        outcome: Literal["answered", "failed", "abandoned"],
        cost: float | None,
        error: str | None,
        tokens: dict[str, int],
    ) -> None:
        self._append(
            ProbeRequestSettled(
                request_id=request_id,
                agent_id=agent_id,
                model=model,
                provider=provider,
                outcome=outcome,
                cost_usd=cost,
                error=error,
            ).model_copy(update=tokens)  # fmt: skip
        )

    def sent(self, seat: Seat) -> str:
        """Log a request of ``seat``'s as sent (flushed); return its request id."""
        seated = {"agent_id": seat.agent_id, "model": seat.model, "provider": seat.provider}
        sent = ModelRequestSent.model_validate(
            {"request_id": str(uuid.uuid4()), "call": next(self._ids), **seated}
        )
        self._append(sent)
        return sent.request_id

    def settled(self, request_id: str, seat: Seat, usage: Any = None, error: str = "") -> None:
        """Log how request ``request_id`` ended.

        Answered (``usage``, priced), failed (``error``; not billed), or abandoned (neither:
        cancelled unanswered, its cost unknown).
        """
        where = (request_id, seat.agent_id, seat.model, seat.provider)
        if usage is not None:
            tokens = {name: getattr(usage, name, 0) or 0 for name in _TOKENS}
            cost = price_usage(seat.provider, seat.model, usage)
            self._settle(*where, "answered", cost, None, tokens)
        elif error:
            self._settle(*where, "failed", 0.0, error, {})
        else:
            self._settle(*where, "abandoned", None, "no answer: the probe was cancelled", {})

    def close(self) -> None:
        """Close the ledger (its lines are already flushed)."""
        if self._writer is not None:
            self._writer.close()


_TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
           "cache_write_1h_tokens")  # fmt: skip
"""Usage counts a settled probe request records (the names :func:`price_usage` reads)."""


async def _ask(
    seat: Seat,
    history: list[ModelMessage],
    question: str,
    cache_key: str,
    ledger: ProbeLedger | None = None,
) -> tuple[str | None, float | None]:
    """Ask ``seat``'s recorded model ``question`` after its history; None answer on failure.

    The history is every question's shared context: it is cached up to its last block (a
    ``CachePoint`` before the question, with the instructions; on OpenAI the seat's probe
    ``cache_key`` routes its calls to one cache), and the question alone is not.
    """
    from pydantic_ai import Agent
    from pydantic_ai.messages import CachePoint, UserContent

    from glossogen.models import build_model, request_model_settings

    kept, instructions = _replayable(history)
    model = (
        _scripted_model(seat.agent_id)
        if seat.provider == "scripted"
        else build_model(seat.provider, seat.model)
    )
    agent = Agent(model, instructions=instructions)
    settings = request_model_settings({"cache": True}, seat.provider, cache_key, conversation=False)
    prompt: list[UserContent] = [CachePoint(), question] if kept else [question]
    billed = ledger is not None and seat.provider not in ("scripted", "local")
    request_id = ledger.sent(seat) if ledger is not None and billed else ""
    try:
        result = await agent.run(prompt, message_history=kept, model_settings=settings)
    except asyncio.CancelledError:
        if ledger is not None and billed:
            ledger.settled(request_id, seat)
        raise
    except Exception as exc:  # noqa: BLE001 (a failed probe call is a missing answer)
        if ledger is not None and billed:
            ledger.settled(request_id, seat, error=f"{type(exc).__name__}: {exc}"[:300])
        return None, 0.0
    usage = result.usage
    if ledger is not None and billed:
        ledger.settled(request_id, seat, usage)
    return str(result.output), price_usage(seat.provider, seat.model, usage)


async def _ask_all(
    jobs: list[tuple[Seat, str, int]],
    histories: dict[str, list[ModelMessage]],
    run_id: str,
    bank: dict[str, str],
    ledger: ProbeLedger | None = None,
) -> list[tuple[str | None, float | None]]:
    """Ask every job, in job order; seats at once.

    Per seat, its first job is asked alone and the rest once it is answered, all at once: they
    read the shared history from the cache the first one wrote, so it is paid for once.
    """

    def ask(job: tuple[Seat, str, int]) -> Any:
        seat, qid, _ = job
        key = f"{run_id}:{seat.agent_id}:probe"
        return _ask(seat, histories[seat.agent_id], bank[qid], key, ledger)

    async def seat_jobs(indices: list[int]) -> list[tuple[str | None, float | None]]:
        first = await ask(jobs[indices[0]])
        return [first, *await asyncio.gather(*(ask(jobs[i]) for i in indices[1:]))]

    by_seat: dict[str, list[int]] = defaultdict(list)
    for i, (seat, _, _) in enumerate(jobs):
        by_seat[seat.agent_id].append(i)
    seats = list(by_seat.values())
    answers: dict[int, tuple[str | None, float | None]] = {}
    for indices, asked in zip(
        seats, await asyncio.gather(*(seat_jobs(i) for i in seats)), strict=True
    ):
        answers.update(zip(indices, asked, strict=True))
    return [answers[i] for i in range(len(jobs))]


@metric(
    "protocol_probe",
    unit="answer similarity between teammates",
    kind="model",
    version=2,
    needs=("agent_history",),
    sidecar=SIDECAR,
    reads=(),
)
async def protocol_probe(ctx: MetricContext) -> Scored:
    r"""Mean word-set similarity of teammates' answers to the same question about their protocol.

    Every agent, its recorded history replayed to its recorded model (the ``scripted`` provider
    answers offline, naming the words it sent most), answers each question of the scenario's
    bank (:func:`question_bank`) ``--probe-replicas`` times. For a question and two agents
    ``a``, ``b`` of one team, similarity is the mean over their answer pairs of the Jaccard
    index of the answers' word sets (lower-cased ``\w+`` runs): ``|A & B| / |A | B|``. The
    score is the mean over (question, teammate pair); ``per_agent`` the mean over pairs
    involving the agent.
    Agreement: mean over (agent, question) answered twice or more of the pairwise Jaccard index
    between its own replicas. Sidecar ``protocol_probe.jsonl``: one line per call. Run-level
    (``rounds`` 0). Blank when no team has two agents.
    """
    run = ctx.run
    teams: dict[str, list[Seat]] = defaultdict(list)
    for seat in run.seats.values():
        teams[seat.team_id].append(seat)
    if not any(len(members) >= 2 for members in teams.values()):
        raise NotApplicable("no team has two agents to compare")
    histories = run.histories
    bank = question_bank(run.scenario)
    seats = [s for s in run.seats.values() if s.agent_id in histories]
    jobs = [
        (seat, qid, replica)
        for seat in seats
        for qid in bank
        for replica in range(1, ctx.probe_replicas + 1)
    ]
    ledger = ProbeLedger(run.folder)
    try:
        answers = await _ask_all(jobs, histories, run.run_id, bank, ledger)
    finally:
        ledger.close()
    cost = add_costs([c for _, c in answers])
    rows: list[dict[str, Any]] = [
        {"agent_id": seat.agent_id, "question_id": qid, "replica": replica, "answer": answer}
        for (seat, qid, replica), (answer, _) in zip(jobs, answers, strict=True)
    ]
    said: dict[tuple[str, str], list[set[str]]] = defaultdict(list)
    for (seat, qid, _), (answer, _) in zip(jobs, answers, strict=True):
        if answer is not None:
            said[(seat.agent_id, qid)].append(set(words(answer)))
    if not said:
        raise MetricFailed("every probe call failed", cost)
    pair_scores: list[float] = []
    agent_scores: dict[str, list[float]] = defaultdict(list)
    for members in teams.values():
        for a, b in itertools.combinations([m.agent_id for m in members], 2):
            for qid in bank:
                left, right = said.get((a, qid), []), said.get((b, qid), [])
                if not left or not right:
                    continue
                sim = mean(_jaccard(x, y) for x in left for y in right)
                pair_scores.append(sim)
                agent_scores[a].append(sim)
                agent_scores[b].append(sim)
    if not pair_scores:
        raise MetricFailed("no two agents of a team both answered a question", cost)
    self_agreement = [
        mean(_jaccard(x, y) for x, y in itertools.combinations(sets, 2))
        for sets in said.values()
        if len(sets) >= 2
    ]
    score = mean(pair_scores)
    return Scored(
        score=score,
        summary=(
            f"teammates' answers overlap {score:.2f} (Jaccard) over "
            f"{plural(len(pair_scores), 'question-pair')}"
        ),
        rounds=0,
        per_agent=[AgentObservation(agent_id=a, value=mean(v)) for a, v in agent_scores.items()],
        replicas=ctx.probe_replicas,
        agreement=mean(self_agreement) if self_agreement else None,
        cost_usd=cost,
        sidecar_rows=rows,
    )
