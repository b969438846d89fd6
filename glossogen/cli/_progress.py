"""Live progress of a run on the terminal: a rich bar per round, or plain lines when piped."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from glossogen.eventlog import (
    AgentRegistered,
    Event,
    MessageSent,
    RoundCompleted,
    RoundResultRecorded,
    RoundStarted,
    SimulationEnded,
)
from glossogen.scenario import Scenario, UnknownScenarioError, load_scenario, outcome_word


def counted(number: int, noun: str) -> str:
    """``1 message``, ``2 messages``: a count with its noun in the right number."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


class RunProgress:
    """Observer printing ``new_run_id=``/``new_run_dir=`` at once, then per-round progress.

    On a TTY each round gets a rich progress bar (characters against the round's budget, or
    messages when the scenario has none); otherwise one plain line per finished round.
    """

    def __init__(self, announce: bool = True) -> None:
        """Start with nothing shown.

        Args:
            announce: Print ``new_run_id=``/``new_run_dir=`` when the run is claimed (False
                when the command printed them before the run started).
        """
        self.announce = announce
        self.tty = sys.stdout.isatty()
        self.console = Console(file=sys.stdout)
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self.round_count = 0
        self.messages = 0
        self.chars = 0
        self.teams: set[str] = set()
        """Teams of the run's seats (from ``agent_registered``)."""
        self.scenario: type[Scenario] | None = None
        self.held: list[RoundResultRecorded] = []
        """A multi-team round's verdicts, held until its ranking (if any) says who won."""
        self.winners: list[str] | None = None
        self.budget: int | None = None

    def run_claimed(self, run_id: str, run_url: str, round_count: int) -> None:
        """Print the run's id and folder the moment it is claimed."""
        if self.announce:
            print(f"new_run_id={run_id}", flush=True)
            print(f"new_run_dir={run_url}", flush=True)
        self.round_count = round_count
        try:  # a run id is <scenario>/<unix_ts>
            self.scenario = load_scenario(run_id.split("/")[0])
        except UnknownScenarioError:
            self.scenario = None
        if self.tty:
            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[detail]}"),
                TimeElapsedColumn(),
                console=self.console,
            )
            self.progress.start()

    def warning(self, text: str) -> None:
        """Show a warning of the run (e.g. tracing off) once, on stderr."""
        print(f"glossogen: warning: {text}", file=sys.stderr, flush=True)

    def event(self, event: Event) -> None:
        """Follow the events that move the display."""
        if isinstance(event, AgentRegistered):
            self.teams.add(event.team_id)
        elif isinstance(event, RoundStarted):
            self._show_held()
            self.messages = self.chars = 0
            self.budget = None
            if self.progress is not None:
                self.task = self.progress.add_task(
                    f"round {event.round_number}/{self.round_count}", total=None, detail=""
                )
        elif isinstance(event, MessageSent) and event.phase == "main":
            self.messages += 1
            self.chars += event.chars
            if event.budget_chars:
                self.budget = event.budget_chars
            self._update()
        elif isinstance(event, RoundResultRecorded):
            if len(self.teams) > 1:
                self.held.append(event)  # whose win it is may be said by a ranking after it
            else:
                self._show(event, None)
        elif isinstance(event, RoundCompleted):
            self._show_held()
        elif isinstance(event, SimulationEnded):
            self._show_held()
            if self.progress is not None:
                self.progress.stop()
                self.progress = None
        elif self.held and self.scenario is not None:
            winners = self.scenario.round_winners(event)
            if winners is not None:
                self.winners = winners

    def _show_held(self) -> None:
        for held in self.held:
            self._show(held, self.winners)
        self.held, self.winners = [], None

    def _show(self, event: RoundResultRecorded, winners: list[str] | None) -> None:
        """Print (or show on the bar) one verdict: a ranked round says who won, who was eligible.

        One team: ``won``/``lost``/the void reason. Several: ``team <id>`` first; when the
        scenario ranked the round (:meth:`Scenario.round_winners`), a successful team the
        ranking does not name is ``eligible``, not ``won``.
        """
        verdict = "void" if event.void else outcome_word(event.success, event.team_id, winners)
        said = event.reason if verdict == "void" else f"{verdict} ({event.reason})"
        if len(self.teams) > 1:  # one line per team: say whose it is
            said = f"team {event.team_id} {said}"
        line = (
            f"round {event.round_number}/{self.round_count}: {said} · "
            f"{counted(self.messages, 'message')} · {counted(self.chars, 'character')}"
        )
        if self.progress is not None and self.task is not None:
            self.progress.update(
                self.task, total=1, completed=1, detail=f"{verdict}: {event.reason}"[:60]
            )
        else:
            print(line, flush=True)

    def _update(self) -> None:
        if self.progress is None or self.task is None:
            return
        detail = f"{self.messages} msgs · {self.chars} chars"
        if self.budget:
            self.progress.update(
                self.task,
                total=self.budget,
                completed=min(self.chars, self.budget),
                detail=detail + f" / {self.budget}",
            )
        else:
            self.progress.update(self.task, detail=detail)

    def close(self) -> None:
        """Stop the live display if it is still up (error paths)."""
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
