"""The run page's value: one run read through :class:`~glossogen.eventlog.RunView`.

Everything the page shows comes from the view (status, verdicts, messages, spend, roster,
duration) and the run folder's JSON files (knobs, labels, lineage) and report; the page walks
the view's counted events only to lay them out in log order (who said what on which channel,
which tool was called, where a round, a postmortem, a swap or the fork point begins), each
round apart (:class:`RoundRow`). A ranked round's winners are the scenario's own reading
(``launch.ranked_winners``, ``scenario.outcome_word``), as the console and the flow's round
table say them.

Here the page as one value (:class:`RunPage`, :func:`build_run_page`); its rounds and their
items are laid out by ``_run_rounds.py``, its header's figures and seat table (and the live
page's summary) read by ``_run_header.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from glossogen.eventlog import (
    AgentRegistered,
    AgentSwappedMidRun,
    Event,
    PostmortemStarted,
    RoundEnded,
    RoundResultRecorded,
    RunResumed,
    RunView,
)
from glossogen.server._run_header import (
    RECORDED_TOTAL,
    SeatRow,
    cost_line,
    live_seconds,
    seat_rows,
)
from glossogen.server._run_header import live_summary as live_summary  # _live_routes' import
from glossogen.server._run_rounds import (
    EVERY_COLUMN,
    CaseField,
    Item,
    RoundRow,
    case_rows,
    event_item,
    event_roles,
    place_items,
    postmortem_channels,
    tool_rows,
)
from glossogen.storage import CONFIG, LABELS, RunFolder


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
        item = event_item(event, models, rulings)
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
            tools=tool_rows(own),
        )
        place_items(row, own)
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
