"""The MCP tools: each one a library call the CLI makes too, its refusal the CLI's one line.

Runs are read through ``RunStore``/``RunFolder``/``RunView`` (never a new parse of the log),
listed through the export's selection, scored by the ``evaluate`` flow, derived by
``prepare_fork``, planned by ``plan_run``/``plan_resume``. A refusal raises ``ToolError`` with
the message ``glossogen`` would print after ``glossogen: error:``; nothing is claimed or written
before every check has passed. No result carries a credential's value, only its variable name.
"""

from __future__ import annotations

import math
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from glossogen.catalog import PROVIDER_SPECS, Provider
from glossogen.derive import DeriveError, ForkRequest, prepare_fork
from glossogen.eventlog import (
    Event,
    InjectionDelivered,
    MessageSent,
    RunView,
    ToolCallInvoked,
    ToolResultReceived,
    WorldEventDelivered,
)
from glossogen.knobs import ConfigError, knobs_json_schema, list_presets, load_config
from glossogen.launch import (
    DEFAULT_MAX_AGENT_TURNS,
    LaunchError,
    ResumeRequest,
    RunConfig,
    RunRequest,
    check_credentials,
    check_model_settings,
    check_runs_dir,
    check_spend_cap,
    estimate_round_cost,
    load_environment,
    plan_resume,
    plan_run,
    uncosted_models,
)
from glossogen.launch._credentials import JUDGE_ENV_VARS
from glossogen.mcp._launch import StopError, launch_new, launch_resume, stop_writer
from glossogen.mcp._results import (
    ChannelInfo,
    Credential,
    Estimate,
    Evaluated,
    EventPage,
    EventRow,
    Exported,
    KnobsPreset,
    KnobsSchema,
    Launched,
    RoundOutcome,
    RunDetail,
    RunPage,
    RunRow,
    ScenarioInfo,
    ScenarioList,
    ScenarioSummary,
    SeatDetail,
    SeatInfo,
    SeatPlan,
    Stopped,
    Transcript,
    TranscriptEntry,
    TranscriptRound,
)
from glossogen.scenario import UnknownScenarioError, load_scenario, scenario_dir, scenario_names
from glossogen.scenario._contract import Scenario
from glossogen.storage import CONFIG, LABELS, RunBusyError, RunFolder, RunStore, StorageError

PAGE_SIZE = 50
"""Rows per page of ``list_runs`` and ``read_run_events`` when the caller names none."""

MAX_PAGE_SIZE = 500
"""The most rows one page returns."""

TEXT_CHARS = 2000
"""Characters of one long text field an event row keeps unless the caller asks otherwise."""


def _refuse(exc: BaseException) -> ToolError:
    """The tool error of a library refusal: its first line, as the CLI prints it."""
    text = getattr(exc, "cli_message", None) or str(exc) or type(exc).__name__
    return ToolError(str(text).splitlines()[0])


def _scenario(name: str) -> type[Scenario]:
    try:
        return load_scenario(name)
    except UnknownScenarioError as exc:
        raise _refuse(exc) from None


def _cursor(cursor: str | None, what: str) -> int:
    if not cursor:
        return 0
    if not cursor.isdigit():
        raise ToolError(f"cursor {cursor!r} is not one this server returned for {what}")
    return int(cursor)


def _page_size(size: int | None) -> int:
    size = PAGE_SIZE if size is None else size
    if not 1 <= size <= MAX_PAGE_SIZE:
        raise ToolError(f"page_size must be 1..{MAX_PAGE_SIZE}, got {size}")
    return size


class Tools:
    """The tools over one runs directory (local folder or ``s3://`` URL)."""

    def __init__(self, runs_dir: str) -> None:
        """Serve ``runs_dir``."""
        self.runs_dir = runs_dir
        self.store = RunStore(runs_dir)

    # -- scenarios ---------------------------------------------------------------------------
    def list_scenarios(self) -> ScenarioList:
        """List every installed scenario with its presets and a description."""
        rows = []
        for name in scenario_names():
            cls = _scenario(name)
            rows.append(
                ScenarioSummary(
                    name=name, description=cls.description, presets=list_presets(scenario_dir(cls))
                )
            )
        return ScenarioList(scenarios=rows)

    def get_scenario(self, scenario: str) -> ScenarioInfo:
        """A scenario's seats and channels (as its knobs_default preset lays them out)."""
        cls = _scenario(scenario)
        presets = list_presets(scenario_dir(cls))
        config = plan_run(
            RunRequest(
                scenario=scenario,
                model="scripted",
                provider="scripted",
                runs_dir=self.runs_dir,
                config="knobs_default",
            )
        )
        instance = config.build()
        seats = [
            SeatInfo(
                agent_id=a.agent_id,
                role=a.role,
                display_name=a.display_name,
                team_id=a.team_id,
                tools=list(a.tools),
            )
            for a in instance.agents()
        ]
        channels = [
            ChannelInfo(
                channel_id=c.channel_id,
                metered=c.metered,
                phase=c.phase,
                members=None if c.members is None else list(c.members),
            )
            for c in instance.channels()
        ]
        return ScenarioInfo(
            name=scenario,
            description=cls.description,
            seats=seats,
            channels=channels,
            presets=presets,
        )

    def get_knobs_schema(self, scenario: str) -> KnobsSchema:
        """The JSON Schema of a scenario's knobs, as ``glossogen schema`` prints it."""
        cls = _scenario(scenario)
        return KnobsSchema(scenario=scenario, json_schema=knobs_json_schema(cls.knobs_model))

    def get_knobs_preset(self, scenario: str, preset: str = "knobs_default") -> KnobsPreset:
        """The knobs a shipped preset holds."""
        cls = _scenario(scenario)
        if preset not in list_presets(scenario_dir(cls)):
            raise ToolError(
                f"unknown preset {preset!r} for {scenario} "
                f"(presets: {', '.join(list_presets(scenario_dir(cls)))})"
            )
        try:
            knobs, _ = load_config(preset, scenario_dir(cls))
        except ConfigError as exc:
            raise _refuse(exc) from None
        return KnobsPreset(scenario=scenario, preset=preset, knobs=knobs)

    # -- reading runs ------------------------------------------------------------------------
    def _folder(self, run_id: str, unstarted: bool = False) -> RunFolder:
        """The folder of ``run_id``, refused when it has no log.

        With ``unstarted``, a claimed folder (its ``config.json`` written) whose log has not
        begun is returned too.
        """
        try:
            folder = self.store.open_run(run_id)
        except ValueError as exc:
            raise _refuse(exc) from None
        if unstarted and not folder.has_log() and folder.exists(CONFIG):
            return folder
        if not folder.has_log():
            raise ToolError(f"run {run_id!r} has no event log in {self.runs_dir}")
        return folder

    def _view(self, folder: RunFolder) -> RunView:
        try:
            return RunView.load(folder.log_url, live=folder.is_locked())
        except (FileNotFoundError, StorageError) as exc:
            raise _refuse(exc) from None

    def list_runs(
        self,
        scenario: list[str] | None = None,
        labels: list[str] | None = None,
        status: str | None = None,
        run_id_contains: str | None = None,
        knob: list[str] | None = None,
        cursor: str | None = None,
        page_size: int | None = None,
    ) -> RunPage:
        """Runs matching every filter (the export's), oldest first, one page at a time."""
        from glossogen.export import FilterSelection, RunsDirError, SelectionError, select_runs

        start, size = _cursor(cursor, "list_runs"), _page_size(page_size)
        selection = FilterSelection(
            scenario=scenario or None,
            labels=labels or None,
            status=status,
            run_id_contains=run_id_contains,
            knob=knob or None,
        )
        try:
            selected = select_runs(self.runs_dir, selection)
        except (RunsDirError, SelectionError, StorageError) as exc:
            raise _refuse(exc) from None
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
        return RunPage(
            runs=rows[start:end], total=len(rows), next_cursor=str(end) if end < len(rows) else None
        )

    def get_run(self, run_id: str) -> RunDetail:
        """A run's status, rounds and verdicts, cost by seat and judge, seats, lineage, scores."""
        from glossogen.evaluation import read_report

        folder = self._folder(run_id, unstarted=True)
        if not folder.has_log():  # claimed, its player has not begun the log yet
            return RunDetail(
                run_id=folder.run_id,
                run_dir=folder.url,
                scenario=folder.scenario,
                status="queued",
                rounds_planned=folder.read_json_or(CONFIG, {}).get("round_count"),
                rounds_played=0,
                rounds_won=0,
                rounds=[],
                seats=[],
                total_cost_usd=0.0,
                judge_cost_usd=0.0,
                inherited_cost_usd=0.0,
                duration_seconds=0.0,
                error=None,
                labels=folder.read_json_or(LABELS, {}),
                lineage=None,
                evaluation={},
                damaged_lines=0,
            )
        view = self._view(folder)
        spend = view.spend
        rounds = [
            RoundOutcome(
                round_number=n,
                void=void,
                won=bool(verdicts) and not void and all(v.success for v in verdicts),
                verdicts=[v.model_dump() for v in verdicts],
            )
            for n, (verdicts, void) in sorted(view.verdicts.items())
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
            run_dir=folder.url,
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
            labels=folder.read_json_or(LABELS, {}),
            lineage=started.lineage if started else None,
            evaluation=scores,
            damaged_lines=view.damaged_lines,
        )

    def read_run_events(
        self,
        run_id: str,
        event_types: list[str] | None = None,
        round_number: int | None = None,
        phase: str | None = None,
        channel_id: str | None = None,
        agent_id: str | None = None,
        cursor: str | None = None,
        page_size: int | None = None,
        max_text_chars: int = TEXT_CHARS,
    ) -> EventPage:
        """A run's events in log order (superseded attempts included), filtered and paged."""
        start, size = _cursor(cursor, "read_run_events"), _page_size(page_size)
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
        rows = []
        for index, event in matched[start : start + size]:
            fields = event.model_dump(
                mode="json", exclude={"event_type", "round_number", "phase", "schema_version"}
            )
            truncated = {}
            for key, value in fields.items():
                if isinstance(value, str) and len(value) > max_text_chars:
                    truncated[key] = len(value)
                    fields[key] = value[:max_text_chars]
            rows.append(
                EventRow(
                    index=index,
                    event_type=event.event_type,
                    round_number=event.round_number,
                    phase=event.phase,
                    fields=fields,
                    truncated=truncated,
                )
            )
        end = start + size
        return EventPage(
            run_id=folder.run_id,
            events=rows,
            matched=len(matched),
            next_cursor=str(end) if end < len(matched) else None,
        )

    def get_agent_transcript(self, run_id: str, agent_id: str) -> Transcript:
        """One seat's briefings, messages and tool calls, round by round (events that count)."""
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
        )

    # -- launching ---------------------------------------------------------------------------
    def _plan(
        self,
        scenario: str,
        model: str,
        provider: str,
        config: str,
        overrides: list[str] | None,
        max_agent_turns: int | None,
        spend_cap_usd: float | None = None,
    ) -> RunConfig:
        if max_agent_turns is not None and max_agent_turns < 1:
            raise ToolError(f"--max-agent-turns must be at least 1, got {max_agent_turns}")
        if spend_cap_usd is not None and not (math.isfinite(spend_cap_usd) and spend_cap_usd > 0):
            raise ToolError(
                f"--spend-cap-usd must be a number of USD above 0, got {spend_cap_usd:g}"
            )
        try:
            plan = plan_run(
                RunRequest(
                    scenario=scenario,
                    model=model,
                    provider=provider,
                    runs_dir=self.runs_dir,
                    config=config,
                    overrides=list(overrides or []),
                    max_agent_turns=max_agent_turns or DEFAULT_MAX_AGENT_TURNS,
                    spend_cap_usd=spend_cap_usd,
                )
            )
        except LaunchError as exc:
            raise _refuse(exc) from None
        return plan

    @staticmethod
    def _check(plan: RunConfig) -> None:
        """Refuse a launch without credentials, then one whose model settings do not build.

        In this order, as ``glossogen run``: building a model needs its key.
        """
        try:
            check_credentials(plan)
            check_model_settings(plan)
        except LaunchError as exc:
            raise _refuse(exc) from None

    def _estimate(self, plan: RunConfig) -> Estimate:
        cost = estimate_round_cost(plan)
        env = load_environment()
        credentials: list[Credential] = []
        needed = {s.provider: f"agent {s.agent_id}" for s in reversed(plan.seats)}
        for swap in plan.future_providers:
            needed.setdefault(swap, "a scheduled swap")
        for name, who in needed.items():
            for var in PROVIDER_SPECS[Provider(name)].env_vars:
                group = var if isinstance(var, tuple) else (var,)
                credentials.append(
                    Credential(
                        variable="|".join(group),
                        needed_by=who,
                        present=any(env.get(v) for v in group),
                    )
                )
        if plan.judge and plan.judge.provider != "scripted":
            var = JUDGE_ENV_VARS[plan.judge.provider]
            credentials.append(
                Credential(variable=var, needed_by="judge", present=bool(env.get(var)))
            )
        rounds = plan.knobs.round_count
        return Estimate(
            scenario=plan.scenario,
            config_source=plan.config_source,
            rounds=rounds,
            max_agent_turns=plan.limits.max_agent_turns,
            seats=[
                SeatPlan(
                    agent_id=s.agent_id,
                    model=s.model,
                    provider=s.provider,
                    model_settings=s.model_settings,
                    cost_per_round_usd=cost.per_agent[s.agent_id],
                )
                for s in plan.seats
            ],
            judge=f"{plan.judge.provider}:{plan.judge.model}" if plan.judge else None,
            credentials=credentials,
            cost_per_round_usd=cost.per_round,
            total_cost_usd=None if cost.per_round is None else cost.per_round * rounds,
            uncosted_models=uncosted_models(plan),
        )

    def estimate_run(
        self,
        scenario: str,
        model: str,
        provider: str,
        config: str = "knobs_default",
        overrides: list[str] | None = None,
        max_agent_turns: int | None = None,
    ) -> Estimate:
        """The dry run: resolved seats and settings, credentials by name, cost per round."""
        plan = self._plan(scenario, model, provider, config, overrides, max_agent_turns)
        estimate = self._estimate(plan)
        if all(c.present for c in estimate.credentials):
            self._check(plan)  # the settings are checked once the keys are there
        return estimate

    async def start_run(
        self,
        scenario: str,
        model: str,
        provider: str,
        config: str = "knobs_default",
        overrides: list[str] | None = None,
        max_agent_turns: int | None = None,
        spend_cap_usd: float | None = None,
    ) -> Launched:
        """Check, claim the run's folder, launch it, and return its run id at once.

        ``spend_cap_usd`` is the run's own cap, as ``glossogen run --spend-cap-usd``: refused
        when the dry-run estimate passes it, recorded in ``simulation_started`` and enforced
        while the run plays.
        """
        plan = self._plan(
            scenario, model, provider, config, overrides, max_agent_turns, spend_cap_usd
        )
        try:
            check_spend_cap(plan, plan.knobs.round_count)
        except LaunchError as exc:
            raise _refuse(exc) from None
        self._check(plan)
        try:
            check_runs_dir(self.runs_dir)
        except LaunchError as exc:
            raise _refuse(exc) from None
        try:
            folder, via = await launch_new(plan, self.runs_dir)
        except StorageError as exc:
            raise _refuse(exc) from None
        return Launched(run_id=folder.run_id, run_dir=folder.url, launched_via=via)

    def resume_run(self, run_id: str) -> Launched:
        """Continue a stopped, interrupted or failed run in place, detached."""
        folder = self._folder(run_id)
        try:
            config, _ = plan_resume(ResumeRequest(run_dir=folder.url, scenario=folder.scenario))
            check_credentials(config)
            folder.check_unlocked()
        except (LaunchError, DeriveError, StorageError, RunBusyError) as exc:
            raise _refuse(exc) from None
        return Launched(
            run_id=folder.run_id,
            run_dir=folder.url,
            launched_via=launch_resume(folder, folder.scenario),
        )

    def derive(self, request: ForkRequest) -> Launched:
        """Prepare a derived run's folder from its source, then play it on, detached."""
        try:
            _scenario(request.scenario)
            prepared = prepare_fork(request)
        except (DeriveError, StorageError) as exc:
            raise _refuse(exc) from None
        folder = prepared.folder
        return Launched(
            run_id=folder.run_id,
            run_dir=folder.url,
            launched_via=launch_resume(folder, request.scenario),
        )

    def source(self, run_id: str) -> RunFolder:
        """The folder of a source or donor run named by id."""
        return self._folder(run_id)

    def stop_run(self, run_id: str) -> Stopped:
        """Ask a live run's writer to stop: the run ends ``interrupted``, resumable."""
        folder = self._folder(run_id)
        try:
            pid = stop_writer(folder)
        except StopError as exc:
            raise _refuse(exc) from None
        return Stopped(run_id=folder.run_id, pid=pid)

    # -- evaluation and export ---------------------------------------------------------------
    async def evaluate_run(
        self,
        run_id: str,
        metrics: list[str] | None = None,
        judge_model: str | None = None,
        judge_provider: str | None = None,
    ) -> Evaluated:
        """Score a finished run into its report and return the entries of the metrics asked."""
        from flows.evaluate import evaluate as evaluate_flow
        from glossogen.evaluation import EvaluationError, plan_evaluation

        folder = self._folder(run_id)
        names = ",".join(metrics) if metrics else "all"
        try:
            plan = plan_evaluation(
                folder.url,
                names,
                judge_model,
                judge_provider,
                [],
                1,
                1,
                False,
                scenario=folder.scenario,
            )
            done = await evaluate_flow(
                plan.run.run_dir,
                [m.name for m in plan.metrics] or names,
                judge_model,
                judge_provider,
                plan.judge.settings if plan.judge else None,
                scenario=plan.run.scenario,
            )
        except (EvaluationError, StorageError) as exc:
            raise _refuse(exc) from None
        report = done.report
        return Evaluated(
            run_id=folder.run_id,
            report=folder.report_url,
            entries={n: report.metrics[n].model_dump(mode="json") for n in done.scored},
            blank=dict(plan.blank) | done.blank,
            failed=done.failed,
            evaluation_cost_usd=report.evaluation_cost.total_usd,
        )

    def export_runs(
        self,
        out: str,
        frames: list[str] | None = None,
        scenario: list[str] | None = None,
        labels: list[str] | None = None,
        status: str | None = None,
        run_id_contains: str | None = None,
        knob: list[str] | None = None,
        run_ids: list[str] | None = None,
    ) -> Exported:
        """Write CSV tables of the selected runs to a folder or ``s3://`` URL."""
        from glossogen.export import (
            DEFAULT_FRAMES,
            FilterSelection,
            RunIdSelection,
            RunsDirError,
            SelectionError,
            build_frames,
            check_frames,
            check_out,
            coverage,
            select_runs,
            write_tables,
        )
        from glossogen.storage import join

        filters = [scenario, labels, status, run_id_contains, knob]
        if run_ids and any(filters):
            raise ToolError("run_ids cannot be combined with filters")
        try:
            names = check_frames(list(frames or DEFAULT_FRAMES))
            check_out(out)
            selection: Any = (
                RunIdSelection(run_ids=run_ids)
                if run_ids
                else FilterSelection(
                    scenario=scenario or None,
                    labels=labels or None,
                    status=status,
                    run_id_contains=run_id_contains,
                    knob=knob or None,
                )
            )
            selected = select_runs(self.runs_dir, selection)
            if selected.missing_run_ids:
                raise ToolError(
                    f"run ids that no longer resolve: {', '.join(selected.missing_run_ids)}"
                )
            rows = write_tables(selected.records, names, out)
            tables = build_frames(selected.records, names)
        except (SelectionError, RunsDirError, StorageError, ValueError) as exc:
            raise _refuse(exc) from None
        files = [join(out, f"{n}.csv") for n in names]
        if len(names) > 1:
            files.append(join(out, "columns.csv"))
        filled = {f"{t}.{c}": n for t, frame in tables.items() for c, n in coverage(frame).items()}
        return Exported(
            out=out, runs=len(selected.records), files=files, rows=rows, coverage=filled
        )
