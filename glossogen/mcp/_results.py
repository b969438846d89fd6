"""The structured results of the MCP tools: typed, JSON-able, never carrying a secret value."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field

USD_DECIMALS = 6
"""Decimals every amount of money a tool returns is rounded to (a millionth of a dollar): sums
of float prices read ``0.0384``, never ``0.038400000000000004``."""

Usd = Annotated[float, AfterValidator(lambda usd: round(usd, USD_DECIMALS))]
"""An amount in USD as the tools return it (rounded to :data:`USD_DECIMALS`)."""


FOLDER_WARNINGS = (
    "One line per file of the run's folder that cannot be read (config.json, labels.json), "
    "named within the runs directory as the run list and the run page name it "
    "('veyru/1796446580/labels.json is not UTF-8 text (byte 0xff at offset 6)'); the rest is "
    "read from the run's log."
)
"""What a reading tool's ``warnings`` hold (``get_run``, ``read_run_events``,
``get_agent_transcript``)."""


class RunRow(BaseModel):
    """One run as the run list shows it."""

    run_id: str
    scenario: str
    status: str
    labels: dict[str, Any]
    rounds_played: int | None
    rounds_won: int | None
    total_messages: int | None
    total_chars: int | None
    total_cost_usd: Usd | None
    duration_seconds: float | None
    started_at: str | None
    derived: bool


class RunPage(BaseModel):
    """A page of runs; pass ``next_cursor`` back for the next page (null: last page)."""

    runs: list[RunRow]
    total: int
    next_cursor: str | None
    unreadable_runs: dict[str, str] = Field(
        default_factory=dict,
        description="Runs left out as unreadable: run id to why, its file named within the "
        "runs directory (as export_runs, REST's preview and the CLI's notes name them).",
    )


class TeamVerdict(BaseModel):
    """One team's verdict of a round, and whether that team won the round."""

    team_id: str
    won: bool = Field(
        description="The team won the round: in a ranked scenario (two teams of "
        "spot_the_difference), only the ranking's winners did."
    )
    outcome: Literal["won", "eligible", "lost", "void"] = Field(
        description="won; eligible (a success the ranking did not name the winner); lost; void."
    )
    success: bool = Field(
        description="The scenario's verdict as recorded (in a ranked scenario: eligibility)."
    )
    reason: str


class RoundOutcome(BaseModel):
    """One round: each team's verdict, the teams that won it, and the round as counted.

    ``won`` is the round as ``rounds_won`` counts it (every team's verdict a success, not
    void); which team won a ranked round is ``winners`` and each verdict's ``won``.
    """

    round_number: int
    won: bool
    void: bool
    winners: list[str] = Field(description="Teams that won the round (tied teams all).")
    verdicts: list[TeamVerdict]


class SeatDetail(BaseModel):
    """A seat of a run: its model now and every model it ran under."""

    agent_id: str
    role: str
    team_id: str
    model: str
    provider: str
    models: list[str]
    cost_usd: Usd | None
    requests: int


class RunDetail(BaseModel):
    """A run as its event log tells it (through RunView)."""

    run_id: str
    scenario: str
    status: str
    rounds_planned: int | None
    rounds_played: int
    rounds_won: int
    rounds: list[RoundOutcome]
    seats: list[SeatDetail]
    total_cost_usd: Usd | None
    judge_cost_usd: Usd | None
    inherited_cost_usd: Usd | None
    duration_seconds: float
    error: str | None
    labels: dict[str, Any]
    lineage: dict[str, Any] | None = Field(
        description="How a derived run was made (null for any other): derivation, after_round, "
        "the source and the donor by run id (source_run_id, donor_run_id), the seat replaced."
    )
    evaluation: dict[str, float | None] = Field(
        description="Headline score per metric of the run's report (empty: not evaluated)."
    )
    damaged_lines: int
    warnings: list[str] = Field(default_factory=list, description=FOLDER_WARNINGS)


class EventRow(BaseModel):
    """One event; long texts are cut to ``max_text_chars`` with their full length stated."""

    index: int
    event_type: str
    round_number: int
    phase: str
    fields: dict[str, Any]
    truncated: dict[str, int] = Field(
        default_factory=dict, description="Field name to its full length in characters."
    )


class EventPage(BaseModel):
    """A page of a run's events; pass ``next_cursor`` back for the next page."""

    run_id: str
    events: list[EventRow]
    matched: int
    next_cursor: str | None
    warnings: list[str] = Field(default_factory=list, description=FOLDER_WARNINGS)


class TranscriptEntry(BaseModel):
    """One thing a seat received, said or did."""

    kind: str = Field(description="briefing, world_event, message, tool_call or tool_result.")
    phase: str
    channel_id: str | None = None
    tool_name: str | None = None
    text: str


class TranscriptRound(BaseModel):
    """A seat's round."""

    round_number: int
    entries: list[TranscriptEntry]


class Transcript(BaseModel):
    """One seat's messages and tool calls, round by round (the events that count)."""

    run_id: str
    agent_id: str
    rounds: list[TranscriptRound]
    warnings: list[str] = Field(default_factory=list, description=FOLDER_WARNINGS)


class Credential(BaseModel):
    """A variable a launch needs, present or missing (never its value)."""

    variable: str
    needed_by: str
    present: bool


class SeatPlan(BaseModel):
    """A seat as the launch resolved it."""

    agent_id: str
    model: str
    provider: str
    model_settings: dict[str, Any]
    cost_per_round_usd: Usd | None
    requests: int = Field(description="Model requests the estimate counts for the seat.")
    cost_usd: Usd | None = Field(description="The seat's estimated spend over the run.")


class Estimate(BaseModel):
    """The dry run: what the launch resolved to and what it would cost (null: not costed)."""

    scenario: str
    config_source: str
    rounds: int
    max_agent_turns: int
    run_timeout_seconds: float | None = Field(
        default=None, description="The run's wall-clock limit in seconds (null: none)."
    )
    spend_cap_usd: Usd | None = Field(
        default=None,
        description="The run's own spend cap (null: none); checked against the estimate.",
    )
    seats: list[SeatPlan]
    judge: str | None
    credentials: list[Credential]
    cost_per_round_usd: Usd | None
    total_cost_usd: Usd | None
    judge_calls: int = 0
    judge_cost_usd: Usd | None = 0.0
    assumptions: list[str] = Field(default_factory=list)
    uncosted_models: list[str]
    warnings: list[str] = Field(
        default_factory=list,
        description="What the launch would warn of (max_agent_turns short of the rounds).",
    )


class Launched(BaseModel):
    """A run that was claimed and handed to a player; it plays on after this returns."""

    run_id: str
    launched_via: str = Field(description="deployment:<name>, or local_process:<pid>.")
    replayed: str | None = Field(
        default=None,
        description="With replay: what was replayed from the source's tape (the line the "
        "CLI's fork-at-round prints).",
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="A derived run's turn-cap warning (the line the CLI's derived-run "
        "commands print after 'glossogen: warning:'), as estimate_run's warnings.",
    )


class Stopped(BaseModel):
    """A run asked to stop: it ends ``interrupted``, resumable (a queued one never starts).

    ``pid``: the local writer signalled; ``flow_run_id``: the Prefect flow run cancelled;
    ``message``: the line ``glossogen stop`` prints.
    """

    run_id: str
    pid: int | None = None
    flow_run_id: str | None = None
    message: str = ""


class Evaluated(BaseModel):
    """The report's entries of the metrics asked for."""

    run_id: str
    report: str = Field(
        description="The report's path within the runs directory (veyru/1796446580/"
        "veyru_report.json)."
    )
    entries: dict[str, dict[str, Any]]
    blank: dict[str, str]
    failed: dict[str, str]
    evaluation_cost_usd: Usd | None


class CohortRunEvaluated(BaseModel):
    """What scoring one run of a cohort did."""

    run_id: str
    state: Literal["scored", "skipped", "refused", "failed"]
    error: str | None = Field(description="Why the run was refused or failed, None when not.")
    scored: list[str]
    failed: dict[str, str]
    reused: list[str]
    cost_usd: Usd | None


class CohortEvaluated(BaseModel):
    """A cohort scored (as ``glossogen evaluate`` scores one): its line, each run's outcome."""

    message: str = Field(description="The line `glossogen evaluate` prints for the cohort.")
    scored: int
    skipped: int
    not_evaluated: int
    runs: list[CohortRunEvaluated]
    not_evaluated_runs: dict[str, str] = Field(
        description="Every run not evaluated (not a run log, an id that resolves to no run, a "
        "run refused or failed), with why; as many as `not_evaluated` counts."
    )
    not_measured: list[str] = Field(description="Runs the spend cap held back.")
    capped: str | None = Field(description="Why the spend cap held the first run back.")
    estimate_usd: Usd | None
    spent_usd: Usd | None


class Exported(BaseModel):
    """What an export wrote: paths, rows per table, and the legend's coverage."""

    out: str
    runs: int
    files: list[str]
    rows: dict[str, int]
    coverage: dict[str, int] = Field(
        description="table.column to the number of runs with a non-empty cell in it."
    )
    unreadable_runs: dict[str, str] = Field(
        default_factory=dict,
        description="Runs skipped as unreadable: run id to why, its file named within the "
        "runs directory (as REST's preview and the CLI's notes name them).",
    )
