"""The run page's value: one run read through :class:`~glossogen.eventlog.RunView`.

Everything the page shows comes from the view (status, verdicts, messages, spend, roster,
duration) and the run folder's JSON files (knobs, labels, lineage) and report; the page walks
the view's counted events only to lay them out in log order (who said what on which channel,
which tool was called, where a round, a postmortem, a swap or the fork point begins), each
round apart (:class:`RoundRow`). A ranked round's winners are the scenario's own reading
(``launch.ranked_winners``, ``scenario.outcome_word``), as the console and the flow's round
table say them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from glossogen.eventlog import (
    AgentRegistered,
    AgentRunCycleFailed,
    AgentSwappedMidRun,
    Event,
    JudgeCalled,
    MessageSent,
    PostmortemStarted,
    RoundEnded,
    RoundResultRecorded,
    RoundStarted,
    RunResumed,
    RunView,
    SeatSpend,
    ToolCallInvoked,
    ToolResultReceived,
)
from glossogen.storage import CONFIG, LABELS, RunFolder

if TYPE_CHECKING:
    from glossogen.scenario import TeamOutcome

EVERY_COLUMN = "*"
"""The channel of an item shown in every column (a round, postmortem, swap or fork divider)."""

ACTIVITY = "activity"
"""The column of tool calls, their results, judge rulings and failed cycles."""


RECORDED_TOTAL = "the total GlossoGen 0.5 recorded; it recorded no seat's spend"
"""What the header adds to a GlossoGen 0.5 run's cost, whose seats' spend was never recorded."""

NOT_RECORDED = "not recorded (GlossoGen 0.5)"
"""A GlossoGen 0.5 run's seat spend cell."""


@dataclass
class Item:
    """One thing the page shows, in log order.

    Attributes:
        kind: ``message``, ``tool_call``, ``tool_result``, ``judge``, ``failure`` or
            ``divider``.
        column: The channel id, :data:`ACTIVITY`, or :data:`EVERY_COLUMN`.
        round_number: The event's round; phase its phase.
        fields: What the template shows (texts are raw: the template escapes them).
    """

    kind: str
    column: str
    round_number: int
    phase: str
    fields: dict[str, Any]
    event_id: str = ""


@dataclass
class SeatRow:
    """One seat: model, settings, requests, tokens, spend (USD), failed cycles."""

    agent_id: str
    role: str
    team_id: str
    model: str
    provider: str
    models: list[str]
    settings: dict[str, Any]
    requests: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    failures: int


@dataclass
class ToolRow:
    """One tool call of a round, with its result (folded on the page)."""

    agent: str
    tool: str
    args: str
    result: str | None = None
    refused: bool = False
    event_id: str = ""


@dataclass
class RoundRow:
    """One round: verdicts (per team), void, trigger, the case, and what was said and done.

    Attributes:
        verdicts: Each team's outcome (``won``, ``eligible``, ``lost``, ``void``) as
            :func:`glossogen.launch.team_outcomes` reads it for MCP's ``get_run``, the export
            and the console: the page cannot say another.
        messages: Main-phase messages per channel (every channel of the run, in order).
        postmortem: Postmortem messages per channel (channels that held one).
        tools: Tool calls in log order, each with its result.
        notes: Judge rulings, failed cycles, swaps and resumes, in log order.
        case: The round's case as table rows (the answer key), or None.
        void_cause: Why a void round is void (``turn_limit``, ``spend_cap``,
            ``provider_failed``...), which its main phase's end (``trigger``) may not say.
    """

    round_number: int
    verdicts: list[TeamOutcome]
    void: bool
    won: bool
    trigger: str | None = None
    void_cause: str | None = None
    case: list[CaseField] | None = None
    messages: dict[str, list[Item]] = field(default_factory=dict)
    postmortem: dict[str, list[Item]] = field(default_factory=dict)
    tools: list[ToolRow] = field(default_factory=list)
    notes: list[Item] = field(default_factory=list)

    @property
    def recorded(self) -> bool:
        """True once the round's verdict is in the log."""
        return bool(self.verdicts) or self.void

    @property
    def outcome(self) -> str:
        """``won``, ``lost``, ``void`` or ``playing`` (the picker's colour)."""
        if self.void:
            return "void"
        if not self.verdicts:
            return "playing"
        return "won" if self.won else "lost"

    @property
    def ranked_winner(self) -> str | None:
        """The team(s) that won a multi-team round (``a``, ``a, b`` when tied), else None."""
        if len(self.verdicts) < 2:
            return None
        return ", ".join(v.team_id for v in self.verdicts if v.outcome == "won") or None


@dataclass
class RunPage:
    """What the run page shows of one run."""

    folder: RunFolder
    group: str
    status: str
    resumable: bool
    live: bool
    round_count: int | None
    rounds_played: int
    rounds_won: int
    total_cost_usd: float | None
    judge_cost_usd: float | None
    inherited_cost_usd: float | None
    duration_seconds: float
    live_seconds: float
    """For a live run, its duration up to its last event plus the time since (what the header
    counts on from); the duration otherwise."""
    tokens: str
    """The header's token line: agents' and judge's, cache reads and writes apart."""
    knobs: str
    labels: dict[str, Any]
    lineage: dict[str, Any] | None
    derived_runs: list[str]
    resumes: int
    seats: list[SeatRow]
    channels: list[str]
    items: list[Item]
    rounds: list[RoundRow]
    metrics: list[dict[str, Any]] = field(default_factory=list)
    charts: list[tuple[str, str]] = field(default_factory=list)
    """The evaluation report's charts (title, base64 PNG), drawn by the report's own code."""
    selected_round: int | None = None
    """The round the page opens on (``?round=``; default the last one)."""
    postmortems: bool = False
    """Whether the run held any postmortem."""
    recorded_total: bool = False
    """A GlossoGen 0.5 run: its log recorded one total cost and no call's, so no seat's spend
    is known (the seat table says so rather than ``unknown``)."""
    main_channels: list[str] = field(default_factory=list)
    """The channels a round's messages are laid out in (those that carry more than
    postmortems), in order: a live round the page did not hold gets these columns."""
    last_event_id: str = ""
    error: str | None = None
    books: list[str] = field(default_factory=list)
    """One line per rule the run's books break (``glossogen verify``); empty when they balance."""
    judge_flips: list[str] = field(default_factory=list)
    """One line per ruling the last ``glossogen rejudge`` flipped (empty: none, or never)."""
    damage: list[str] = field(default_factory=list)
    """One line per folder file that cannot be read (``config.json``, ``labels.json``), as the
    run list's note names it; the page shows what the log holds."""

    @property
    def cost(self) -> str:
        """The header's cost line (the live page refreshes it from :func:`live_summary`)."""
        line = cost_line(self.total_cost_usd, self.judge_cost_usd, self.inherited_cost_usd)
        return line + (f" · {RECORDED_TOTAL}" if self.recorded_total else "")


def _message(event: MessageSent, models: dict[str, str]) -> Item:
    fields = {
        "sender": event.sender_id,
        "model": models.get(event.sender_id, ""),
        "text": event.text,
        "delivered": event.delivered_text if event.delivered_text != event.text else None,
        "chars": event.chars,
    }
    return Item("message", event.channel_id, event.round_number, event.phase, fields)


def _item(event: Event, models: dict[str, str], rulings: frozenset[str]) -> Item | None:
    """The page item of one event, or None for an event the page does not lay out."""
    r, p = event.round_number, event.phase
    fields: dict[str, Any]
    if isinstance(event, MessageSent):
        return _message(event, models)
    if isinstance(event, ToolCallInvoked):
        args = json.dumps(event.args, ensure_ascii=False)
        fields = {"agent": event.agent_id, "tool": event.tool_name, "args": args}
        return Item("tool_call", ACTIVITY, r, p, fields)
    if isinstance(event, ToolResultReceived):
        result = event.refused or json.dumps(event.result, ensure_ascii=False, default=str)
        fields = {
            "agent": event.agent_id,
            "tool": event.tool_name,
            "result": result,
            "refused": event.refused is not None,
        }
        return Item("tool_result", ACTIVITY, r, p, fields)
    if isinstance(event, JudgeCalled):
        fields = {"success": event.success, "reason": event.reason, "model": event.model}
        return Item("judge", ACTIVITY, r, p, fields)
    if isinstance(event, AgentRunCycleFailed):
        fields = {"agent": event.agent_id, "kind": event.error_kind, "error": event.error}
        return Item("failure", ACTIVITY, r, p, fields)
    if isinstance(event, RoundStarted) and p == "main":
        return Item("divider", EVERY_COLUMN, r, p, {"label": f"round {r}"})
    if isinstance(event, PostmortemStarted):
        return Item("divider", EVERY_COLUMN, r, p, {"label": f"round {r} postmortem"})
    if isinstance(event, AgentSwappedMidRun):
        label = f"{event.agent_id} swapped to {event.provider}:{event.model}"
        return Item("divider", EVERY_COLUMN, r, p, {"label": label})
    if isinstance(event, RunResumed):
        label = f"resumed after round {event.after_round}"
        return Item("divider", EVERY_COLUMN, r, p, {"label": label})
    if getattr(event, "event_type", "") in rulings:  # the scenario's own rulings (its hook)
        data = event.model_dump(mode="json", exclude=set(Event.model_fields))
        fields = {"success": data.get("success"), "reason": data.get("reason"), "model": None}
        return Item("judge", ACTIVITY, r, p, fields)
    return None


def seat_rows(view: RunView) -> list[SeatRow]:
    """Every seat of the run with its model, settings, requests, tokens, spend and failures."""
    settings: dict[str, dict[str, Any]] = {}
    failures: dict[str, int] = {}
    for event in view.counted:
        if isinstance(event, AgentRegistered):
            settings[event.agent_id] = dict(event.model_settings)
        elif isinstance(event, AgentRunCycleFailed):
            failures[event.agent_id] = failures.get(event.agent_id, 0) + 1
    spend = view.spend
    seats = []
    for agent_id, seat in view.roster.items():
        own = spend.agents.get(agent_id) or SeatSpend(agent_id)
        seats.append(
            SeatRow(
                **asdict(seat),  # agent_id, role, team_id, model, provider, models
                settings=settings.get(agent_id, {}),
                requests=own.requests,
                input_tokens=own.input_tokens,
                output_tokens=own.output_tokens,
                cost_usd=own.cost_usd,
                failures=failures.get(agent_id, 0),
            )
        )
    return seats


def usd(value: float | None) -> str:
    """A USD figure as the pages show it (``unknown`` for a cost not known)."""
    if value is None:
        return "unknown"
    return f"${value:.4f}" if value < 100 else f"${value:,.2f}"


def cost_line(total: float | None, judge: float | None, inherited: float | None) -> str:
    """The run header's cost: total, the judge's share, a derived run's inherited spend."""
    line = f"{usd(total)} (judge {usd(judge)}"
    return line + (f"; inherited {usd(inherited)})" if inherited is not None else ")")


def live_summary(view: RunView) -> dict[str, Any]:
    """What the live page refreshes as a run streams: status, header cost and tokens, seats.

    ``outcomes``: each recorded round's team outcomes by the shared rule
    (:func:`glossogen.launch.team_outcomes`: a ranked round's winner), as the finished page says.
    """
    from glossogen.launch import team_outcomes

    spend = view.spend
    inherited = view.inherited_spend.total_cost_usd if view.derived else None
    return {
        "status": view.status,
        "resumable": view.resumable,
        "duration_seconds": live_seconds(view, datetime.now(UTC)),
        "total_cost_usd": spend.total_cost_usd,
        "cost": cost_line(spend.total_cost_usd, spend.judge_cost_usd, inherited),
        "tokens": spend.tokens.summary(),
        "seats": [
            {
                "agent_id": s.agent_id,
                "requests": s.requests,
                "tokens": f"{s.input_tokens} / {s.output_tokens}",
                "spend": usd(s.cost_usd),
                "failures": s.failures,
            }
            for s in seat_rows(view)
        ],
        "outcomes": {
            str(n): [
                {"team_id": t.team_id, "outcome": t.outcome, "reason": t.reason} for t in teams
            ]
            for n, teams in team_outcomes(view).items()
        },
    }


@dataclass
class CaseField:
    """One field of a round's case as the page's table shows it.

    Attributes:
        name: The field (nested objects by dotted name).
        text: Its value as one line (empty when ``rows`` holds it).
        header: A list of objects' keys, the columns of its own small table.
        rows: That table's rows, one per object (values as text).
    """

    name: str
    text: str = ""
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)


def _plain(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, dict):
        return " ".join(f"{k}={_plain(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value)
    return str(value)


def case_rows(case: dict[str, Any]) -> list[CaseField]:
    """A round's case as table rows, readable in the page rather than raw JSON.

    A nested object is listed by dotted field; a list of objects becomes a small table (a row
    per object, a column per key, a nested value written ``key=value``); anything else is one
    line of text.
    """
    rows: list[CaseField] = []

    def walk(value: Any, name: str) -> None:
        if isinstance(value, dict) and value:
            for key, inner in value.items():
                walk(inner, f"{name}.{key}" if name else str(key))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            header = list(dict.fromkeys(k for v in value for k in v))
            table = [[_plain(v.get(k)) for k in header] for v in value]
            rows.append(CaseField(name, header=header, rows=table))
        else:
            rows.append(CaseField(name, text=_plain(value)))

    walk(case, "")
    return rows


def _tool_rows(items: list[Item]) -> list[ToolRow]:
    """Each tool call of a round with the result that answered it (by order, per seat/tool)."""
    rows: list[ToolRow] = []
    open_calls: list[ToolRow] = []
    for item in items:
        f = item.fields
        if item.kind == "tool_call":
            row = ToolRow(f["agent"], f["tool"], f["args"], event_id=item.event_id)
            rows.append(row)
            open_calls.append(row)
        elif item.kind == "tool_result":
            match = next(
                (r for r in open_calls if (r.agent, r.tool) == (f["agent"], f["tool"])), None
            )
            if match is None:  # a result whose call the page did not see (a resumed round)
                match = ToolRow(f["agent"], f["tool"], "", event_id=item.event_id)
                rows.append(match)
            else:
                open_calls.remove(match)
            match.result, match.refused = f["result"], bool(f.get("refused"))
    return rows


def event_roles(scenario: str) -> tuple[str | None, frozenset[str]]:
    """The ``event_type`` of the scenario's case event and of its rulings (its own hooks).

    ``Scenario.case_event`` and ``Scenario.ruling_events``; none when it is not installed.
    """
    from glossogen.scenario import UnknownScenarioError, load_scenario

    try:
        cls = load_scenario(scenario)
    except UnknownScenarioError:
        return None, frozenset()
    return cls.case_type(), cls.ruling_types()


def postmortem_channels(scenario: str, config: dict[str, Any]) -> set[str]:
    """The scenario's postmortem-phase channels for the recorded knobs.

    None when the scenario is not installed.
    """
    from glossogen.evaluation import scenario_instance
    from glossogen.scenario import UnknownScenarioError, load_scenario

    try:
        cls = load_scenario(scenario)
    except UnknownScenarioError:
        return set()
    instance, _ = scenario_instance(cls, config)
    return {c.channel_id for c in instance.channels() if c.phase == "postmortem"}


def live_seconds(view: RunView, now: datetime) -> float:
    """The seconds a run has played as of ``now``.

    Its duration, plus, while it is running, the time since its last event (the page counts on
    from there).
    """
    if view.status != "running" or not view.events:
        return view.duration_seconds
    since = (now - view.events[-1].timestamp).total_seconds()
    return round(view.duration_seconds + max(0.0, since), 3)


def _place(row: RoundRow, own: list[Item]) -> None:
    """Lay out a round's items: messages in their columns, the rest among its notes.

    The notes are its judge calls, failures and dividers, but for its own opening divider and
    the postmortem's.
    """
    for i in own:
        if i.kind == "message":
            place = row.postmortem if i.phase == "postmortem" else row.messages
            place.setdefault(i.column, []).append(i)
        elif i.kind in ("judge", "failure") or (
            i.kind == "divider" and "postmortem" not in i.fields["label"]
        ):
            if not (i.kind == "divider" and i.fields["label"] == f"round {row.round_number}"):
                row.notes.append(i)


def build_run_page(
    folder: RunFolder, view: RunView, group: str, now: datetime | None = None
) -> RunPage:
    """Lay out one run's page from its view, its folder's JSON files and its report.

    ``now`` (default: the clock) is when a live run's duration is counted to.
    """
    from glossogen.evaluation import read_report
    from glossogen.launch import team_outcomes
    from glossogen.verify import books_of

    started = view.started
    damage: list[str] = []
    config = _read_or_note(folder, CONFIG, damage)
    if config is None:
        config = started.scenario_config if started else {}
    models: dict[str, str] = {}
    triggers: dict[int, str] = {}
    causes: dict[int, str] = {}
    cases: dict[int, list[CaseField]] = {}
    items: list[Item] = []
    fork_point = (started.lineage or {}).get("after_round") if started else None
    case_type, rulings = event_roles(folder.scenario)
    for event in view.counted:
        if isinstance(event, AgentRegistered | AgentSwappedMidRun):
            models[event.agent_id] = f"{event.provider}:{event.model}"
        elif isinstance(event, RoundEnded):
            triggers[event.round_number] = event.trigger
        elif isinstance(event, RoundResultRecorded) and event.reason.startswith("void ("):
            # The engine records a void round's cause as ``void (<trigger>): <reason>``; the
            # view keeps the reason only, so the cause is read here (a turn limit, a spend cap).
            causes[event.round_number] = event.reason.removeprefix("void (").partition(")")[0]
        elif event.event_type == case_type:  # the scenario's case event (its hook)
            case = event.model_dump(mode="json", exclude=set(Event.model_fields))
            cases[event.round_number] = case_rows(case)
        if isinstance(event, RunResumed) and fork_point is not None and view.derived:
            source = ((started.lineage if started else None) or {}).get("source_run_id")
            label = f"fork point: after round {fork_point} of {source}"
            items.append(
                Item("divider", EVERY_COLUMN, event.round_number, "setup", {"label": label})
            )
            fork_point = None
            continue
        item = _item(event, models, rulings)
        if item is not None:
            item.event_id = event.event_id
            items.append(item)
    spend = view.spend
    seats = seat_rows(view)
    channels = list(started.channel_ids) if started else []
    for item in items:
        if item.kind == "message" and item.column not in channels:
            channels.append(item.column)
    # A postmortem channel (the scenario's, or one that held postmortems) has no column among
    # a round's messages, unless main-phase messages were sent on it.
    talk = {i.column for i in items if i.kind == "message" and i.phase != "postmortem"}
    after = postmortem_channels(folder.scenario, started.scenario_config if started else {})
    after |= {e.channel_id for e in view.counted if isinstance(e, PostmortemStarted)}
    after |= {i.column for i in items if i.kind == "message" and i.phase == "postmortem"}
    main_channels = [c for c in channels if c in talk or c not in after]
    recorded = view.verdicts
    # The one reading of who won a round (MCP's get_run, the export and the console use it).
    verdicts = team_outcomes(view)
    numbers = sorted(set(recorded) | {i.round_number for i in items if i.round_number > 0})
    rounds = []
    for n in numbers:
        own = [i for i in items if i.round_number == n]
        mine, void = recorded.get(n, ([], False))
        row = RoundRow(
            round_number=n,
            verdicts=verdicts.get(n, []),
            void=void,
            won=bool(mine) and not void and all(v.success for v in mine),
            trigger=triggers.get(n),
            void_cause=causes.get(n) if void else None,
            case=cases.get(n),
            messages={c: [] for c in main_channels},
            tools=_tool_rows(own),
        )
        _place(row, own)
        rounds.append(row)
    report = read_report(folder.url, folder.scenario)
    metrics = []
    charts: list[tuple[str, str]] = []
    if report is not None:
        from glossogen.evaluation import report_charts

        charts = report_charts(report)
        for name, entry in report.metrics.items():
            metrics.append(
                {"name": name, "score": entry.score, "unit": entry.unit, "summary": entry.summary}
            )
    ended = view.ended
    count = config.get("round_count") if isinstance(config, dict) else None
    return RunPage(
        folder=folder,
        group=group,
        status=view.status,
        resumable=view.resumable,
        live=view.status == "running",
        round_count=count if isinstance(count, int) else None,
        rounds_played=view.rounds_played,
        rounds_won=view.rounds_won,
        total_cost_usd=spend.total_cost_usd,
        judge_cost_usd=spend.judge_cost_usd,
        inherited_cost_usd=view.inherited_spend.total_cost_usd if view.derived else None,
        duration_seconds=view.duration_seconds,
        live_seconds=live_seconds(view, now or datetime.now(UTC)),
        tokens=spend.tokens.counts(),
        knobs=json.dumps(config, indent=2, ensure_ascii=False, sort_keys=True),
        labels=_read_or_note(folder, LABELS, damage) or {},
        lineage=started.lineage if started else None,
        derived_runs=[],
        # a derived run (fork, swap) begins with a run_resumed of its own: that is no resume
        resumes=sum(1 for e in view.events if isinstance(e, RunResumed))
        - int(bool(started and started.lineage)),
        seats=seats,
        channels=channels,
        items=items,
        rounds=rounds,
        metrics=metrics,
        charts=charts,
        selected_round=rounds[-1].round_number if rounds else None,
        main_channels=main_channels,
        recorded_total=spend.recorded_total_usd is not None,
        postmortems=any(isinstance(e, PostmortemStarted) for e in view.counted),
        last_event_id=view.events[-1].event_id if view.events else "",
        error=ended.error if ended else None,
        books=[rule.text for rule in books_of(view, folder)],
        judge_flips=_flip_lines(folder),
        damage=damage,
    )


def within_runs_dir(folder: RunFolder, line: str) -> str:
    """``line`` with the server's runs directory cut from the paths it names.

    As the run list's notes name a file (``veyru/1796446580/labels.json ...``): a server's own
    folder is not shown to its callers (:meth:`~glossogen.storage.RunFolder.within_runs_dir`).
    """
    return folder.within_runs_dir(line)


def _read_or_note(folder: RunFolder, name: str, damage: list[str]) -> dict[str, Any] | None:
    """The JSON object ``name`` of the run's folder (None when missing, or unreadable).

    A file that cannot be read (not UTF-8 text, not JSON, not an object) adds its one line to
    ``damage``, in the list's words: the page shows the run and says what is damaged.
    """
    value, damaged = folder.read_object_noted(name)
    if damaged is not None:
        damage.append(damaged)
    return value


def _flip_lines(folder: RunFolder) -> list[str]:
    from glossogen.rejudge import flip_lines, read_flips

    flips = read_flips(folder)
    return flip_lines(flips) if flips is not None else []
