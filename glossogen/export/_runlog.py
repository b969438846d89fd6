"""Run-level facts from one event log, read from its head and tail where that suffices.

A finished run's log starts with ``simulation_started`` and the roster (``agent_registered``)
and ends with ``simulation_ended``, whose counts and costs are the run's totals. Reading those
few lines instead of the whole log is what keeps the default tables fast on a large cohort
(a 10-round log is about 1.5 MB, almost all of it model histories). The rest of the log is
searched, byte-wise, for the rare events that change the roster later (``agent_registered``
of a replaced seat, ``agent_swapped_mid_run``), and only those lines are parsed.

The body is searched only where the head says the roster can change (a replaced seat, a
scheduled swap). A log with no ``simulation_ended`` (a run still being written, or one whose
process died), or whose ``simulation_ended`` lacks a count (GlossoGen 0.5.x recorded no round
counts), is searched for the events behind the missing figures (``message_sent``,
``round_result_recorded``, and for spend ``llm_response_received`` and ``judge_called``), and
only those lines are parsed. A log whose ``simulation_ended`` carries no per-agent usage
(GlossoGen 0.5.x) or that has none has each agent's tokens and requests summed from its
``llm_response_received`` lines. GlossoGen 0.5.x lines are upcast through
:class:`~glossogen.eventlog.LegacyUpcaster`, fed the parsed lines in log order.

Every parsed line is validated against its event model (``_lines.LineParser``); a line that
does not parse or validate is skipped and counted (``LogFacts.bad_lines``, with its line
number), never counted as a message, a verdict or a response. Only the lines read are judged:
a damaged line in the body of a log whose ending holds the figures costs these facts nothing
and is not read (the event-log tables, which walk the whole log, name it). A last line cut off
mid-write is numbered apart (``LogFacts.torn_line``). ``llm_response_received`` lines
(hundreds per run, mostly text) are read without parsing where the line allows
(``_usage.sum_responses``). ``LogFacts.resumes`` (the run browser's badge; no table needs it)
is searched for in the log the first time it is asked for.

Cache tokens (reads, writes, one-hour writes) are read from ``simulation_ended`` (each
``agent_costs`` entry and ``judge_tokens``); a log with no ending takes them from the typed
:class:`~glossogen.eventlog.RunView` it is read into for its duration anyway. An ending written
before they were recorded (GlossoGen 0.5.x included) leaves them unknown (None, a blank cell):
reading such a log whole for them would undo the head-and-tail rule.
"""

from __future__ import annotations

import functools
import mmap
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from glossogen.eventlog import CACHE_TOKEN_FIELDS, TOKEN_FIELDS, Tokens
from glossogen.export._lines import (
    LineParser,
    complete_end,
    event_type,
    find_lines,
    line_number,
    open_log,
    truncated_line,
)
from glossogen.export._usage import add_cost, sum_responses

if TYPE_CHECKING:
    from glossogen.eventlog import RunView

RUNNING = "running"
"""Status of a run whose log has no ``simulation_ended`` while a live writer holds it."""

STOPPED = "stopped"
"""Status of a run whose log has no ``simulation_ended`` and no live writer (a killed process):
resumable, as :data:`glossogen.eventlog.RESUMABLE_STATUSES` says."""

_HEAD_END = (b"round_started", b"round_advanced")
_TAIL_LINES = 16
"""How many lines from the end are searched for the last ``simulation_ended``."""


@dataclass
class AgentFacts:
    """One registered seat of a run.

    Attributes:
        agent_id: The seat's id.
        role: Its role name.
        team_id: Its team.
        model: The model it ended the run under (after swaps and replacements).
        provider: That model's provider.
        models: Every ``provider:model`` the seat ran under, in order of first use.
        cost_usd: Its spend (USD) from ``simulation_ended.agent_costs``, else summed from its
            ``llm_response_received`` lines; None when some call was not costed.
        input_tokens: Input tokens from the same entry, else summed from its responses.
        output_tokens: Output tokens, likewise.
        requests: Model requests (responses), likewise.
        cache_read_tokens: Input tokens the provider's cache served (of ``input_tokens``),
            from the same entry, else (no ending) the run's :class:`~glossogen.eventlog.RunView`;
            None when the ending recorded none.
        cache_write_tokens: Input tokens written to the cache, likewise.
        cache_write_1h_tokens: Of those, the ones written for one hour, likewise.
    """

    agent_id: str
    role: str = ""
    team_id: str = ""
    model: str = ""
    provider: str = ""
    models: list[str] = field(default_factory=list)
    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    requests: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cache_write_1h_tokens: int | None = None

    def use(self, model: str, provider: str) -> None:
        """Record that the seat now runs ``model`` under ``provider``."""
        self.model, self.provider = model, provider
        key = f"{provider}:{model}"
        if key not in self.models:
            self.models.append(key)


@dataclass
class LogFacts:
    """What a run's event log says about the run as a whole.

    Attributes:
        started: The ``simulation_started`` line (upcast), or None when the log has none.
        agents: The roster, in registration order.
        status: ``simulation_ended.status``, or :data:`RUNNING` when the log has none.
        status_detail: ``simulation_ended.status_detail`` (``scenario_complete`` for 0.5 runs).
        started_at: Timestamp of the first line (UTC ISO 8601 as written), or None.
        ended_at: Timestamp of the last complete line, or None.
        rounds_played: Rounds with a recorded verdict; None when unknown.
        rounds_won: Rounds whose every verdict succeeded; None when unknown.
        total_messages: Channel messages, postmortems included; None when unknown.
        total_chars: Characters of those messages (composed text); None when unknown.
        total_cost_usd: Agents' plus in-run judge spend (USD); None when some call was not
            costed.
        judge_cost_usd: In-run judge spend (USD); None when unknown.
        duration_seconds: ``simulation_ended.duration_seconds``, else the seconds between the
            first and last timestamps of the log; None when neither is known.
        scanned: Whether the whole log was read (no usable ``simulation_ended``).
        bad_lines: Damaged complete lines among those read (head, tail, and what a missing
            figure sent the reader to): they did not parse, name an event type or validate.
        bad_line_numbers: Their 1-based line numbers in the log, in order.
        torn_line: The 1-based number of a last line with no newline (cut off mid-write, or
            still being written by a live process), which no reader here reads; None if none.
        judge_tokens: Tokens of the in-run judge's calls (``simulation_ended.judge_tokens``,
            else the run's view); None until read.
        log_url: The log the facts were read from.
        head_only: Whether the log was read only up to its ``simulation_started``
            (:func:`read_log_head`): ``started`` and ``started_at`` are the log's; ``status``,
            the roster and every figure above are unread.
    """

    started: dict[str, Any] | None = None
    agents: dict[str, AgentFacts] = field(default_factory=dict)
    status: str = RUNNING
    ended_status: str | None = None
    status_detail: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    rounds_played: int | None = None
    rounds_won: int | None = None
    total_messages: int | None = None
    total_chars: int | None = None
    total_cost_usd: float | None = None
    judge_cost_usd: float | None = None
    duration_seconds: float | None = None
    scanned: bool = False
    bad_lines: int = 0
    bad_line_numbers: list[int] = field(default_factory=list)
    torn_line: int | None = None
    judge_tokens: Tokens | None = None
    log_url: str = ""
    head_only: bool = False

    @functools.cached_property
    def resumes(self) -> int:
        """``run_resumed`` lines in the log (a derived run's first starts its own play).

        Found by a byte search the first time they are asked for (the run browser's badge):
        no table needs them, so reading the facts never walks the body for them.
        """
        if not self.log_url:
            return 0
        with open_log(self.log_url) as data:
            return sum(1 for _ in find_lines(data, "run_resumed", 0, complete_end(data)))

    def tokens(self) -> Tokens | None:
        """Tokens of the run's own calls, agents and judge; None when a count is not known."""
        total = Tokens()
        for agent in self.agents.values():
            counts = [getattr(agent, name) for name in TOKEN_FIELDS]
            if self.judge_tokens is None or None in counts:
                return None
            total.add_tokens(agent)
        if self.judge_tokens is None:
            return None
        total.add_tokens(self.judge_tokens)
        return total


def _timestamp(line: bytes) -> str | None:
    found = re.search(rb'"timestamp"\s*:\s*"([^"]+)"', line[:400])
    return found.group(1).decode() if found else None


def _seconds_between(first: str | None, last: str | None) -> float | None:
    if not first or not last:
        return None
    try:
        a = datetime.fromisoformat(first.replace("Z", "+00:00"))
        b = datetime.fromisoformat(last.replace("Z", "+00:00"))
    except ValueError:
        return None
    return round((b - a).total_seconds(), 3)


def _register(facts: LogFacts, obj: dict[str, Any]) -> None:
    agent_id = str(obj.get("agent_id") or "")
    if not agent_id:
        return
    agent = facts.agents.setdefault(agent_id, AgentFacts(agent_id))
    agent.role = str(obj.get("role") or agent.role)
    agent.team_id = str(obj.get("team_id") or agent.team_id)
    agent.use(str(obj.get("model") or ""), str(obj.get("provider") or ""))


def _apply_ended(facts: LogFacts, ended: dict[str, Any]) -> None:
    facts.status = str(ended.get("status") or RUNNING)
    facts.ended_status = str(ended["status"]) if ended.get("status") else None
    facts.status_detail = ended.get("status_detail")
    for name in ("rounds_played", "rounds_won", "total_messages", "total_chars"):
        setattr(facts, name, ended.get(name))
    facts.total_cost_usd = ended.get("total_cost_usd")
    facts.judge_cost_usd = ended.get("judge_cost_usd")
    facts.duration_seconds = ended.get("duration_seconds")
    for cost in ended.get("agent_costs") or []:
        agent = facts.agents.get(str(cost.get("agent_id")))
        if agent is not None:
            agent.cost_usd = cost.get("cost_usd")
            agent.input_tokens = cost.get("input_tokens")
            agent.output_tokens = cost.get("output_tokens")
            agent.requests = cost.get("requests")
            for name in CACHE_TOKEN_FIELDS:
                setattr(agent, name, cost.get(name))
    judge = ended.get("judge_tokens")
    if isinstance(judge, dict):
        facts.judge_tokens = Tokens(**{name: int(judge.get(name) or 0) for name in TOKEN_FIELDS})


def _cache_from_view(facts: LogFacts, view: RunView) -> None:
    """Fill the cache counts the ending did not carry from the run's own spend (its view)."""
    spend = view.spend
    for agent_id, agent in facts.agents.items():
        seat = spend.agents.get(agent_id)
        for name in CACHE_TOKEN_FIELDS:
            if getattr(agent, name) is None:
                setattr(agent, name, getattr(seat, name) if seat is not None else 0)
    if facts.judge_tokens is None:
        facts.judge_tokens = spend.judge_tokens


def _scan(
    facts: LogFacts, data: bytes | mmap.mmap, start: int, end: int, parser: LineParser
) -> None:
    """Fill the missing counts from ``data[start:end]``: messages, characters and verdicts.

    Only the event types a missing figure needs are searched for, and each line found is
    parsed and validated (a bad one is counted, never a message or a verdict).
    """
    facts.scanned = True
    if facts.total_messages is None or facts.total_chars is None:
        messages = chars = 0
        for at, line in find_lines(data, "message_sent", start, end):
            obj = parser.parse(line, at)
            if obj is not None:
                messages += 1
                chars += int(obj["chars"])
        if facts.total_messages is None:
            facts.total_messages = messages
        if facts.total_chars is None:
            facts.total_chars = chars
    if facts.rounds_played is None or facts.rounds_won is None:
        verdicts: dict[int, list[bool]] = {}
        for at, line in find_lines(data, "round_result_recorded", start, end):
            obj = parser.parse(line, at)
            if obj is not None:
                ok = bool(obj.get("success")) and not obj.get("void")
                verdicts.setdefault(int(obj.get("round_number") or 0), []).append(ok)
        if facts.rounds_played is None:
            facts.rounds_played = len(verdicts)
        if facts.rounds_won is None:
            facts.rounds_won = sum(1 for oks in verdicts.values() if oks and all(oks))


def _spend(
    facts: LogFacts, data: bytes | mmap.mmap, start: int, end: int, parser: LineParser
) -> None:
    """Sum spend and usage from the responses and judge calls of ``data[start:end]``.

    Each agent lacking tokens (no ``simulation_ended``, or one with no ``agent_costs`` entry:
    GlossoGen 0.5.x) gets its input and output tokens, requests (responses) and, when the run
    has no ``simulation_ended`` or recorded none for it, its cost (None when some response was
    not costed). A run with no ``simulation_ended`` also gets its totals: agents plus judge.
    """
    usage = sum_responses(data, start, end, parser)
    for agent_id in facts.agents:
        usage.setdefault(agent_id, [0, 0, 0, 0.0])
    running = facts.status == RUNNING
    for agent_id, agent in facts.agents.items():
        sums = usage[agent_id]
        if agent.input_tokens is None:
            agent.input_tokens, agent.output_tokens, agent.requests = sums[0], sums[1], sums[2]
            if running or agent.cost_usd is None:
                agent.cost_usd = sums[3]
    if not running:
        return
    judge: float | None = 0.0
    for at, line in find_lines(data, "judge_called", start, end):
        obj = parser.parse(line, at)
        if obj is not None:
            judge = add_cost(judge, obj.get("cost_usd"))
    cost: float | None = 0.0
    for sums in usage.values():
        cost = add_cost(cost, sums[3])
    facts.total_cost_usd, facts.judge_cost_usd = add_cost(cost, judge), judge


def roster_may_change(started: dict[str, Any] | None) -> bool:
    """Return whether a run's roster can change after its head (so its body is searched).

    True for a derived run that replaced a seat (``lineage.replaced_agent_id``), a config
    scheduling a ``swap_agent`` event, or a GlossoGen 0.5 config with a swap or an intern.
    """
    if not started:
        return True
    if (started.get("lineage") or {}).get("replaced_agent_id"):
        return True
    config = started.get("scenario_config") or {}
    events = config.get("scheduled_events") or []
    if any(isinstance(e, dict) and e.get("kind") == "swap_agent" for e in events):
        return True
    return config.get("swap_round") is not None or bool(config.get("intern_enabled"))


def _own_start(facts: LogFacts, data: bytes | mmap.mmap, body: int, end: int) -> int:
    """Where the calls a run made itself begin: ``body``, or a derived run's first resume.

    A derived log holds the source's events copied verbatim, then, from its first
    ``run_resumed`` on, what it played itself (:class:`~glossogen.eventlog.RunView`'s rule
    of ``inherited``): the copied rounds' requests and spend are never its own. A derived
    run that has not begun playing has none (``end``).
    """
    if not (facts.started or {}).get("lineage"):
        return body
    first = next(find_lines(data, "run_resumed", body, end), None)
    return end if first is None else first[0]


def _read_head(
    facts: LogFacts, data: bytes | mmap.mmap, end: int, parser: LineParser, untyped: list[int]
) -> int:
    """Read simulation_started and the roster, up to the first round, into ``facts``.

    The offsets of lines naming no event type are added to ``untyped``.

    Returns:
        The offset where the body (the rounds) begins.
    """
    pos = 0
    while pos < end:
        at = pos
        nl = data.find(b"\n", pos, end)
        line = data[pos:nl]
        pos = nl + 1
        kind = event_type(line)
        if kind is None and line.strip():
            untyped.append(at)
        if facts.started_at is None:
            facts.started_at = _timestamp(line)
        if kind in ("simulation_started", "agent_registered"):
            obj = parser.parse(line, at)
            if obj is None:
                continue
            if kind == "simulation_started":
                facts.started = facts.started or obj
            else:
                _register(facts, obj)
        elif kind is not None and kind.encode() in _HEAD_END:
            break
    return pos


def _read_tail(
    facts: LogFacts,
    data: bytes | mmap.mmap,
    body: int,
    end: int,
    parser: LineParser,
    untyped: list[int],
) -> dict[str, Any] | None:
    """Find the last simulation_ended among the last lines, noting the last timestamp.

    The offsets of lines naming no event type are added to ``untyped``.

    Returns:
        The ending, parsed, or None: none among the last lines, or one before the last
        ``run_resumed`` (the previous process's, which does not stand).
    """
    stop = end - 1
    for _ in range(_TAIL_LINES):
        if stop <= body - 1 or stop < 0:
            break
        a = data.rfind(b"\n", 0, stop) + 1
        line = data[a:stop]
        if facts.ended_at is None:
            facts.ended_at = _timestamp(line)
        kind = event_type(line)
        if kind is None and line.strip():
            untyped.append(a)
        if kind == "run_resumed":
            return None  # an ending before the last resume was the previous process's
        if kind == "simulation_ended":
            return parser.parse(line, a)
        stop = a - 1
    return None


def read_log_head(url: str) -> LogFacts:
    """Return the facts of the event log at ``url`` up to its ``simulation_started`` alone.

    The head is read as :func:`read_log_facts` reads it, line by line, and the reading stops at
    the first ``simulation_started`` that validates: ``started`` is None exactly when
    :func:`read_log_facts` leaves it None (a log that is not a run's). ``started_at`` and the
    seats registered before it are the log's; nothing else is read (``head_only``). For a
    reader that needs no other fact of a log (a cohort to evaluate reads each log whole later).

    Raises:
        FileNotFoundError: if the log does not exist.
        StorageError: if the storage is unreachable.
    """
    facts = LogFacts(log_url=url, head_only=True)
    parser = LineParser()
    with open_log(url) as data:
        end = complete_end(data)
        pos = 0
        while pos < end and facts.started is None:
            at = pos
            nl = data.find(b"\n", pos, end)
            line = data[pos:nl]
            pos = nl + 1
            if facts.started_at is None:
                facts.started_at = _timestamp(line)
            kind = event_type(line)
            if kind in ("simulation_started", "agent_registered"):
                obj = parser.parse(line, at)
                if obj is not None and kind == "simulation_started":
                    facts.started = obj
                elif obj is not None:
                    _register(facts, obj)
            elif kind is not None and kind.encode() in _HEAD_END:
                break
    return facts


def read_log_facts(url: str) -> LogFacts:
    """Return the run-level facts of the event log at ``url`` (head and tail where possible).

    Args:
        url: Local path or fsspec URL of a run's ``<scenario>.jsonl``.

    Returns:
        The facts; a line that does not parse or validate, or names no event type, costs
        only itself (counted in ``bad_lines``, numbered in ``bad_line_numbers``); a torn
        last line is not read (numbered in ``torn_line``).

    Raises:
        FileNotFoundError: if the log does not exist.
        StorageError: if the storage is unreachable.
    """
    facts = LogFacts(log_url=url)
    parser = LineParser()
    untyped: list[int] = []  # offsets of head and tail lines naming no event type
    with open_log(url) as data:
        end = complete_end(data)
        body = _read_head(facts, data, end, parser, untyped)
        # Body: only the rare roster changes, found by a byte search, only where possible.
        if roster_may_change(facts.started):
            for kind in ("agent_registered", "agent_swapped_mid_run"):
                for at, line in find_lines(data, kind, body, end):
                    obj = parser.parse(line, at)
                    if obj is not None:
                        _register(facts, obj)
        ended = _read_tail(facts, data, body, end, parser, untyped)
        if ended is not None:
            _apply_ended(facts, ended)
        counts = (facts.total_messages, facts.total_chars, facts.rounds_played, facts.rounds_won)
        if ended is None or None in counts:
            _scan(facts, data, body, end, parser)
        if ended is None or any(a.input_tokens is None for a in facts.agents.values()):
            _spend(facts, data, _own_start(facts, data, body, end), end, parser)
        facts.bad_line_numbers = sorted(
            line_number(data, at) for at in set(parser.bad_at) | set(untyped)
        )
        facts.torn_line = truncated_line(data)
    if ended is None and facts.started is not None:
        # No ending to read them from: the typed view sums what each process logged (rare: a
        # run being written or one that stopped).
        from glossogen.eventlog import RunView

        view = RunView.load(url)
        _cache_from_view(facts, view)
        if facts.duration_seconds is None:
            facts.duration_seconds = view.duration_seconds
    if facts.duration_seconds is None:
        facts.duration_seconds = _seconds_between(facts.started_at, facts.ended_at)
    facts.bad_lines = len(facts.bad_line_numbers)
    return facts
