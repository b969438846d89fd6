"""What a scenario's own tests use: play a few rounds offline, then read the run as a user would.

:func:`play` runs a scenario through the same launch path ``glossogen run`` takes (``plan_run``,
a claimed run folder, :func:`~glossogen.launch.open_session`, one ``play_round`` per round,
priced and finished), with every seat and the judge scripted, on the virtual clock from
``clock_start``: a run of many game minutes takes a fraction of a second and its timestamps
are the same on every machine. A seat may instead be played by a pydantic-ai model the test
builds (a ``FunctionModel`` whose function answers each request), given in ``agents``, or
every seat by a model server on loopback (``model`` and ``provider``: a stub speaking a
provider's wire, its ``<PROVIDER>_BASE_URL`` pointing at it; the run stays on the virtual
clock when ``GLOSSOGEN_TEST_VIRTUAL_CLOCK=1``).

The result is the run's :class:`~glossogen.eventlog.RunView`, the one reading of its event log
every command uses: verdicts, messages, roster, spend, status, each event typed (the
scenario's own events included, registered when the scenario loads)::

    from glossogen.testing import play

    def test_two_rounds_are_won(tmp_path):
        run = play("tide_pool", tmp_path, rounds=2)
        assert run.status == "completed"
        assert [v[0][0].success for v in run.verdicts.values()] == [True, True]
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic_ai.models import Model

from glossogen.eventlog import EndStatus, RunView, Verdict
from glossogen.launch import (
    DEFAULT_MAX_AGENT_TURNS,
    RunRequest,
    check_agent_models,
    claim_run,
    open_session,
    plan_run,
    price_spend,
)
from glossogen.refusals import LimitReached

__all__ = ["CLOCK_START", "play", "round_verdicts"]

CLOCK_START = datetime(2026, 1, 1, tzinfo=UTC)
"""Game time at which a test's run starts unless the test gives another."""


def play(
    scenario: str,
    runs_dir: str | Path,
    rounds: int = 2,
    config: str = "knobs_default",
    overrides: Sequence[str] = (),
    agents: Mapping[str, Model] | None = None,
    clock_start: datetime = CLOCK_START,
    max_agent_turns: int = DEFAULT_MAX_AGENT_TURNS,
    model: str = "scripted",
    provider: str = "scripted",
) -> RunView:
    """Play ``rounds`` rounds of ``scenario`` into ``runs_dir`` and return the run's view.

    Args:
        scenario: An installed scenario's name, or one found through
            ``GLOSSOGEN_SCENARIO_PATH``.
        runs_dir: Folder (or fsspec URL) under which ``<scenario>/<unix_ts>/`` is claimed.
        rounds: Rounds to play (sets the ``round_count`` knob, before ``overrides``).
        config: A preset the scenario ships, or a path to a JSON file of knobs.
        overrides: ``key=value`` knob overrides, as ``glossogen run`` takes them.
        agents: Seats played by the given pydantic-ai model instead of the scripted policy
            (agent id -> model, typically a ``FunctionModel``); the log still names them
            ``scripted``, and the run stays on the virtual clock.
        clock_start: Game time of the run's first event.
        max_agent_turns: Model requests each seat may make in the whole run, as
            ``glossogen run`` takes it.
        model: The seats' model, as ``glossogen run`` takes it (default: scripted).
        provider: The seats' provider, as ``glossogen run`` takes it.

    The run ends as the simulate flow would end it: ``completed``, or ``incomplete``/``error``
    when every agent is out, or ``error`` when a round was void. Call it from synchronous code
    (it runs its own event loop).

    Raises:
        LaunchError: the knobs or the request are refused (the message is the one
            ``glossogen run`` prints).
        ValueError: ``agents`` names a seat the scenario does not have (nothing is claimed).
    """
    request = RunRequest(
        scenario=scenario,
        model=model,
        provider=provider,
        runs_dir=str(runs_dir),
        config=config,
        overrides=[f"round_count={rounds}", *overrides],
        max_agent_turns=max_agent_turns,
    )
    # The run's view is read once its loop is closed: a big result returned through
    # ``asyncio.run`` is rendered whole by the standard library as the loop ends (its SIGINT
    # handler's check reprs the main task, result included): about 0.03 CPU-s a time for a
    # 10-round run's view, twice per run.
    log_url = asyncio.run(_play(request, rounds, agents, clock_start))
    return RunView.load(log_url)


async def _play(
    request: RunRequest, rounds: int, agents: Mapping[str, Model] | None, clock_start: datetime
) -> str:
    """Play the run and return its log's URL."""
    plan = plan_run(request)
    check_agent_models(plan, agents)  # before a folder is claimed
    folder = claim_run(plan, request.runs_dir)
    session = open_session(plan, folder, clock_start=clock_start, agent_models=agents)
    status: EndStatus = "completed"
    error: str | LimitReached | None = None
    for round_number in range(1, rounds + 1):
        await session.play_round(round_number)
        if ended := session.ended_early():
            status, error = ended
            break
    if status == "completed" and (void := session.void_rounds_error()):
        status, error = "error", void
    await session.settle_requests()
    session.finish(price_spend(folder), status, error)
    return folder.log_url


def round_verdicts(run: RunView) -> list[list[tuple[str, bool, str]]]:
    """Return each recorded round's verdicts as ``(team_id, success, reason)``, rounds in order.

    A void round's verdicts are listed as recorded (``success`` False, the void reason).
    """
    return [
        [_as_row(verdict) for verdict in verdicts]
        for _, (verdicts, _void) in sorted(run.verdicts.items())
    ]


def _as_row(verdict: Verdict) -> tuple[str, bool, str]:
    return verdict.team_id, verdict.success, verdict.reason
