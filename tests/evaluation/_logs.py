"""Hand-built run logs for the metric tests, written through our own event log writer."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from glossogen.eventlog import (
    AgentHistoryAppended,
    AgentRegistered,
    AgentRunCycleFailed,
    Event,
    EventLogRead,
    EventLogWriter,
    JudgeCalled,
    LlmResponseReceived,
    MessageSent,
    RoundCompleted,
    RoundResultRecorded,
    RoundStarted,
    RunView,
    SimulationEnded,
    SimulationStarted,
)
from glossogen.scenario import load_scenario

CASE_05 = (
    Path(__file__).resolve().parents[1] / "cases" / "glossogen-0.5-runs" / "veyru" / "1795939736"
)


def copy_case(tmp_path: Path) -> Path:
    """Copy the GlossoGen 0.5 run folder under ``tmp_path/veyru/<ts>`` (evaluating writes there)."""
    target = tmp_path / "veyru" / CASE_05.name
    shutil.copytree(CASE_05, target)
    return target


@dataclass
class RunLog:
    """Events of one run, in order; :meth:`write` puts them in ``<root>/<scenario>/<ts>/``."""

    root: Path
    scenario: str = "veyru"
    agents: tuple[tuple[str, str], ...] = (
        ("field_observer", "team"),
        ("stabilization_engineer", "team"),
    )
    model: str = "scripted"
    provider: str = "scripted"
    timestamp: int = 1700000000
    events: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        knobs = load_scenario(self.scenario).knobs_model().model_dump(mode="json")
        self.events.append(
            SimulationStarted(
                run_id=f"{self.scenario}/{self.timestamp}",
                scenario_name=self.scenario,
                scenario_config=knobs,
                model=self.model,
                provider=self.provider,
            )
        )
        for agent_id, team in self.agents:
            self.events.append(
                AgentRegistered(
                    agent_id=agent_id, role=agent_id, display_name=agent_id, team_id=team,
                    model=self.model, provider=self.provider,
                )
            )  # fmt: skip

    def round(self, n: int) -> RunLog:
        self.events.append(RoundStarted(round_number=n, phase="main"))
        return self

    def say(self, n: int, sender: str, text: str, channel: str = "link", phase: str = "main",
            delivered: str | None = None, budget_chars: int | None = None) -> RunLog:  # fmt: skip
        self.events.append(
            MessageSent(
                round_number=n, phase=phase, channel_id=channel, sender_id=sender, text=text,
                delivered_text=text if delivered is None else delivered, chars=len(text),
                budget_chars=budget_chars,
            )
        )  # fmt: skip
        return self

    def verdict(self, n: int, success: bool, reason: str = "", team: str = "team",
                void: bool = False) -> RunLog:  # fmt: skip
        self.events.append(
            RoundResultRecorded(round_number=n, team_id=team, success=success,
                                reason=reason or ("stabilized" if success else "lost"), void=void)
        )  # fmt: skip
        return self

    def llm(self, n: int, agent: str, cost: float | None, phase: str = "main") -> RunLog:
        cycle = 1 + sum(
            isinstance(e, LlmResponseReceived) and e.agent_id == agent for e in self.events
        )  # the seat's requests, counted as the engine does
        self.events.append(
            LlmResponseReceived(round_number=n, phase=phase, agent_id=agent, model=self.model,
                                provider=self.provider, cycle=cycle, cost_usd=cost)
        )  # fmt: skip
        return self

    def judged(self, n: int, cost: float | None) -> RunLog:
        self.events.append(
            JudgeCalled(round_number=n, model="m", provider="openai", question="q",
                        success=True, reason="ok", cost_usd=cost)
        )  # fmt: skip
        return self

    def failure(self, n: int, agent: str) -> RunLog:
        self.events.append(
            AgentRunCycleFailed(round_number=n, agent_id=agent, error_kind="http", error="500")
        )
        return self

    def history(self, n: int, agent: str, messages: list[dict[str, Any]]) -> RunLog:
        self.events.append(AgentHistoryAppended(round_number=n, agent_id=agent, messages=messages))
        return self

    def complete(self, n: int) -> RunLog:
        self.events.append(RoundCompleted(round_number=n, phase="postmortem"))
        return self

    def end(self, status: str = "completed") -> RunLog:
        """End the log as a run does: its spend is what its priced events sum to."""
        spend = RunView.of(EventLogRead(events=self.events)).spend
        self.events.append(
            SimulationEnded(status=status, rounds_played=None, rounds_won=None, total_messages=None,
                            total_chars=None, total_cost_usd=spend.total_cost_usd,
                            judge_cost_usd=spend.judge_cost_usd, duration_seconds=None)
        )  # fmt: skip
        return self

    @staticmethod
    def read_messages(run_dir: Path) -> list[MessageSent]:
        """The ``message_sent`` events of the log in ``run_dir``, in order."""
        from glossogen.eventlog import read_events

        log = run_dir / f"{run_dir.parent.name}.jsonl"
        return [e for e in read_events(str(log)).events if isinstance(e, MessageSent)]

    @property
    def run_dir(self) -> Path:
        return self.root / self.scenario / str(self.timestamp)

    def write(self) -> Path:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with EventLogWriter(str(self.run_dir / f"{self.scenario}.jsonl")) as writer:
            for event in self.events:
                writer.append(event)
        return self.run_dir
