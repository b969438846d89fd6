"""A run's books: the rules its event log must keep, checked in one pass over a :class:`RunView`.

The event log is the ledger; a lab publishes its figures only if the ledger adds up. The rules
(:data:`BookRule`), each broken one named in one line with the run, the rule and where (line of
the log, round, agent):

- ``requests``: every model request that began ended once. A process that logs its billed
  requests as sent (``model_request_sent``, with a request id) is held to the ids: each
  request sent is settled by exactly one event naming its id (``llm_response_received``,
  ``agent_run_cycle_failed``, ``judge_called``, ``model_request_abandoned``), no event settles
  a request twice or one never sent; a request still unsettled when the run ended breaks the
  rule (one killed in flight is settled by the resume, which logs it abandoned). A process
  that logged no ``model_request_sent`` (a log written before they were) is checked by its
  seats' cycles instead: the engine counts a seat's requests in each process that plays the run
  (a resume starts again from the answers the settled log holds), so within one process
  no cycle is answered twice, and every cycle skipped between answers is a request that ended
  otherwise: an ``agent_run_cycle_failed`` of that seat logged between the two answers (other
  than ``invalid_tool_arguments``, which follows an answer), or a ``model_request_abandoned``
  of that seat in that process sent in a round between theirs (it is logged later). An
  unbilled request (``scripted``, ``local``) runs in this process and is not finished in the
  background, so a phase end may cut one off with no event: one skipped cycle per phase end
  between two such answers is allowed. A request sent after a seat's last answer is seen
  only through its request id. A live run's current process is not held to this rule (a
  request its phase end abandoned is logged when it settles); a killed one is.
- ``verdicts``: every round that completed has exactly one ``round_result_recorded`` per team
  (the teams the run's verdicts name); rounds a crash cut off are superseded and not counted.
- ``spend``: every ``simulation_ended`` records what the priced events before it sum to
  (:meth:`Spend.count`, this run's own calls, superseded attempts included): its
  ``total_cost_usd``, ``inherited_cost_usd`` and, where both are known, ``judge_cost_usd``
  and each seat's cost; each seat's tokens always; when the total is unknown (a lower bound),
  its ``priced_cost_usd``, the calls whose cost is known. To :data:`TOLERANCE_USD`. A
  GlossoGen 0.5.x log priced no call and is not checked. The probe's ledger
  (:data:`PROBE_LEDGER`): its last probe's requests are priced to the report's
  ``protocol_probe.cost_usd`` (:func:`check_probe_ledger`). No priced request costs less than
  nothing: a negative ``cost_usd`` on one (in the run's log or the probe's ledger) is named,
  even where the totals add it up.
- ``inherited``: a derived run's copied priced events are the source's, cost for cost (given
  the source's view); a replayed prefix's (``lineage["prefix"] == "replayed"``: the replay's
  own ids) are matched seat by seat, in order, with the source's of rounds 1..N.
- ``log``: no line is damaged (a damaged line may be a lost event), no event is in the log
  twice (two lines with one ``event_id``: a line written again counts its message twice; a
  priced event or a verdict written twice is named by ``spend``, ``requests`` or
  ``verdicts``; a ``judge_called`` that settles no request, scripted or cached, by ``log``),
  and no process that is gone left its last line torn (cut off mid-write: an
  event it held is lost). A live writer's last line may be half written; it is not named.
- ``ended``: a run no process is writing (its folder is not locked) ends with
  ``simulation_ended``. One without (killed, or its ending torn or deleted) is a stopped run
  (the status ``stopped``; ``interrupted`` is a run that logged its ending) whose books cannot
  close: named in one line, with its torn last line's number when the
  ending was cut off mid-write, and every request it sent that no event settles, by request id
  (a resume settles them). A live run is still playing and is not held to it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from glossogen.eventlog._events import (
    CACHE_TOKEN_FIELDS,
    AgentRunCycleFailed,
    Event,
    JudgeCalled,
    LlmResponseReceived,
    ModelRequestAbandoned,
    ModelRequestSent,
    PostmortemEnded,
    ProbeRequestSettled,
    RoundCompleted,
    RoundEnded,
    RoundResultRecorded,
    RunResumed,
    SimulationEnded,
)
from glossogen.eventlog._upcast import LEGACY_SCHEMA_VERSION

if TYPE_CHECKING:
    from glossogen.eventlog._reader import EventLogRead
    from glossogen.eventlog._spend import Spend
    from glossogen.eventlog._view import RunView

BookRule = Literal["requests", "verdicts", "spend", "inherited", "log", "ended"]
"""The rules of a run's books (the module docstring)."""

TOLERANCE_USD = 1e-9
"""How far a recorded spend may lie from the sum of its events (USD): logged costs keep 10
decimal places, so a true total is within a few units of the last place."""

UNBILLED_PROVIDERS = frozenset({"scripted", "local"})
"""Providers whose requests run on this process and bill nothing: the engine does not finish
them in the background when a phase ends, so a request a phase end cut off logs no event."""

INVALID_TOOL_ARGUMENTS = "invalid_tool_arguments"
"""The failure kind that follows an answered request (``glossogen.engine``'s kind)."""

_PRICED = (LlmResponseReceived, JudgeCalled, ModelRequestAbandoned, AgentRunCycleFailed)
_NAMED_TWICE_ELSEWHERE = (*_PRICED, RoundResultRecorded)
"""Events a rule of their own names when one is in the log twice (``spend`` and ``requests``,
``verdicts``): the ``log`` rule leaves them to it, so one break is one line."""


@dataclass(frozen=True)
class BrokenRule:
    """One rule a run's books break, where.

    Attributes:
        run_id: The run (``<scenario>/<run_dir_name>``).
        rule: Which rule (:data:`BookRule`).
        where: Where in the log: ``line N`` (with the round and the agent when known).
        detail: What is wrong, with the figures.
    """

    run_id: str
    rule: BookRule
    where: str
    detail: str

    @property
    def text(self) -> str:
        """The one line naming the run, the rule and where."""
        return f"{self.run_id}: {self.rule}: {self.where}: {self.detail}"


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.10f}".rstrip("0").rstrip(".")


def _same(recorded: float | None, summed: float | None) -> bool:
    if recorded is None or summed is None:
        return recorded is None and summed is None
    return abs(recorded - summed) <= TOLERANCE_USD


class _Books:
    """The checks of one view, one pass each over its events (indexes into ``view.events``)."""

    def __init__(self, view: RunView, run_id: str) -> None:
        self.view = view
        self.run_id = run_id
        self.events = view.events
        self.broken: list[BrokenRule] = []

    def line(self, index: int) -> int:
        return self.view.line_of(index)

    file = ""
    """The log's name in a line's ``where`` (empty: the run's own log)."""

    def where(self, index: int, agent_id: str | None = None) -> str:
        event = self.events[index]
        if self.file:
            return f"{self.file} line {self.line(index)} (agent {agent_id})"
        place = f"line {self.line(index)} (round {event.round_number}"
        return f"{place}, agent {agent_id})" if agent_id else f"{place})"

    def add(self, rule: BookRule, where: str, detail: str) -> None:
        self.broken.append(BrokenRule(self.run_id, rule, where, detail))

    # -- log ---------------------------------------------------------------------------------
    def check_log(self) -> None:
        if self.view.damaged_note is not None:
            self.add("log", *self.view.damaged_note)
        for seen, index in self.view.repeated:
            event = self.events[index]
            # a ruling that settles no request (scripted, or from the judge cache: $0) is
            # named by no rule of its own
            unsettled = isinstance(event, JudgeCalled) and not event.request_ids
            if unsettled or not isinstance(event, _NAMED_TWICE_ELSEWHERE):
                self.add("log", self.where(index), f"event {event.event_id} "
                         f"({event.event_type}) is in the log twice (lines {self.line(seen)}, "
                         f"{self.line(index)})")  # fmt: skip
        if self.view.torn_note is not None:
            self.add("log", *self.view.torn_note)

    # -- ended -------------------------------------------------------------------------------
    def check_ended(self) -> None:
        """A run no process writes ends with ``simulation_ended``; else one line names it."""
        view = self.view
        if view.ended is not None or view.live or not self.events:
            return
        torn = view.read.truncated_line
        if torn is not None:
            where = f"line {torn}"
            what = "the last line is torn (cut off mid-write) and no simulation_ended precedes it"
        else:
            last = self.events[-1]
            where = f"after line {self.line(len(self.events) - 1)} (round {last.round_number})"
            what = "the log has no simulation_ended and no process is writing it"
        detail = f"{what}: a stopped run whose books cannot close"
        open_ids = [sent.request_id for sent in unsettled_requests(view)]
        if open_ids:
            detail += f"; {len(open_ids)} request(s) sent and never settled: {', '.join(open_ids)}"
        self.add("ended", where, detail)

    # -- requests ----------------------------------------------------------------------------
    def check_requests(self) -> None:
        self._check_request_ids()
        bounds = [i for i, e in enumerate(self.events) if isinstance(e, RunResumed) and i > 0]
        for start, stop in zip([0, *bounds], [*bounds, len(self.events)], strict=True):
            if not any(isinstance(e, ModelRequestSent) for e in self.events[start:stop]):
                self._check_cycles(start, stop)  # a process of a log without request ids

    def _check_request_ids(self, unsettled: str = "") -> None:
        """Requests logged as sent: each settled by exactly one event naming its id.

        A request no event settles is named once the run has ended; with ``unsettled`` (a
        ledger outside the run's log, which never ends), always, ``unsettled`` ending the line.
        """
        sent: dict[str, int] = {}
        settled: dict[str, int] = {}
        for index, event in enumerate(self.events):
            if event.event_id in self.view.inherited:
                continue  # the source's books hold its requests
            if isinstance(event, ModelRequestSent):
                sent.setdefault(event.request_id, index)
                continue
            agent = getattr(event, "agent_id", None)
            for request in settled_by(event):
                if request in settled:
                    self.add(
                        "requests",
                        self.where(index, agent),
                        f"request {request} settled twice ({event.event_type}; first at line "
                        f"{self.line(settled[request])})",
                    )
                elif request not in sent:
                    self.add(
                        "requests",
                        self.where(index, agent),
                        f"{event.event_type} settles request {request}, never logged as sent",
                    )
                else:
                    settled[request] = index
        if not unsettled and self.view.ended is None:
            return  # still playing, or killed: some may be in flight (a resume settles them)
        for request, index in sent.items():
            if request not in settled:
                event = self.events[index]
                self.add(
                    "requests",
                    self.where(index, getattr(event, "agent_id", None)),
                    f"request {request} was sent and no event settles it{unsettled}",
                )

    def _check_cycles(self, start: int, stop: int) -> None:
        """One process's seat cycles: none answered twice, every skipped one ended otherwise.

        A cycle skipped between two answers is ended by a failure logged between them (a
        failure is logged as it happens), else by an abandonment sent in a round from the
        earlier answer's to the later one's (an abandoned request is logged when it settles,
        later): each ending serves one skipped cycle, the earliest it can.
        """
        resumed = start < stop and isinstance(self.events[start], RunResumed)
        turns = self._turns_before(start) if resumed else {}
        answered: dict[str, dict[int, int]] = defaultdict(dict)
        failures: dict[str, list[int]] = defaultdict(list)  # seat -> failure indexes
        abandoned: dict[str, list[int]] = defaultdict(list)  # seat -> sent_in_round, each
        # per seat: (answer index, previous answer index, cycles skipped before it)
        gaps: dict[str, list[tuple[int, int | None, int]]] = defaultdict(list)
        last: dict[str, tuple[int, int | None]] = {}  # seat -> (cycle, its answer's index)
        phase_ends = 0
        ends_at: dict[int, int] = {}  # answer index -> phase ends logged before it
        for index in range(start, stop):
            event = self.events[index]
            if isinstance(event, RoundEnded | PostmortemEnded):
                phase_ends += 1
            if event.event_id in self.view.inherited:
                continue
            if isinstance(event, LlmResponseReceived):
                ends_at[index] = phase_ends
                agent, cycle = event.agent_id, event.cycle
                seen = answered[agent]
                if cycle in seen:
                    self.add(
                        "requests",
                        self.where(index, agent),
                        f"request cycle {cycle} answered twice (first at line "
                        f"{self.line(seen[cycle])})",
                    )
                    continue
                seen[cycle] = index
                before, previous = last.get(agent, (turns.get(agent, 0), None))
                skipped = cycle - before - 1
                if event.provider in UNBILLED_PROVIDERS:
                    # an unbilled request is not shielded: a phase end may cancel it unlogged
                    crossed = phase_ends - (ends_at[previous] if previous is not None else 0)
                    skipped -= min(skipped, crossed)
                if skipped > 0:
                    gaps[agent].append((index, previous, skipped))
                if cycle > before:
                    last[agent] = (cycle, index)
            elif isinstance(event, ModelRequestAbandoned):
                abandoned[event.agent_id].append(event.sent_in_round)
            elif (
                isinstance(event, AgentRunCycleFailed)
                and event.error_kind != INVALID_TOOL_ARGUMENTS
            ):
                failures[event.agent_id].append(index)
        if stop == len(self.events) and self.view.ended is None and self.view.live:
            return  # a live process: what its phase ends abandoned is logged when it settles
        for agent, agent_gaps in gaps.items():
            for index, previous, count in agent_gaps:
                missing = self._unended(index, previous, count, failures[agent], abandoned[agent])
                if missing:
                    answer = self.events[index]
                    assert isinstance(answer, LlmResponseReceived)
                    after = (
                        f"after the answer at line {self.line(previous)}"
                        if previous is not None
                        else "in this process"
                    )
                    self.add(
                        "requests",
                        self.where(index, agent),
                        f"{missing} request(s) sent {after} and before this one (cycle "
                        f"{answer.cycle}) ended in no event: no answer, failure or abandonment",
                    )

    def _unended(
        self, index: int, previous: int | None, count: int, failures: list[int], rounds: list[int]
    ) -> int:
        """How many of ``count`` cycles skipped before answer ``index`` no ending accounts for.

        Uses up (removes) the failures logged between the two answers and the abandonments
        sent in a round between theirs.
        """
        low = -1 if previous is None else previous
        for failure in [f for f in failures if low < f < index][:count]:
            failures.remove(failure)
            count -= 1
        first = 0 if previous is None else self.events[previous].round_number
        last = self.events[index].round_number
        for sent in [r for r in rounds if first <= r <= last][:count]:
            rounds.remove(sent)
            count -= 1
        return count

    def _turns_before(self, resumed: int) -> dict[str, int]:
        """Each seat's request count a resume at ``resumed`` starts from: the settled answers."""
        from glossogen.eventlog._attempts import split_attempts

        kept, _, _ = split_attempts(self.events[: resumed + 1])
        turns: dict[str, int] = defaultdict(int)
        for event in kept:
            if isinstance(event, LlmResponseReceived):
                turns[event.agent_id] += 1
        return turns

    # -- verdicts ----------------------------------------------------------------------------
    def check_verdicts(self) -> None:
        index_of = {id(e): i for i, e in enumerate(self.events)}
        verdicts: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        completed: dict[int, int] = {}
        for event in self.view.counted:
            if isinstance(event, RoundResultRecorded):
                verdicts[event.round_number][event.team_id].append(index_of[id(event)])
            elif isinstance(event, RoundCompleted):
                completed.setdefault(event.round_number, index_of[id(event)])
        teams = sorted({team for by_team in verdicts.values() for team in by_team})
        for round_number in sorted(set(completed) | set(verdicts)):
            by_team = verdicts.get(round_number, {})
            for team, indexes in sorted(by_team.items()):
                if len(indexes) > 1:
                    lines = ", ".join(str(self.line(i)) for i in indexes)
                    self.add(
                        "verdicts",
                        self.where(indexes[1]),
                        f"round {round_number} has {len(indexes)} verdicts for team {team} "
                        f"(lines {lines})",
                    )
            if round_number not in completed:
                continue  # the round in progress, or one a crash cut off after its verdict
            missing = [t for t in teams if t not in by_team] if teams else ["any team"]
            if missing:
                self.add(
                    "verdicts",
                    self.where(completed[round_number]),
                    f"round {round_number} completed with no verdict for {', '.join(missing)}",
                )

    # -- spend -------------------------------------------------------------------------------
    def check_costs(self) -> None:
        """No priced request has a negative cost (a total may sum it and still balance)."""
        for index, event in enumerate(self.events):
            if not isinstance(event, (*_PRICED, ProbeRequestSettled)):
                continue
            cost = event.cost_usd
            if cost is not None and cost < 0:
                self.add(
                    "spend",
                    self.where(index, getattr(event, "agent_id", None)),
                    f"{event.event_type} cost_usd {_usd(cost)} is negative: "
                    "a priced request cannot cost less than nothing",
                )

    def check_spend(self) -> None:
        from glossogen.eventlog._spend import Spend

        own, inherited = Spend(), Spend()
        for index, event in enumerate(self.events):
            if isinstance(event, SimulationEnded):
                if event.schema_version != LEGACY_SCHEMA_VERSION:
                    self._check_ended(index, event, own, inherited)
            elif event.event_id in self.view.inherited:
                inherited.count(event)
            else:
                own.count(event)

    def _check_ended(
        self, index: int, ended: SimulationEnded, own: Spend, inherited: Spend
    ) -> None:
        wrong: list[str] = []

        def compare(name: str, recorded: float | None, summed: float | None) -> None:
            if not _same(recorded, summed):
                wrong.append(f"{name} {_usd(recorded)} but its events sum to {_usd(summed)}")

        compare("total_cost_usd", ended.total_cost_usd, own.total_cost_usd)
        if ended.priced_cost_usd is not None:  # a total that is a lower bound: its known part
            compare("priced_cost_usd", ended.priced_cost_usd, own.known_cost_usd)
        if self.view.derived or ended.inherited_cost_usd:
            compare("inherited_cost_usd", ended.inherited_cost_usd, inherited.total_cost_usd)
        if ended.judge_cost_usd is not None and own.judge_cost_usd is not None:
            compare("judge_cost_usd", ended.judge_cost_usd, own.judge_cost_usd)
        if ended.judge_tokens is not None and ended.judge_tokens != own.judge_tokens:
            wrong.append(
                f"judge_tokens {ended.judge_tokens} but its events sum to {own.judge_tokens}"
            )
        recorded = {cost.agent_id: cost for cost in ended.agent_costs}
        for agent_id in sorted(set(recorded) | set(own.agents)):
            seat = own.agents.get(agent_id)
            cost = recorded.get(agent_id)
            if cost is None:
                if seat is not None and (seat.input_tokens or seat.output_tokens):
                    wrong.append(f"agent {agent_id} spent but is not in agent_costs")
                continue
            in_tokens, out_tokens = (seat.input_tokens, seat.output_tokens) if seat else (0, 0)
            if (cost.input_tokens, cost.output_tokens) != (in_tokens, out_tokens):
                wrong.append(
                    f"agent {agent_id} tokens {cost.input_tokens} in / {cost.output_tokens} "
                    f"out but its events sum to {in_tokens} / {out_tokens}"
                )
            if ended.judge_tokens is not None:  # a line that records cache counts
                recorded_cache = [getattr(cost, name) for name in CACHE_TOKEN_FIELDS]
                summed_cache = [getattr(seat, name) if seat else 0 for name in CACHE_TOKEN_FIELDS]
                if recorded_cache != summed_cache:
                    wrong.append(
                        f"agent {agent_id} cache tokens (read, write, 1 h write) "
                        f"{tuple(recorded_cache)} but its events sum to {tuple(summed_cache)}"
                    )
            summed = seat.cost_usd if seat else 0.0
            if cost.cost_usd is not None and summed is not None:
                compare(f"agent {agent_id} cost_usd", cost.cost_usd, summed)
        if wrong:
            self.add("spend", f"line {self.line(index)} (simulation_ended)", "; ".join(wrong))

    def check_probe_spend(self, report: str, reported_usd: float | None) -> None:
        """The last probe's priced requests against the report (:func:`check_probe_ledger`)."""
        starts = [
            i for i, e in enumerate(self.events) if isinstance(e, ModelRequestSent) and e.call == 1
        ]
        if not starts:
            return
        sent = {e.request_id for e in self.events[starts[-1] :] if isinstance(e, ModelRequestSent)}
        costs: dict[str, float | None] = {}
        for event in self.events[starts[-1] :]:
            if isinstance(event, ProbeRequestSettled) and event.request_id in sent:
                costs.setdefault(event.request_id, event.cost_usd)
        if set(costs) != sent:
            return  # killed with requests in flight: the requests rule names them
        known = [cost for cost in costs.values() if cost is not None]
        total = sum(known) if len(known) == len(costs) else None
        where = f"{self.file} lines {self.line(starts[-1])}-{self.line(len(self.events) - 1)}"
        if not _same(reported_usd, total):
            self.add(
                "spend",
                f"{where} (the last probe, {len(sent)} requests)",
                f"{report} says protocol_probe cost {_usd(reported_usd)} but its requests are "
                f"priced at {_usd(total)}",
            )

    # -- inherited ---------------------------------------------------------------------------
    def check_inherited(self, source: RunView) -> None:
        lineage = (self.view.started.lineage if self.view.started else None) or {}
        if lineage.get("prefix") == "replayed":
            self._check_replayed(source, int(lineage.get("after_round") or 0))
            return
        costs = {e.event_id: e.cost_usd for e in source.events if isinstance(e, _PRICED)}
        for index, event in enumerate(self.events):
            if event.event_id not in self.view.inherited or not isinstance(event, _PRICED):
                continue
            source_id = source.started.run_id if source.started else "the source"
            agent = getattr(event, "agent_id", None)
            if event.event_id not in costs:
                self.add(
                    "inherited",
                    self.where(index, agent),
                    f"copied {event.event_type} {event.event_id} is not in {source_id}'s log",
                )
            elif not _same(event.cost_usd, costs[event.event_id]):
                self.add(
                    "inherited",
                    self.where(index, agent),
                    f"copied {event.event_type} costs {_usd(event.cost_usd)} here but "
                    f"{_usd(costs[event.event_id])} in {source_id}",
                )

    def _check_replayed(self, source: RunView, after_round: int) -> None:
        """A replayed prefix's priced events are the source's of rounds 1..N, seat by seat.

        They carry the replay's own ids: each seat's priced events (the judge's as one more
        seat) are matched in order with the source's of those rounds, type and cost.
        """
        left: dict[str, list[tuple[str, float | None]]] = defaultdict(list)
        for event in source.counted:
            if isinstance(event, _PRICED) and event.round_number <= after_round:
                seat = getattr(event, "agent_id", None) or ""
                left[seat].append((event.event_type, event.cost_usd))
        source_id = source.started.run_id if source.started else "the source"
        for index, event in enumerate(self.events):
            if event.event_id not in self.view.inherited or not isinstance(event, _PRICED):
                continue
            agent = getattr(event, "agent_id", None)
            queue = left[agent or ""]
            was_type, was_cost = queue.pop(0) if queue else ("", None)
            if was_type != event.event_type:
                self.add(
                    "inherited",
                    self.where(index, agent),
                    f"replayed {event.event_type} {event.event_id} has no counterpart in "
                    f"{source_id}'s rounds 1..{after_round}",
                )
            elif not _same(event.cost_usd, was_cost):
                self.add(
                    "inherited",
                    self.where(index, agent),
                    f"replayed {event.event_type} costs {_usd(event.cost_usd)} here but "
                    f"{_usd(was_cost)} in {source_id}",
                )


PROBE_LEDGER = "protocol_probe_requests.jsonl"
"""The run folder's ledger of ``protocol_probe`` requests (``glossogen evaluate``'s)."""


def check_probe_ledger(
    read: EventLogRead, run_id: str, reported: tuple[str, float | None] | None = None
) -> list[BrokenRule]:
    """Every rule the probe's ledger (:data:`PROBE_LEDGER`, as read) breaks.

    ``requests``: each probe request logged as sent is settled by exactly one
    ``probe_request_settled`` naming it, none twice and none never sent. One no event settles
    was in flight when the evaluate that sent it was killed: named until the next probe logs it
    abandoned.

    ``spend``, given ``reported`` (the report's file name and its ``protocol_probe.cost_usd``):
    the last probe's requests, all settled, are priced to what the report says it cost, to
    :data:`TOLERANCE_USD` (a cost unknown on one side only breaks it too). The ledger keeps
    every probe the run has had; the report holds the last one's entry (a probe asks again
    only when its entry is not up to date, and then replaces it). A probe's requests are those
    from its first ``model_request_sent`` (``call`` 1: each probe counts from 1) to the file's
    end. A last probe with a request unsettled was killed: the report still holds the probe
    before it, and the ``requests`` rule names it.
    """
    from glossogen.eventlog._view import RunView

    books = _Books(RunView.of(read), run_id)
    books.file = PROBE_LEDGER
    books._check_request_ids(
        ": the evaluate that sent it was killed (the next probe logs it abandoned)"
    )
    books.check_costs()
    if reported is not None:
        books.check_probe_spend(*reported)
    return books.broken


def settled_by(event: Event) -> list[str]:
    """The ids of the sent requests ``event`` settles (none for most events)."""
    if isinstance(event, LlmResponseReceived | ModelRequestAbandoned | ProbeRequestSettled):
        return [event.request_id] if event.request_id is not None else []
    if isinstance(event, JudgeCalled | AgentRunCycleFailed):
        return list(event.request_ids)
    return []


def unsettled_requests(view: RunView) -> list[ModelRequestSent]:
    """This run's requests logged as sent that no event settles, in log order.

    Requests a process sent and never settled: in flight when it was killed (a resume logs
    each as abandoned, cost unknown). A derived run's copied events are its source's.
    """
    sent: dict[str, ModelRequestSent] = {}
    settled: set[str] = set()
    for event in view.events:
        if event.event_id in view.inherited:
            continue
        if isinstance(event, ModelRequestSent):
            sent.setdefault(event.request_id, event)
        else:
            settled.update(settled_by(event))
    return [event for request, event in sent.items() if request not in settled]


def check_books(view: RunView, run_id: str, source: RunView | None = None) -> list[BrokenRule]:
    """Return every rule ``view``'s books break (the module docstring), in rule order.

    Args:
        view: The run's log, read once.
        run_id: How the lines name the run.
        source: A derived run's source, read (its copied events are checked against it);
            None checks everything else.
    """
    books = _Books(view, run_id)
    books.check_log()
    books.check_requests()
    books.check_verdicts()
    books.check_costs()
    books.check_spend()
    books.check_ended()
    if source is not None and view.derived:
        books.check_inherited(source)
    return books.broken
