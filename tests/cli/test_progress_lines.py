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
