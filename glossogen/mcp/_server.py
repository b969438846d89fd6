"""The MCP server: the tools of ``_tools.py`` registered on the SDK's ``MCPServer``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from pydantic import ConfigDict, StrictFloat, StrictInt, ValidationError

from glossogen.mcp._analysis import DESCRIPTIONS as ANALYSIS_DESCRIPTIONS
from glossogen.mcp._analysis import functions as analysis_functions
from glossogen.mcp._base import LIST_ITEMS, PAGE_CHARS, PAGE_SIZE, TEXT_CHARS
from glossogen.mcp._results import Launched
from glossogen.mcp._tools import Tools

INSTRUCTIONS = (
    "glossogen plays scenarios in which LLM agents must communicate, and records each run as an "
    "event log. Discover a scenario (list_scenarios, get_scenario, get_knobs_schema, "
    "get_knobs_preset), check a launch with estimate_run, start it with start_run (it returns "
    "the run id at once), poll get_run until its status is no longer 'running', then read "
    "read_run_events and get_agent_transcript. Run ids are '<scenario>/<unix_ts>'."
)

DESCRIPTIONS = {
    "list_scenarios": "List installed scenarios with their presets and a description.",
    "get_scenario": "A scenario's seats (agent ids, roles, teams, tools), channels and presets.",
    "get_knobs_schema": "The JSON Schema of a scenario's knobs (what overrides may set).",
    "get_knobs_preset": "The knobs a scenario's preset holds (default preset: knobs_default).",
    "list_runs": (
        "List runs, filtered as the export filters: scenario names, labels (all must be "
        "carried), status (completed, incomplete, error, interrupted, running, stopped), a "
        "run-id substring, knob conditions '<knob><op><value>' with op one of = != >= <= > <. "
        "Paged: pass next_cursor back as cursor."
    ),
    "get_run": (
        "One run: status (completed, incomplete, error, interrupted, running, stopped; "
        "queued while a just-started run has not begun its log), rounds played and won, "
        "each round's verdicts with reasons, cost by seat and judge (USD, null = not "
        "costed), seats and models, lineage, labels and each evaluated metric's headline score."
    ),
    "read_run_events": (
        "A run's events in log order, filtered by event types, round, phase, channel and seat "
        "(agent_id), paged with a cursor. Every text longer than max_text_chars (default "
        f"{TEXT_CHARS}) is cut, nested ones too, and a list keeps its first {LIST_ITEMS} "
        "items; 'truncated' gives each cut one's path and full length. Ids and times are never "
        f"cut. A page holds up to page_size events (default {PAGE_SIZE}) and at most "
        f"{PAGE_CHARS:,} characters of JSON (about {PAGE_CHARS // 4:,} tokens): it ends early "
        "then, and next_cursor goes on from the first event left out."
    ),
    "get_agent_transcript": ("One seat's briefings, messages and tool calls, round by round."),
    "estimate_run": (
        "Dry run of a launch: resolved seats, models and settings, credentials present or "
        "missing by variable name, the estimated cost (per seat, judge, per round, in total) "
        "and the assumptions it rests on. Needs no key. Claims nothing. "
        "overrides are 'key=value' items (values parsed as JSON), e.g. 'round_count=3'. "
        "Takes start_run's limits (max_agent_turns, run_timeout_seconds, spend_cap_usd, "
        "group_slug, judge_cache); a spend_cap_usd the estimate passes is refused, as "
        "start_run would refuse it. With run_id (and resume_run's arguments): the dry run of "
        "that resume, the rounds still to play."
    ),
    "start_run": (
        "Launch a run: scenario, preset (config) plus 'key=value' overrides, default model and "
        "provider, max_agent_turns, run_timeout_seconds, spend_cap_usd (refused when the "
        "estimate passes it), group_slug (the tenant group that owns the run) and judge_cache "
        "(a folder of judge rulings shared across runs). "
        "Refuses without credentials; claims the run folder and returns its run id at once, "
        "then the run plays on a worker or in a detached process. Poll get_run."
    ),
    "fork_run": (
        "Copy rounds 1..after_round of a run into a new run and play on (detached). The "
        "derived tools take the run limits the CLI's derived-run commands take: "
        "max_agent_turns, run_timeout_seconds, spend_cap_usd (each: the source's when not "
        "given; spend_cap_usd refused when the estimate passes it), rounds_after, knobs (a "
        "preset name or JSON file whose knobs replace the source's) and replay: play rounds "
        "1..after_round again from the source's tape ($0) instead of copying them, refused at "
        "the first difference (the result's replayed says what was replayed)."
    ),
    "replace_agent": (
        "Fork a run after a round with one seat moved to another model and provider; "
        "channel_visibility is full, none or from_round:R."
    ),
    "cross_run_replace_agent": (
        "Fork a run after a round with one seat taken over by an agent of a donor run, which "
        "brings its donor-run history."
    ),
    "resume_run": (
        "Continue a stopped, interrupted or failed run in place (detached). Takes what "
        "`glossogen run --resume` takes, each as the run recorded when not given: "
        "max_agent_turns, run_timeout_seconds, spend_cap_usd (refused when the estimate of the "
        "rounds still to play passes it), model, provider, config (preset or JSON file) plus "
        "'key=value' overrides, group_slug, judge_cache (a folder of judge rulings, as "
        "start_run's); a change from the record is refused unless "
        "allow_config_change. A run that ended is not resumed: fork it with fork_run."
    ),
    "stop_run": (
        "Stop a run as `glossogen stop` does: it ends 'interrupted' and can be resumed (a run a "
        "worker plays is cancelled through Prefect); a queued one is cancelled before it starts."
    ),
    "evaluate_run": (
        "Score a run into its report: metric names (default: all that apply); judged metrics "
        "need judge_model and judge_provider (anthropic, huggingface or openai), with "
        "judge_settings as 'key=value' items (judge_model_settings' keys), judge_replicas "
        "(judge calls per item), probe_replicas (protocol_probe calls per agent and question) "
        "and judge_cache (a folder whose rulings cost $0); allow_incomplete scores a run that "
        "has not ended on what it logged; plot also writes report.html."
    ),
    "evaluate_runs": (
        "Score a cohort: every run the export's selection picks (run_ids, or the list_runs "
        "filters scenario, labels, status, run_id_contains, contains_agent_id, knob), with "
        "evaluate_run's arguments, as `glossogen evaluate` scores a cohort; spend_cap_usd caps the "
        "cohort's judge spend (runs it would pass are left not measured). Runs up to date are "
        "skipped; returns the command's summary line and each run's outcome."
    ),
    "export_runs": (
        "Export CSV tables (run_level, round_level, agent_level, message_level, round_context, "
        "call_level) "
        "of runs picked by run_ids or by the list_runs filters, to a folder or an s3:// URL; "
        "raw also writes runs.zip of the run folders (include_logs, include_atif); "
        "returns the files, row counts and, per column, how many runs fill it."
    ),
}


def build_server(runs_dir: str) -> MCPServer:
    """Return the MCP server over ``runs_dir`` (a local folder or ``s3://bucket/prefix``)."""
    tools = Tools(runs_dir)

    def derive(source_run_id: str, donor_run_id: str | None, **fields: Any) -> Launched:
        """Launch the derived run ``fields`` describe (ForkRequest's), from runs named by id."""
        from glossogen.derive import ForkRequest  # the engine's modules: not at start-up

        source = tools.source(source_run_id)
        donor = tools.source(donor_run_id, "donor_run_id").url if donor_run_id else None
        return tools.derive(
            ForkRequest(
                scenario=source.scenario,
                source_run_dir=source.url,
                runs_dir=runs_dir,
                donor_run_dir=donor,
                **fields,
            )
        )

    # Each derived tool takes the limits and knobs the CLI's derived-run commands take; its
    # arguments are ForkRequest's fields by name (``knobs``: its knobs_path, which a refusal
    # names ``knobs``), so a refusal names the argument (glossogen.refusals).
    def fork_run(
        source_run_id: str,
        after_round: StrictInt,
        rounds_after: StrictInt | None = None,
        knobs: str | None = None,
        max_agent_turns: StrictInt | None = None,
        run_timeout_seconds: StrictFloat | None = None,
        spend_cap_usd: StrictFloat | None = None,
        replay: bool = False,
    ) -> Launched:
        return derive(
            source_run_id, None, after_round=after_round, rounds_after=rounds_after,
            knobs_path=knobs, max_agent_turns=max_agent_turns,
            run_timeout_seconds=run_timeout_seconds, spend_cap_usd=spend_cap_usd, replay=replay,
        )  # fmt: skip

    def replace_agent(
        source_run_id: str,
        after_round: StrictInt,
        replaced_agent_id: str,
        model: str,
        provider: str,
        channel_visibility: str = "full",
        rounds_after: StrictInt | None = None,
        knobs: str | None = None,
        max_agent_turns: StrictInt | None = None,
        run_timeout_seconds: StrictFloat | None = None,
        spend_cap_usd: StrictFloat | None = None,
        replay: bool = False,
    ) -> Launched:
        return derive(
            source_run_id, None, after_round=after_round, replaced_agent_id=replaced_agent_id,
            model=model, provider=provider, channel_visibility=channel_visibility,
            rounds_after=rounds_after, knobs_path=knobs, max_agent_turns=max_agent_turns,
            run_timeout_seconds=run_timeout_seconds, spend_cap_usd=spend_cap_usd, replay=replay,
        )  # fmt: skip

    def cross_run_replace_agent(
        source_run_id: str,
        after_round: StrictInt,
        replaced_agent_id: str,
        donor_run_id: str,
        donor_agent_id: str,
        model: str,
        provider: str,
        rounds_after: StrictInt | None = None,
        knobs: str | None = None,
        max_agent_turns: StrictInt | None = None,
        run_timeout_seconds: StrictFloat | None = None,
        spend_cap_usd: StrictFloat | None = None,
        replay: bool = False,
    ) -> Launched:
        return derive(
            source_run_id, donor_run_id, after_round=after_round,
            replaced_agent_id=replaced_agent_id, donor_agent_id=donor_agent_id, model=model,
            provider=provider, rounds_after=rounds_after, knobs_path=knobs,
            max_agent_turns=max_agent_turns, run_timeout_seconds=run_timeout_seconds,
            spend_cap_usd=spend_cap_usd, replay=replay,
        )  # fmt: skip

    functions: list[Callable[..., Any]] = [
        tools.list_scenarios,
        tools.get_scenario,
        tools.get_knobs_schema,
        tools.get_knobs_preset,
        tools.list_runs,
        tools.get_run,
        tools.read_run_events,
        tools.get_agent_transcript,
        tools.estimate_run,
        tools.start_run,
        fork_run,
        replace_agent,
        cross_run_replace_agent,
        tools.resume_run,
        tools.stop_run,
        tools.evaluate_run,
        tools.evaluate_runs,
        tools.export_runs,
    ]
    described = {**DESCRIPTIONS, **ANALYSIS_DESCRIPTIONS}
    every = [*functions, *analysis_functions(runs_dir)]
    return MCPServer(
        name="glossogen",
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        tools=[_tool(fn, described[fn.__name__]) for fn in every],
    )


_TOOLS: dict[tuple[str, Any], Tool] = {}
"""Each tool as the SDK built it from its function, by name and code: built once a process.

The SDK builds a tool's argument model and its JSON schemas from the function's signature
(``Tool.from_function``), and :func:`_refuse_unknown_arguments` a stricter model on top: that
was nearly all of a server's build (66 ms CPU, 20 tools), which the REST app and each MCP
client of the tests paid again. Every server's functions have the same signatures (the same
code; only what they are bound to differs), so each server takes a copy bound to its own."""


def _tool(fn: Callable[..., Any], description: str) -> Tool:
    """``fn``'s tool: the SDK's, strict about unknown arguments and refusing in one line."""
    key = (fn.__name__, getattr(fn, "__func__", fn).__code__)
    form = _TOOLS.get(key)
    if form is None:
        form = Tool.from_function(
            fn, name=fn.__name__, description=description, structured_output=True
        )
        _refuse_unknown_arguments(form)
        form.__class__ = _OneLineTool  # the same fields: only its refusal's text differs
        _TOOLS[key] = form
    return form.model_copy(update={"fn": fn})


class _OneLineTool(Tool):
    """A tool whose refusal of arguments that do not fit its schema is one line.

    The SDK's is pydantic's whole text (a count, the argument, the error, a link, on four
    lines); this one names each argument and what is wrong with it, ``; ``-joined, as every
    other refusal of these tools is one line.
    """

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            said = "; ".join(_said(error) for error in cause.errors())
            raise ToolError(f"Error executing tool {self.name}: {said}") from cause


def _said(error: Any) -> str:
    """One argument's problem: its place and pydantic's text.

    Our own validators' lines are as written, without pydantic's ``Value error, `` tag (as
    REST words them). A refusal of the library's own check (a ``SelectionError`` or
    ``QueryError`` its validator raised: ``selection`` ``run_ids: [""]``) is its line alone,
    placed by its field as REST places it and as the export's tools say it (was
    ``selection.run_ids: run_ids needs a run id ...``).
    An unknown key echoes its value (:func:`~glossogen.refusals.unknown_key_line`, as REST
    and a dashboard say it).
    """
    from glossogen.analysis import QueryError
    from glossogen.export import SelectionError
    from glossogen.refusals import item_line, unknown_key_line, validator_line

    ours = error.get("ctx", {}).get("error")
    if isinstance(ours, SelectionError):  # the library's check: each value's line
        return "; ".join(str(each.message) for each in ours.every)
    if isinstance(ours, QueryError):  # the library's check: its line
        return str(ours.message)
    if error["type"] == "extra_forbidden":
        return unknown_key_line(_place(error["loc"]), error.get("input"))
    loc = tuple(error["loc"])
    if loc and isinstance(loc[-1], int) and not isinstance(error.get("input"), (dict, list)):
        # a list's own value (a run id): the list, and the value named; an item refused whole
        # (an object) keeps its index, which says which
        return item_line(_place(loc[:-1]), error.get("input"), validator_line(error))
    return f"{_place(loc)}: {validator_line(error)}"


def _place(loc: tuple[int | str, ...]) -> str:
    """An argument's dotted place, as REST names it: without the selection's kind tag.

    pydantic names the tag of the selection's kind (``selection.filters.bogus``); the request
    has no such key, so the place is ``selection.bogus``. A list's own item is named by the
    list (``run_ids``, ``selection.run_ids`` of ``analyze_runs``' selection, never pydantic's
    ``run_ids.0``), as REST's ``field`` and the CLI's flag (``--run-id``) name it, the line
    stating the item's value instead (:func:`_said`, :func:`~glossogen.refusals.item_line`).
    """
    parts = [str(part) for part in loc]
    if len(parts) > 2 and parts[0] == "selection" and parts[1] in ("run_ids", "filters"):
        del parts[1]
    return ".".join(parts) or "arguments"


def _refuse_unknown_arguments(tool: Tool) -> None:
    """Make ``tool`` refuse an argument it does not take, naming it, instead of ignoring it.

    The SDK's argument models ignore unknown keys, so a misspelt ``spend_cap`` would launch a
    run with no cap. There is no SDK option for this (mcp 2.3): the tool's argument model is
    replaced by a subclass that forbids extra keys, and its published schema says so. The
    refusal is the SDK's own for arguments that do not fit the schema (pydantic's text, naming
    the argument: ``spend_cap / Extra inputs are not permitted``).
    """
    base = tool.fn_metadata.arg_model
    strict = type(
        base.__name__,
        (base,),
        {"model_config": ConfigDict(arbitrary_types_allowed=True, extra="forbid")},
    )
    tool.fn_metadata.arg_model = strict
    tool.parameters = {**tool.parameters, "additionalProperties": False}
