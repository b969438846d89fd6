"""ATIF trajectories: one per agent of a run, rebuilt from its event log and validated by ``atif``.

Two sources, in order of fidelity:

- the agent's pydantic-ai history (``agent_history_appended``, concatenated as resume rebuilds
  it, superseded rounds dropped): the exact conversation the model saw. Its instructions become
  a ``system`` step (again whenever they change), user prompts (briefings, postmortem openers,
  messages delivered to an idle agent) ``user`` steps, each model response an ``agent`` step with
  its text, thinking and tool calls, and each tool return the observation of the step that
  called it. Usage and cost come from the matching ``llm_response_received`` (the ledger);
- the events alone, for a log with no history (GlossoGen 0.5.x, read through the upcasters):
  the registered system prompt, ``injection_delivered`` and ``world_event_delivered`` as user
  steps, ``llm_response_received`` as agent steps and ``tool_result_received`` joined to them by
  tool-call id (0.5 logged a response after its tools ran, so the join ignores order).

Usage mapping: pydantic-ai ``input_tokens`` (cache reads and writes included)
-> ``prompt_tokens``, ``output_tokens`` -> ``completion_tokens``, ``cache_read_tokens`` ->
``cached_tokens``, ``cost_usd`` -> ``cost_usd`` (null when the call was not costed), cache
writes in ``metrics.extra.cache_write_tokens``.

Step timestamps on the history path are the history's own (the wall time of each request and
response, one clock for the whole trajectory); on the events path, the events' (game time).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from atif import (
    Agent,
    FinalMetrics,
    Metrics,
    Step,
    Trajectory,
)
from pydantic_ai.messages import (
    BaseToolCallPart,
    BaseToolReturnPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    UserPromptPart,
)

from glossogen.eventlog import (
    AgentRegistered,
    Event,
    InjectionDelivered,
    LlmResponseReceived,
    RunView,
    SimulationStarted,
    ToolResultReceived,
    WorldEventDelivered,
    read_events,
)
from glossogen.storage import RunFolder

ATIF_SCHEMA_VERSION = "ATIF-v1.8"
"""The ``schema_version`` tag written into every trajectory (the ``atif`` package's version)."""

AGENT_SYSTEM = "glossogen"
"""``Trajectory.agent.name``: the agent system that produced the trajectory."""


def _iso(ts: datetime | None) -> str | None:
    if ts is None:
        return None
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return ts.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _text(value: Any) -> str:
    """Render a tool result or prompt content as text (JSON for structured values)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _prompt_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    pieces = [
        c if isinstance(c, str) else f"[{getattr(c, 'kind', type(c).__name__)}]" for c in content
    ]
    return "\n".join(pieces)


def _glossogen_version(started: SimulationStarted | None) -> str:
    recorded = started.versions if started is not None else {}
    if recorded.get("glossogen"):
        return str(recorded["glossogen"])
    try:
        return version("glossogen")
    except PackageNotFoundError:  # a source tree without installed metadata
        return "unknown"


def _metrics(event: LlmResponseReceived | None, response: ModelResponse | None) -> Metrics:
    if event is not None:
        prompt, completion = event.input_tokens, event.output_tokens
        cached, written, cost = event.cache_read_tokens, event.cache_write_tokens, event.cost_usd
    else:  # a response the ledger has no line for: its own usage, cost unknown
        usage = response.usage if response is not None else None
        prompt = usage.input_tokens if usage else 0
        completion = usage.output_tokens if usage else 0
        cached = usage.cache_read_tokens if usage else 0
        written = usage.cache_write_tokens if usage else 0
        cost = None
    return Metrics(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=cached,
        cost_usd=cost,
        extra={"cache_write_tokens": written},
    )


class _Steps:
    """Steps of one trajectory under construction: numbered in order, tool calls indexed."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self._by_call: dict[str, dict[str, Any]] = {}

    def add(
        self, source: str, message: str, timestamp: str | None, **fields: Any
    ) -> dict[str, Any]:
        step: dict[str, Any] = {
            "step_id": len(self.steps) + 1,
            "source": source,
            "message": message,
        }
        step["timestamp"] = timestamp
        step.update({k: v for k, v in fields.items() if v is not None})
        self.steps.append(step)
        for call in step.get("tool_calls") or []:
            self._by_call[call["tool_call_id"]] = step
        return step

    def knows(self, tool_call_id: str) -> bool:
        return tool_call_id in self._by_call

    def observe(
        self, tool_call_id: str | None, content: str, timestamp: str | None, **extra: Any
    ) -> None:
        """Attach a tool result to the step that called it, else log it as a system step."""
        step = self._by_call.get(tool_call_id or "")
        result: dict[str, Any] = {
            "source_call_id": tool_call_id if step else None,
            "content": content,
        }
        if step is None:
            extra = {"tool_call_id": tool_call_id, **extra}
        if extra:
            result["extra"] = extra
        if step is None:
            self.add("system", "tool result with no matching call", timestamp)
            step = self.steps[-1]
        step.setdefault("observation", {"results": []})["results"].append(result)


def _response_key(tool_ids: Iterable[str], text: str) -> tuple[tuple[str, ...], str]:
    return tuple(tool_ids), text


class _Ledger:
    """An agent's ``llm_response_received`` lines, matched in order to its history's responses."""

    def __init__(self, events: list[LlmResponseReceived]) -> None:
        self._queue = deque(events)

    def take(self, response: ModelResponse) -> LlmResponseReceived | None:
        ids = [p.tool_call_id for p in response.parts if isinstance(p, BaseToolCallPart)]
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        wanted = _response_key(ids, text)
        for i, event in enumerate(self._queue):
            got = _response_key((c.get("tool_call_id", "") for c in event.tool_calls), event.text)
            if got == wanted:
                for _ in range(i + 1):
                    matched = self._queue.popleft()
                return matched
        return None


def _from_history(
    history: list[ModelMessage], ledger: _Ledger, steps: _Steps, system_prompt: str | None
) -> None:
    instructions = system_prompt
    if system_prompt:
        steps.add("system", system_prompt, None)
    for message in history:
        if isinstance(message, ModelRequest):
            ts = _iso(message.timestamp)
            if message.instructions and message.instructions != instructions:
                instructions = message.instructions
                steps.add("system", instructions, ts)
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    steps.add("system", part.content, ts)
                elif isinstance(part, UserPromptPart):
                    steps.add("user", _prompt_text(part.content), ts)
                elif isinstance(part, BaseToolReturnPart):
                    steps.observe(
                        part.tool_call_id, part.model_response_str(), ts, tool_name=part.tool_name
                    )
                elif isinstance(part, RetryPromptPart):
                    if part.tool_name and steps.knows(part.tool_call_id):
                        steps.observe(part.tool_call_id, part.model_response(), ts, retry=True)
                    else:
                        steps.add("user", part.model_response(), ts)
        elif isinstance(message, ModelResponse):
            event = ledger.take(message)
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            thinking = "\n".join(p.content for p in message.parts if isinstance(p, ThinkingPart))
            calls = [
                {
                    "tool_call_id": p.tool_call_id,
                    "function_name": p.tool_name,
                    "arguments": p.args_as_dict(),
                }
                for p in message.parts
                if isinstance(p, BaseToolCallPart)
            ]
            steps.add(
                "agent",
                text,
                _iso(message.timestamp),
                model_name=event.model if event else message.model_name,
                reasoning_content=thinking or None,
                tool_calls=calls or None,
                metrics=_metrics(event, message).model_dump(exclude_none=True),
                llm_call_count=1,
            )


def _from_events(
    events: list[Event], agent_id: str, steps: _Steps, system_prompt: str | None
) -> None:
    if system_prompt:
        steps.add("system", system_prompt, None)
    mine = [e for e in events if getattr(e, "agent_id", None) == agent_id]
    called = {
        c.get("tool_call_id")
        for e in mine
        if isinstance(e, LlmResponseReceived)
        for c in e.tool_calls
    }
    late: dict[str, list[ToolResultReceived]] = {}  # results logged before the call's response
    for e in mine:
        ts = _iso(e.timestamp)
        if isinstance(e, (InjectionDelivered, WorldEventDelivered)):
            extra = {"kind": e.kind, "round_number": e.round_number, "phase": e.phase}
            steps.add("user", e.text, ts, extra=extra)
        elif isinstance(e, LlmResponseReceived):
            calls = [
                {
                    "tool_call_id": c.get("tool_call_id", ""),
                    "function_name": c.get("tool_name", ""),
                    "arguments": c.get("args") or {},
                }
                for c in e.tool_calls
            ]
            steps.add(
                "agent",
                e.text,
                ts,
                model_name=e.model,
                reasoning_content=e.thinking or None,
                tool_calls=calls or None,
                metrics=_metrics(e, None).model_dump(exclude_none=True),
                llm_call_count=1,
            )
            for c in calls:
                for result in late.pop(c["tool_call_id"], []):
                    _observe_event(steps, result)
        elif isinstance(e, ToolResultReceived):
            if e.tool_call_id in called and not steps.knows(e.tool_call_id):
                late.setdefault(e.tool_call_id, []).append(e)
            else:
                _observe_event(steps, e)
    for results in late.values():  # a call id some response named twice, or never answered
        for result in results:
            _observe_event(steps, result)


def _observe_event(steps: _Steps, e: ToolResultReceived) -> None:
    extra: dict[str, Any] = {"tool_name": e.tool_name}
    if e.interrupted:
        extra["interrupted"] = True
    steps.observe(e.tool_call_id, _text(e.result), _iso(e.timestamp), **extra)


def _final_metrics(steps: list[dict[str, Any]]) -> FinalMetrics:
    metrics = [s["metrics"] for s in steps if s["source"] == "agent"]
    costs = [m.get("cost_usd") for m in metrics]
    return FinalMetrics(
        total_prompt_tokens=sum(m.get("prompt_tokens", 0) for m in metrics),
        total_completion_tokens=sum(m.get("completion_tokens", 0) for m in metrics),
        total_cached_tokens=sum(m.get("cached_tokens", 0) for m in metrics),
        total_cost_usd=None if any(c is None for c in costs) else sum(costs),
        total_steps=len(steps),
        extra={"cache_write_tokens": sum(m["extra"]["cache_write_tokens"] for m in metrics)},
    )


def build_trajectories(
    run_url: str, storage_options: dict[str, Any] | None = None
) -> dict[str, Trajectory]:
    """Build one ATIF trajectory per registered agent of a run, validated by the ``atif`` models.

    The event log is ``<run_url>/<scenario>.jsonl``, the scenario being the name of the run
    folder's parent (``<runs_dir>/<scenario>/<timestamp>``). Damaged lines are skipped as the
    reader does; a round cut off by a crash and played again counts once (as resume sees it),
    and a run still being written gives what its log holds so far.

    Args:
        run_url: The run folder, a local path or an fsspec URL (``s3://bucket/runs/veyru/17...``).
        storage_options: Passed to the file system (:func:`glossogen.storage.open_fs`).

    Returns:
        ``{agent_id: Trajectory}`` in registration order; ``session_id`` is the run id,
        ``trajectory_id`` ``<run_id>/<agent_id>``; token counts in tokens, costs in USD.

    Raises:
        FileNotFoundError: the run folder has no event log.
        StorageError: the storage is unreachable.
        pydantic.ValidationError: a trajectory the ``atif`` models refuse (a bug, not bad input).
    """
    folder = RunFolder.at(run_url)
    scenario = folder.scenario
    read = read_events(folder.log_url, storage_options)
    view = RunView.of(read)  # the events that count, and each agent's history from them
    events, histories = view.counted, view.histories()
    started = next((e for e in events if isinstance(e, SimulationStarted)), None)
    run_id = (started.run_id if started is not None else None) or folder.run_id
    agent_version = _glossogen_version(started)
    roster: dict[str, AgentRegistered] = {}
    for e in events:
        if isinstance(e, AgentRegistered):
            # The last registration, in the place of the first: the history a trajectory is
            # built from starts at it (a derived run registers every seat anew).
            roster[e.agent_id] = e
    trajectories: dict[str, Trajectory] = {}
    for agent_id, seat in roster.items():
        steps = _Steps()
        system_prompt = (seat.model_extra or {}).get("system_prompt")
        history = histories.get(agent_id) or []
        if history:
            ledger = _Ledger(
                [e for e in events if isinstance(e, LlmResponseReceived) and e.agent_id == agent_id]
            )
            _from_history(
                history, ledger, steps, system_prompt if isinstance(system_prompt, str) else None
            )
            notes = "Built from the agent's pydantic-ai history in the GlossoGen event log."
        else:
            _from_events(
                events, agent_id, steps, system_prompt if isinstance(system_prompt, str) else None
            )
            notes = (
                "Built from the GlossoGen event log's events (no pydantic-ai history recorded): "
                "messages delivered to the agent outside tool results are not shown."
            )
        trajectories[agent_id] = Trajectory(
            schema_version=ATIF_SCHEMA_VERSION,
            session_id=run_id,
            trajectory_id=f"{run_id}/{agent_id}",
            agent=Agent(
                name=AGENT_SYSTEM,
                version=agent_version,
                model_name=seat.model,
                tool_definitions=[{"type": "function", "function": {"name": t}} for t in seat.tools]
                or None,
                extra={
                    "agent_id": agent_id,
                    "role": seat.role,
                    "display_name": seat.display_name,
                    "team_id": seat.team_id,
                    "provider": seat.provider,
                    "model_settings": seat.model_settings,
                    "channels": seat.channels,
                },
            ),
            steps=[Step.model_validate(s) for s in steps.steps],
            notes=notes,
            final_metrics=_final_metrics(steps.steps),
            extra={"run_id": run_id, "scenario": scenario, "skipped_log_lines": read.invalid_lines},
        )
    return trajectories


def trajectory_json(trajectory: Trajectory) -> bytes:
    """Return a trajectory as indented UTF-8 JSON (unset fields dropped; ``allow_nan=False``)."""
    data = trajectory.to_json_dict(exclude_none=True)
    return (json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False) + "\n").encode()
