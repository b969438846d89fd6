"""Play a recorded run again from its tape, into a new folder, and compare the two logs.

``glossogen replay RUN_DIR --runs-dir R``: the run's recorded config (``config.json`` and
``simulation_started``, as a resume reads them) is played again through the same session a
run takes (``open_session``, one ``play_round`` per round, priced and finished) with every
seat and the judge played by the ``replay`` provider (:mod:`glossogen.replay._model`), on the
virtual clock from the recorded run's first timestamp. Seats keep their recorded provider and
model names, so each answer is priced as it was: the replay's logged costs equal the
recorded ones, and nothing is sent anywhere.

Then it compares, in this order:

- **Requests.** Each call's fingerprint (``request_sha256``) against the recorded call's,
  ``(seat, call)`` by ``(seat, call)`` in the replay's order; the first that differs is the
  divergence. A run recorded before fingerprints existed has none: that check is skipped and
  the report says so.
- **Events.** Every event, without what a replay changes: event ids, timestamps, request ids,
  the run id, wall-clock seconds and the versions of the code.
- **Verdicts and spend**, from each log's :class:`~glossogen.eventlog.RunView`.

A resumed run is replayed process by process: each recorded process's rounds, ended with the
status its ``simulation_ended`` recorded, then resumed as it was.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pydantic import BaseModel

from glossogen.eventlog import (
    Event,
    RunResumed,
    RunView,
    SimulationEnded,
)
from glossogen.exit_codes import USAGE
from glossogen.refusals import runs_dir_not_text
from glossogen.replay._loop import run_replay

if TYPE_CHECKING:
    from glossogen.derive import ReplayedRounds
from glossogen.replay._comparison import (
    Divergence,
    event_divergence_line,
    first_divergence,
    first_event_diff,
    prefix_divergence,
)
from glossogen.replay._tape import play_tape, read_source


class ReplayRequest(BaseModel):
    """What ``glossogen replay`` is asked: the recorded run and where its replay goes."""

    run_dir: str
    runs_dir: str


class ReplayReport(BaseModel):
    """What a replay found."""

    source_run_id: str
    replay_run_id: str
    replay_url: str
    calls: int
    events: int
    fingerprinted: bool
    divergence: Divergence | None
    event_diff: str | None
    """A unified diff of the first event that differs (after the ignored fields), or None."""
    event_divergence: str | None = None
    """One line naming the first event that differs (``first divergence: event 12
    (tool_call_invoked, player_b, round 1): args differ``), or None."""
    interleaved: bool = False
    """True when the events differ only in how the seats' interleave (each seat's are the same):
    a divergence all the same, since the replay takes each answer up where the record did."""
    stalled: str | None = None
    """Why the replay could not go on (every task waited; the record's next event named)."""
    verdicts_equal: bool
    spend_equal: bool
    recorded_cost_usd: float | None
    replayed_cost_usd: float | None
    seconds: float

    @property
    def identical(self) -> bool:
        """True when nothing differs."""
        return (
            self.divergence is None
            and self.event_diff is None
            and self.stalled is None
            and self.verdicts_equal
            and self.spend_equal
        )


def replay_run(request: ReplayRequest) -> ReplayReport:
    """Replay the run at ``request.run_dir`` into ``request.runs_dir`` and compare.

    Raises:
        DeriveError: a ``runs_dir`` that is not UTF-8 text (64); not a run folder or no log
            (66); a run that has not ended, or whose log lost an event (a damaged line, a torn
            last line: its ending's, too) or holds one twice (65).
        LaunchError: its recorded knobs no longer validate (65).
    """
    return run_replay(_replay(request))


async def _replay(request: ReplayRequest) -> ReplayReport:
    from glossogen.derive import DeriveError

    refusal = runs_dir_not_text(request.runs_dir)  # the CLI's entry asks it of every command
    if refusal is not None:
        raise DeriveError(refusal=refusal, exit_code=USAGE)
    _, started, recorded, config = read_source(request.run_dir)
    began = time.monotonic()
    folder, stalled = await play_tape(recorded, config, started, request.runs_dir, None)
    seconds = time.monotonic() - began
    replayed = RunView.load(folder.log_url)
    tape = recorded.tape
    fingerprinted = tape.fingerprinted
    divergence = first_divergence(tape, replayed.tape) if fingerprinted else None
    event_diff, interleaved = first_event_diff(recorded, replayed, fingerprinted)
    event_line = (
        event_divergence_line(recorded, replayed, fingerprinted)
        if event_diff is not None and divergence is None and stalled is None
        else None
    )
    return ReplayReport(
        source_run_id=started.run_id,
        replay_run_id=folder.run_id,
        replay_url=folder.url,
        calls=tape.count,
        events=len(replayed.events),
        fingerprinted=fingerprinted,
        divergence=divergence,
        event_diff=event_diff,
        event_divergence=event_line,
        interleaved=interleaved,
        stalled=stalled,
        verdicts_equal=recorded.verdicts == replayed.verdicts,
        spend_equal=recorded.spend.total_cost_usd == replayed.spend.total_cost_usd,
        recorded_cost_usd=recorded.spend.total_cost_usd,
        replayed_cost_usd=replayed.spend.total_cost_usd,
        seconds=seconds,
    )


class ForkPointCheck(BaseModel):
    """Whether a run's rounds 1..N replay from its tape as recorded (``fork-at-round --replay``)."""

    source_run_id: str
    after_round: int
    calls: int
    """The recorded model calls of rounds 1..N, each replayed."""
    events: int
    """The recorded events of rounds 1..N, each compared."""
    fingerprinted: bool
    divergence: Divergence | None
    event_divergence: str | None
    stalled: str | None = None
    """Why the replay of rounds 1..N could not go on, or None."""

    @property
    def reproduced(self) -> bool:
        """True when every request and every event of rounds 1..N is the same."""
        return self.divergence is None and self.event_divergence is None and not self.stalled

    def said(self) -> str:
        """The line every surface gives for a fork whose rounds 1..N were replayed."""
        n = self.after_round
        return (
            f"replayed rounds 1..{n} of {self.source_run_id} from its tape: {self.calls} calls, "
            f"{self.events} events reproduced"
            + ("" if self.fingerprinted else " (no request fingerprints in its log)")
            + f"; the new run's rounds 1..{n} are the replay's"
        )


def check_fork_point(run_dir: str, after_round: int) -> ForkPointCheck:
    """Replay rounds 1..``after_round`` of the run at ``run_dir`` from its tape, and compare.

    Played as :func:`replay_run` plays a whole run (the ``replay`` provider, the virtual
    clock), into a temporary folder removed afterwards; compared are the requests of those
    rounds (fingerprints, ``(seat, call)`` by ``(seat, call)``) and their events. Nothing is
    sent anywhere and nothing is written beside the source.

    Raises:
        DeriveError: not a run folder or no log (66); a log that lost an event, or a run that
            has not ended (65).
        LaunchError: its recorded knobs no longer validate (65).
    """
    return run_replay(_check_fork_point(run_dir, after_round))


def replayed_fork_point(run_dir: str, after_round: int) -> ForkPointCheck:
    """:func:`check_fork_point`, refusing a fork point that does not reproduce.

    Raises:
        DeriveError: (1) the first differing request or event, in one line; or as
            :func:`check_fork_point`.
    """
    return replayed_rounds(run_dir, after_round).check


def replayed_rounds(run_dir: str, after_round: int) -> ReplayedRounds:
    """Rounds 1..``after_round`` of the run at ``run_dir`` played from its tape, and their log.

    As :func:`check_fork_point` plays and compares them; the replay's log (read before its
    temporary folder is removed) is kept for the fork to be written from: what
    ``fork-at-round --replay`` hands ``glossogen.derive.prepare_fork`` (its ``replay_check``).

    Raises:
        DeriveError: (1) the first differing request or event, in one line; or as
            :func:`check_fork_point`.
    """
    from glossogen.derive import DeriveError, ReplayedRounds

    events: list[Event] = []
    replayed = run_replay(_check_fork_point(run_dir, after_round, events))
    diverged = replayed.divergence.line() if replayed.divergence else replayed.event_divergence
    diverged = diverged or replayed.stalled
    if diverged is not None:
        raise DeriveError(f"rounds 1..{after_round} do not replay from the tape: {diverged}", 1)
    return ReplayedRounds(replayed, events)


def _rounds_through(view: RunView, through: int) -> list[Event]:
    return [
        e
        for e in view.counted
        if e.round_number <= through and not isinstance(e, SimulationEnded | RunResumed)
    ]


async def _check_fork_point(
    run_dir: str, after_round: int, keep: list[Event] | None = None
) -> ForkPointCheck:
    """:func:`check_fork_point`; ``keep``, when given, receives the replay's whole log."""
    import tempfile

    _, started, recorded, config = read_source(run_dir)
    with tempfile.TemporaryDirectory(prefix="glossogen-fork-replay-") as scratch:
        folder, stalled = await play_tape(recorded, config, started, scratch, after_round)
        replayed = RunView.load(folder.log_url)
    if keep is not None:
        keep.extend(replayed.read.events)
    tape = recorded.tape
    fingerprinted = tape.fingerprinted
    divergence = prefix_divergence(tape, replayed.tape, after_round) if fingerprinted else None
    was, now = _rounds_through(recorded, after_round), _rounds_through(replayed, after_round)
    event_line = None
    if divergence is None:
        line = event_divergence_line(recorded, replayed, fingerprinted, (was, now))
        event_line = None if line == "first divergence: none" else line
    return ForkPointCheck(
        source_run_id=started.run_id,
        after_round=after_round,
        calls=sum(c.round_number <= after_round for cs in tape.calls.values() for c in cs),
        events=len(was),
        fingerprinted=fingerprinted,
        divergence=divergence,
        event_divergence=event_line,
        stalled=stalled,
    )
