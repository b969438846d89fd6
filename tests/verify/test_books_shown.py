"""A run whose books do not balance says so where its figures are read: ``evaluate`` notes each
broken rule on stderr, and the run page shows a "books do not balance" notice listing them."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from glossogen.cli import main
from glossogen.server import create_app
from glossogen.storage import RunFolder
from tests.fixtures.played_runs import play_run
from tests.verify.runs import copy_run, line_of, lines, write


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A balanced veyru run and a copy of it with an answer's cost edited, in one runs dir."""
    root = tmp_path_factory.mktemp("runs")
    good = play_run(str(root), rounds=2)
    run_id, log = copy_run(good, root, 1000000007)
    events = lines(log)
    answer = [e for e in events if e["event_type"] == "llm_response_received"][0]
    answer["cost_usd"] = 0.125
    write(log, events)
    ended = next(e for e in events if e["event_type"] == "simulation_ended")
    line = (f"{run_id}: spend: line {line_of(events, ended)} (simulation_ended): total_cost_usd "
            f"0 but its events sum to 0.125; agent {answer['agent_id']} cost_usd 0 but its "
            "events sum to 0.125")  # fmt: skip
    return {"root": str(root), "good": good.run_id, "good_dir": good.url, "broken": run_id,
            "broken_dir": str(log.parent), "line": line}  # fmt: skip


@pytest.mark.parametrize(
    "metrics", [[], ["--metrics", "round_success"], ["--metrics", "mean_chars_per_round"]]
)
def test_evaluate_notes_each_broken_rule(
    runs: dict[str, str], capsys: pytest.CaptureFixture[str], metrics: list[str]
) -> None:
    """Whichever metrics are asked: the books are checked on the whole log, not on the events
    those metrics read (a fresh user saw a balanced run named as broken, its tokens summed over
    no events, with ``--metrics round_success``)."""
    for key in ("good_dir", "broken_dir"):
        with pytest.raises(SystemExit) as exited:
            main(["evaluate", "veyru", "--run-dir", runs[key], *metrics])
        assert exited.value.code == 0  # the report is written: the note says what it rests on
        notes = [line for line in capsys.readouterr().err.splitlines() if "books" in line]
        expected = [f"glossogen: note: books do not balance: {runs['line']}"]
        assert notes == (expected if key == "broken_dir" else [])


def test_the_run_page_shows_the_broken_rules(runs: dict[str, str]) -> None:
    client = TestClient(create_app(runs["root"]))
    broken = client.get(f"/runs/{runs['broken']}")
    assert broken.status_code == 200
    assert '<div class="notice books" id="books"><strong>books do not balance</strong>' in (
        broken.text
    )
    assert f"<li>{runs['line']}</li>" in broken.text
    good = client.get(f"/runs/{runs['good']}")
    assert good.status_code == 200
    assert 'id="books"' not in good.text
    assert RunFolder.at(runs["broken_dir"]).run_id == runs["broken"]
