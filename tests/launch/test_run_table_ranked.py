"""The round table a flow run publishes says who won a ranked round, and who was only eligible."""

from __future__ import annotations

from pathlib import Path

from glossogen.launch._run_table import round_table
from glossogen.testing import play


def test_the_round_table_says_who_won_a_ranked_round(tmp_path: Path) -> None:
    run = play("spot_the_difference", tmp_path, rounds=2)  # 2 rounds: none misplayed
    assert [(r["round"], r["verdict"]) for r in round_table(run)] == [
        (1, "a eligible, b won"),
        (2, "a won, b eligible"),
    ]
