"""The per-round line `glossogen run` prints: counts in the right number, a void said once."""

from __future__ import annotations

import pytest

from glossogen.cli._progress import RunProgress
from glossogen.eventlog import MessageSent, RoundResultRecorded, RoundStarted


def test_round_lines_count_in_the_singular_and_say_void_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    progress = RunProgress(announce=False)
    progress.run_claimed("veyru/1", "/runs/veyru/1", 2)
    progress.event(RoundStarted(round_number=1, phase="main"))
    progress.event(
        MessageSent(
            round_number=1,
            phase="main",
            channel_id="link",
            sender_id="a",
            text="x",
            delivered_text="x",
            chars=1,
        )  # fmt: skip
    )
    progress.event(
        RoundResultRecorded(round_number=1, team_id="team", success=True, reason="all matched")
    )
    progress.event(RoundStarted(round_number=2, phase="main"))
    progress.event(
        RoundResultRecorded(
            round_number=2,
            team_id="team",
            success=False,
            void=True,
            reason="void (turn_limit): nobody answered",
        )  # fmt: skip
    )
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "round 1/2: won (all matched) · 1 message · 1 character",
        "round 2/2: void (turn_limit): nobody answered · 0 messages · 0 characters",
    ]


def _two_team_round(progress: RunProgress, winners: list[str]) -> None:
    from glossogen.eventlog import AgentRegistered, RoundCompleted
    from scenarios.spot_the_difference.events import SpotTheDifferenceRoundRanked

    for team in ("a", "b"):
        progress.event(
            AgentRegistered(
                agent_id=f"viewer_left_{team}",
                role="viewer",
                display_name=team,
                team_id=team,
                model="scripted",
                provider="scripted",
            )  # fmt: skip
        )
    progress.event(RoundStarted(round_number=1, phase="main"))
    for team, chars in (("a", 410), ("b", 520)):
        progress.event(
            RoundResultRecorded(
                round_number=1,
                team_id=team,
                success=True,
                reason=f"all 3 differences found, {chars} characters",
            )  # fmt: skip
        )
    progress.event(
        SpotTheDifferenceRoundRanked(round_number=1, teams=[], winners=winners, phase="main")
    )
    progress.event(RoundCompleted(round_number=1, phase="main"))


def test_two_teams_both_eligible_the_line_says_who_won_the_ranking(
    capsys: pytest.CaptureFixture[str],
) -> None:
    progress = RunProgress(announce=False)
    progress.run_claimed("spot_the_difference/1", "/runs/spot_the_difference/1", 1)
    _two_team_round(progress, winners=["a"])
    assert capsys.readouterr().out.splitlines() == [
        "round 1/1: team a won (all 3 differences found, 410 characters) · 0 messages · 0 characters",
        "round 1/1: team b eligible (all 3 differences found, 520 characters) · 0 messages · 0 characters",
    ]


def test_two_teams_tied_for_the_ranking_both_won(capsys: pytest.CaptureFixture[str]) -> None:
    progress = RunProgress(announce=False)
    progress.run_claimed("spot_the_difference/1", "/runs/spot_the_difference/1", 1)
    _two_team_round(progress, winners=["a", "b"])
    assert [line.split(" · ")[0] for line in capsys.readouterr().out.splitlines()] == [
        "round 1/1: team a won (all 3 differences found, 410 characters)",
        "round 1/1: team b won (all 3 differences found, 520 characters)",
    ]
