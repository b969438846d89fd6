"""The run-reading tools, all through ``RunView``.

List runs (the export's filters, paged), one run's detail, its events and one seat's
transcript. A run is read from its log, as the run page and REST's events and summary read it:
a file of its folder that cannot be read (``labels.json`` not UTF-8 text) is named in the
result's ``warnings`` in the run list's words, never a refusal (:func:`folder_files`).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import StrictInt

from glossogen.eventlog import (
    Event,
    InjectionDelivered,
    MessageSent,
    ToolCallInvoked,
    ToolResultReceived,
    WorldEventDelivered,
)
from glossogen.mcp._base import (
    LIST_ITEMS,
    PAGE_CHARS,
    TEXT_CHARS,
    ToolBase,
    checked_page_size,
    cursor_offset,
)
from glossogen.mcp._results import (
    EventPage,
    EventRow,
    RoundOutcome,
    RunDetail,
    RunPage,
    RunRow,
    SeatDetail,
    TeamVerdict,
    Transcript,
    TranscriptEntry,
    TranscriptRound,
)
from glossogen.storage import CONFIG, LABELS, RunFolder, StorageError

DERIVED_FROM = {"source_run_dir": "source_run_id", "donor_run_dir": "donor_run_id"}
"""The lineage's run folders (paths as the derived run's log records them) and the run id
``get_run`` gives in place of each: never a path of the server."""

WHOLE_FIELDS = frozenset({"id", "timestamp"})
"""Fields ``read_run_events`` never cuts, at any depth, besides every ``*_id``: what a caller
matches events by (ids and times)."""


def _whole(key: str) -> bool:
    return key in WHOLE_FIELDS or key.endswith("_id")


def cut_texts(value: Any, limit: int, path: str, truncated: dict[str, int]) -> Any:
    """``value`` with every text longer than ``limit`` cut, nested ones too, never an id.

    Each cut text's full length goes into ``truncated`` under its path (``messages[0].parts[1]
    .content``); a list longer than :data:`LIST_ITEMS` keeps its first items and its full
    length is noted the same way.
    """
    if isinstance(value, str):
        if len(value) > limit:
            truncated[path] = len(value)
            return value[:limit]
        return value
    if isinstance(value, dict):
        return {
            k: v if _whole(k) else cut_texts(v, limit, f"{path}.{k}" if path else k, truncated)
            for k, v in value.items()
        }
    if isinstance(value, list):
        if len(value) > LIST_ITEMS:
            truncated[path] = len(value)
        return [
            cut_texts(item, limit, f"{path}[{i}]", truncated)
            for i, item in enumerate(value[:LIST_ITEMS])
        ]
    return value


def folder_files(folder: RunFolder) -> tuple[dict[str, Any] | None, dict[str, Any], list[str]]:
    """The run's ``config.json`` and ``labels.json``, each read once, and why each unreadable is.

    As the run page reads them (:meth:`~glossogen.storage.RunFolder.read_object_noted`): a
    file that cannot be read is None (labels: empty) and one line of the returned warnings,
    the file named within the runs directory (``veyru/1796446580/labels.json is not UTF-8
    text (byte 0xff at offset 6)``), config's first.
    """
    config, config_damage = folder.read_object_noted(CONFIG)
    labels, labels_damage = folder.read_object_noted(LABELS)
    return config, labels or {}, [d for d in (config_damage, labels_damage) if d is not None]


def served_lineage(lineage: dict[str, Any] | None, scenario: str) -> dict[str, Any] | None:
    """A derived run's lineage as ``get_run`` gives it: its run folders by run id, never a path.

    The log records the source's and the donor's folders (``source_run_dir``,
    ``donor_run_dir``: paths on the server) beside the source's ``source_run_id``; each folder
    is given as the run id it names instead (``donor_run_id``: ``veyru/1796446580``, the
    ``scenario`` run's folder read as :meth:`~glossogen.storage.RunFolder.holding` reads it),
    the id the log records kept where it has one.
    """
    if lineage is None:
        return None
    served: dict[str, Any] = {}
    for key, value in lineage.items():
        if key not in DERIVED_FROM:
            served[key] = value
        elif isinstance(value, str) and value and DERIVED_FROM[key] not in lineage:
            served[DERIVED_FROM[key]] = RunFolder.holding(value, scenario).run_id
    return served


class RunReading(ToolBase):
    """Reading runs of the served directory."""

    def list_runs(
        self,
        scenario: list[str] | None = None,
        labels: list[str] | None = None,
        status: str | None = None,
        run_id_contains: str | None = None,
        knob: list[str] | None = None,
        cursor: str | None = None,
        page_size: StrictInt | None = None,
    ) -> RunPage:
        """Runs matching every filter (the export's), oldest first, one page at a time.

        A run that cannot be read is left out of ``runs`` and named in ``unreadable_runs``
        with why (as ``export_runs`` names it).
        """
        from glossogen.export import (
            FilterSelection,
            RunsDirError,
            SelectionError,
            select_runs,
            served_line,
        )
        from glossogen.export._select import without_runs_dir

        start, size = cursor_offset(cursor, "list_runs"), checked_page_size(page_size)
        selection = FilterSelection(
            scenario=scenario or None,
            labels=labels or None,
            status=status,
            run_id_contains=run_id_contains,
            knob=knob or None,
        )
        try:
            selected = select_runs(self.runs_dir, selection)
        except (RunsDirError, SelectionError, StorageError) as exc:  # never the server's path
            raise ToolError(served_line(exc, self.runs_dir)) from None
        rows = [
            RunRow(
                run_id=r.run_id,
                scenario=r.scenario,
                status=r.status,
                labels=r.labels,
                rounds_played=r.facts.rounds_played,
                rounds_won=r.facts.rounds_won,
                total_messages=r.facts.total_messages,
                total_chars=r.facts.total_chars,
                total_cost_usd=r.facts.total_cost_usd,
                duration_seconds=r.facts.duration_seconds,
                started_at=r.facts.started_at,
                derived=r.lineage is not None,
            )
            for r in selected.records
        ]
        end = start + size
        unreadable = selected.unreadable.items()
        skipped = {r: without_runs_dir(why, self.runs_dir) for r, why in unreadable}
        return RunPage(runs=rows[start:end], total=len(rows),
                       next_cursor=str(end) if end < len(rows) else None,
                       unreadable_runs=skipped)  # fmt: skip

    def get_run(self, run_id: str) -> RunDetail:
        """A run's status, rounds and verdicts, cost by seat and judge, seats, lineage, scores.

        Read from the run's log; a file of its folder that cannot be read is named in
        ``warnings`` (:func:`folder_files`).
        """
        from glossogen.evaluation import read_report
        from glossogen.launch import team_outcomes

        folder = self._folder(run_id, unstarted=True)
        config, labels, warnings = folder_files(folder)
        if not folder.has_log():  # claimed, its player has not begun the log yet
            return RunDetail(
                run_id=folder.run_id,
                scenario=folder.scenario,
                status="queued",
                rounds_planned=(config or {}).get("round_count"),
                rounds_played=0,
                rounds_won=0,
                rounds=[],
                seats=[],
                total_cost_usd=0.0,
                judge_cost_usd=0.0,
                inherited_cost_usd=0.0,
                duration_seconds=0.0,
                error=None,
                labels=labels,
                lineage=None,
                evaluation={},
                damaged_lines=0,
                warnings=warnings,
            )
        view = self._view(folder)
        spend = view.spend
        rounds = [
            RoundOutcome(
                round_number=n,
                void=teams[0].outcome == "void",
                won=all(t.success and t.outcome != "void" for t in teams),
                winners=[t.team_id for t in teams if t.won],
                verdicts=[TeamVerdict(won=t.won, **asdict(t)) for t in teams],
            )
            for n, teams in team_outcomes(view).items()
        ]
        seats = []
        for agent_id, seat in view.roster.items():
            own = spend.agents.get(agent_id)
            seats.append(
                SeatDetail(
                    agent_id=agent_id,
                    role=seat.role,
                    team_id=seat.team_id,
                    model=seat.model,
                    provider=seat.provider,
                    models=list(seat.models),
                    cost_usd=own.cost_usd if own else 0.0,
                    requests=own.requests if own else 0,
                )
            )
        started = view.started
        ended = view.ended
        report = read_report(folder.url, folder.scenario)
        scores = {n: e.score for n, e in report.metrics.items()} if report else {}
        planned = started.scenario_config.get("round_count") if started else None
        return RunDetail(
            run_id=folder.run_id,
            scenario=folder.scenario,
            status=view.status,
            rounds_planned=planned,
            rounds_played=view.rounds_played,
            rounds_won=view.rounds_won,
            rounds=rounds,
            seats=seats,
            total_cost_usd=spend.total_cost_usd,
            judge_cost_usd=spend.judge_cost_usd,
            inherited_cost_usd=view.inherited_spend.total_cost_usd,
            duration_seconds=view.duration_seconds,
            error=ended.error if ended else None,
            labels=labels,
            lineage=served_lineage(started.lineage, folder.scenario) if started else None,
            evaluation=scores,
            damaged_lines=view.damaged_lines,
            warnings=warnings,
        )

    def read_run_events(
        self,
        run_id: str,
        event_types: list[str] | None = None,
        round_number: StrictInt | None = None,
        phase: str | None = None,
        channel_id: str | None = None,
        agent_id: str | None = None,
        cursor: str | None = None,
        page_size: StrictInt | None = None,
        max_text_chars: StrictInt = TEXT_CHARS,
    ) -> EventPage:
        """A run's events in log order (superseded attempts included), filtered and paged.

        Read from the run's log; a file of its folder that cannot be read is named in
        ``warnings``, as ``get_run`` names it.
        """
        start, size = cursor_offset(cursor, "read_run_events"), checked_page_size(page_size)
        if max_text_chars < 1:
            raise ToolError(f"max_text_chars must be at least 1, got {max_text_chars}")
        folder = self._folder(run_id)
        view = self._view(folder)
        wanted = set(event_types or [])
        matched: list[tuple[int, Event]] = []
        for index, event in enumerate(view.events):
            if wanted and event.event_type not in wanted:
                continue
            if round_number is not None and event.round_number != round_number:
                continue
            if phase is not None and event.phase != phase:
                continue
            if channel_id is not None and getattr(event, "channel_id", None) != channel_id:
                continue
            if agent_id is not None and agent_id not in (
                getattr(event, "agent_id", None),
                getattr(event, "sender_id", None),
            ):
                continue
            matched.append((index, event))
        rows: list[EventRow] = []
        chars = 0
        for index, event in matched[start : start + size]:
            fields = event.model_dump(
                mode="json", exclude={"event_type", "round_number", "phase", "schema_version"}
            )
            truncated: dict[str, int] = {}
            row = EventRow(
                index=index,
                event_type=event.event_type,
                round_number=event.round_number,
                phase=event.phase,
                fields=cut_texts(fields, max_text_chars, "", truncated),
                truncated=truncated,
            )
            chars += len(row.model_dump_json())
            if rows and chars > PAGE_CHARS:  # the page is full: this row opens the next one
                break
            rows.append(row)
        end = start + len(rows)
        return EventPage(
            run_id=folder.run_id,
            events=rows,
            matched=len(matched),
            next_cursor=str(end) if end < len(matched) else None,
            warnings=folder_files(folder)[2],
        )

    def get_agent_transcript(self, run_id: str, agent_id: str) -> Transcript:
        """One seat's briefings, messages and tool calls, round by round (events that count).

        Read from the run's log; a file of its folder that cannot be read is named in
        ``warnings``, as ``get_run`` names it.
        """
        folder = self._folder(run_id)
        view = self._view(folder)
        if agent_id not in view.roster:
            raise ToolError(
                f"run {run_id} has no agent {agent_id!r} (agents: {', '.join(view.roster)})"
            )
        rounds: dict[int, list[TranscriptEntry]] = {}
        for event in view.counted:
            entry: TranscriptEntry | None = None
            match event:
                case InjectionDelivered() if event.agent_id == agent_id:
                    entry = TranscriptEntry(kind="briefing", phase=event.phase, text=event.text)
                case WorldEventDelivered() if event.agent_id == agent_id:
                    entry = TranscriptEntry(kind="world_event", phase=event.phase, text=event.text)
                case MessageSent() if event.sender_id == agent_id:
                    entry = TranscriptEntry(
                        kind="message",
                        phase=event.phase,
                        channel_id=event.channel_id,
                        text=event.text,
                    )
                case ToolCallInvoked() if event.agent_id == agent_id:
                    entry = TranscriptEntry(
                        kind="tool_call",
                        phase=event.phase,
                        tool_name=event.tool_name,
                        text=str(event.args),
                    )
                case ToolResultReceived() if event.agent_id == agent_id:
                    entry = TranscriptEntry(
                        kind="tool_result",
                        phase=event.phase,
                        tool_name=event.tool_name,
                        text=str(event.result),
                    )
            if entry is not None:
                rounds.setdefault(event.round_number, []).append(entry)
        return Transcript(
            run_id=folder.run_id,
            agent_id=agent_id,
            rounds=[TranscriptRound(round_number=n, entries=e) for n, e in sorted(rounds.items())],
            warnings=folder_files(folder)[2],
        )
