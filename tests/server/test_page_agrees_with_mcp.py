"""The run page and MCP's ``get_run`` read each team's outcome of a round by the one rule.

Both call :func:`glossogen.launch.team_outcomes` (itself :func:`glossogen.scenario.round_outcomes`
over the run's verdicts and the scenario's ranking), so no round can read ``won`` on one and
``eligible`` or ``lost`` on the other. Two two-team spot_the_difference runs, played for real
through the library: a ranked one (both teams eligible, one winner a round), and one whose first
seat asks for a channel that does not exist until its turn limit takes it out in round 1 (both
rounds void for every team). The page over HTTP from a real app, ``get_run`` from the MCP tools.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from fastapi.testclient import TestClient
from pydantic_ai.models.function import FunctionModel

from glossogen.mcp._reading import RunReading
from glossogen.server import create_app
from glossogen.testing import play
from tests.fixtures.played_runs import play_run
from tests.scenarios.test_turn_limit_rounds import _asks_for_nowhere

Outcomes = dict[int, list[tuple[str, str, str]]]

VERDICT = re.compile(
    r'<li class="verdict (\w+)" data-team="(\w+)"><strong>team \w+</strong>: '
    r'<span class="outcome">(\w+)</span> — <span class="reason">(.*?)</span></li>'
)


def _page(runs: Path, run_id: str) -> Outcomes:
    """Each round's (team, outcome, reason) as the run page shows them."""
    page = TestClient(create_app(str(runs))).get(f"/runs/{run_id}").text
    out: Outcomes = {}
    for number, body in re.findall(r'<article class="round \w+" data-round="(\d+)"(.*?)</article>',
                                   page, re.S):  # fmt: skip
        rows = VERDICT.findall(body)
        assert all(css == outcome for css, _, outcome, _ in rows)
        out[int(number)] = [(team, outcome, html.unescape(why)) for _, team, outcome, why in rows]
    return out


def _mcp(runs: Path, run_id: str) -> Outcomes:
    """Each round's (team, outcome, reason) as MCP's ``get_run`` gives them."""
    detail = RunReading(str(runs)).get_run(run_id).model_dump()
    return {
        r["round_number"]: [(v["team_id"], v["outcome"], v["reason"]) for v in r["verdicts"]]
        for r in detail["rounds"]
    }


def test_the_page_and_get_run_agree_on_a_ranked_two_team_run(tmp_path: Path) -> None:
    run_id = play_run(str(tmp_path), "spot_the_difference", rounds=2, now_unix=1_700_000_401).run_id
    expected = {
        1: [("a", "eligible", "all 2 differences found, 583 characters"),
            ("b", "won", "all 2 differences found, 396 characters")],
        2: [("a", "won", "all 4 differences found, 553 characters"),
            ("b", "eligible", "all 4 differences found, 782 characters")],
    }  # fmt: skip
    assert _page(tmp_path, run_id) == _mcp(tmp_path, run_id) == expected


def test_the_page_and_get_run_agree_that_a_void_two_team_round_is_void_for_both(
    tmp_path: Path,
) -> None:
    run = play(
        "spot_the_difference", tmp_path, rounds=2,
        agents={"viewer_left_a": FunctionModel(_asks_for_nowhere)}, max_agent_turns=30,
    )  # fmt: skip
    run_id = run.events[0].run_id
    page, mcp = _page(tmp_path, run_id), _mcp(tmp_path, run_id)
    html_page = TestClient(create_app(str(tmp_path))).get(f"/runs/{run_id}").text
    # Why each round is void, which the reasons (as the view keeps them) do not say.
    assert re.findall(r'· void: <span class="void-cause">(\w+)</span>', html_page) == [
        "turn_limit",
        "turn_limit",
    ]
    assert page == mcp
    # Team a's seat was cut off, so both teams' rounds are void: b's success is not a win.
    silent = "no answer from viewer_left_a, viewer_right_a"
    assert page == {
        1: [("a", "void", silent), ("b", "void", "all 2 differences found, 396 characters")],
        2: [("a", "void", silent), ("b", "void", "all 4 differences found, 782 characters")],
    }
