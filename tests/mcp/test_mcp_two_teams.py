"""``get_run`` through the SDK's client (the server built in-process), on a two-team
spot_the_difference run: each team's verdict says whether that team won the round (the
ranking's winner), not only that its verdict was a success (both teams were eligible in both
rounds)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.fixtures.played_runs import play_run
from tests.mcp.conftest import call, in_process_session


def test_get_run_says_which_team_won_each_ranked_round_and_each_teams_reason(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    run_id = play_run(str(runs), "spot_the_difference", rounds=2, now_unix=1_700_000_401).run_id

    async def get_run() -> dict[str, Any]:
        async with in_process_session(runs, tmp_path) as session:
            return await call(session, "get_run", run_id=run_id)

    rounds = asyncio.run(get_run())["rounds"]
    assert rounds == [
        {
            "round_number": 1,
            "won": True,  # as rounds_won counts it: every team eligible
            "void": False,
            "winners": ["b"],
            "verdicts": [
                {
                    "team_id": "a",
                    "won": False,
                    "outcome": "eligible",
                    "success": True,
                    "reason": "all 2 differences found, 583 characters",
                },
                {
                    "team_id": "b",
                    "won": True,
                    "outcome": "won",
                    "success": True,
                    "reason": "all 2 differences found, 396 characters",
                },
            ],  # fmt: skip
        },
        {
            "round_number": 2,
            "won": True,
            "void": False,
            "winners": ["a"],
            "verdicts": [
                {
                    "team_id": "a",
                    "won": True,
                    "outcome": "won",
                    "success": True,
                    "reason": "all 4 differences found, 553 characters",
                },
                {
                    "team_id": "b",
                    "won": False,
                    "outcome": "eligible",
                    "success": True,
                    "reason": "all 4 differences found, 782 characters",
                },
            ],  # fmt: skip
        },
    ]
