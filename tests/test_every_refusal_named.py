"""Issue 32, refusals as data: every refused value of an export or an analysis query named at
once, what a client sent quoted as sent, and one rule of a run's group.

- An export's request refused on two values (an unknown table and a knob condition) named
  only the first on REST and MCP: the library's checks stopped at it. ``plan_export`` now
  gathers every refusal of the request's values, in the request's order (``out``, the
  selection, ``frames``, the options); REST's 422 lists each under ``errors``, MCP's line
  joins each with ``; ``, the CLI prints each on its own line (h50names: it said the first
  alone). A knob value its runs cannot read needs the runs read: it is judged only once every
  value that needs no run read passes (h50names: the runs were read for it beside a refused
  table, a slower refusal).
  An analysis query's ``sort`` refused stopped it alike; the rest of the query is now checked
  without the sort, each refusal named behind it.
- A server cut its runs directory from the whole refusal line but for ``run_ids``: a knob
  condition or ``status`` the client sent holding that path was quoted cut (``value 'x'``).
  ``Refusal.served`` cuts only the library's words, on every field.
- ``export.group_of`` is the one rule of a run's group, for a record and a log's head alike.

Each surface is driven as its user drives it (``tests/surfaces/drive.py``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from glossogen.cli import main
from glossogen.export import DEFAULT_GROUP, group_of
from glossogen.server import create_app
from tests.fixtures.played_runs import play_run
from tests.surfaces.drive import TABLES, Answer, _cli, _mcp

EXPORT = "/api/g/local/runs/export"
UNKNOWN = f"unknown table 'bogus' (tables: {TABLES})"
KNOB = (
    "knob 'round_count>=abc': knob 'round_count', operator '>=', value 'abc': the run records "
    "a number"
)
NO_OPERATOR = "knob 'x': no operator; write <knob><op><value> with op one of != >= <= = > <"


@pytest.fixture(scope="module")
def runs() -> Iterator[str]:
    """One played veyru run (``round_count`` 1) under a short path of its own in ``/tmp``.

    Short, so that a value holding the path is echoed whole (a refusal cuts a value past 80
    characters).
    """
    folder = tempfile.mkdtemp(dir="/tmp", prefix="g")
    try:
        runs = f"{folder}/runs"
        play_run(runs, "veyru", rounds=1, now_unix=1_790_000_000)
        yield runs
    finally:
        shutil.rmtree(folder)


def _preview(runs: str, body: dict[str, object]) -> tuple[int, object]:
    got = TestClient(create_app(runs)).post(f"{EXPORT}/preview", json=body)
    return got.status_code, got.json()


@pytest.mark.parametrize("route", ["preview", "csv", "raw"])
def test_rest_names_every_refused_value_of_an_export(runs: str, route: str) -> None:
    """``frames: ["bogus"]`` beside ``knob: ["x"]`` was answered naming only ``frames``; both
    now, in the request's order (the selection before the tables), the first as
    ``field``/``message``."""
    body = {"selection": {"kind": "filters", "knob": ["x"]}, "frames": ["bogus"]}
    got = TestClient(create_app(runs)).post(f"{EXPORT}/{route}", json=body)
    assert (got.status_code, got.json()) == (422, {"detail": {
        "field": "knob", "message": NO_OPERATOR,
        "errors": [{"field": "knob", "message": NO_OPERATOR},
                   {"field": "frames", "message": UNKNOWN}],
    }})  # fmt: skip


def test_rest_judges_a_knob_value_only_once_the_tables_pass(runs: str) -> None:
    """``knob: ["round_count>=abc"]`` needs the runs read: beside a refused table it is not
    judged (h50names: the runs were read to name it, a slower refusal); alone it is."""
    body = {"selection": {"kind": "filters", "knob": ["round_count>=abc"]}, "frames": ["bogus"]}
    assert _preview(runs, body) == (422, {"detail": {"field": "frames", "message": UNKNOWN}})
    body["frames"] = ["run_level"]
    assert _preview(runs, body) == (422, {"detail": {"field": "knob", "message": KNOB}})


def test_rest_names_one_refused_value_as_before(runs: str) -> None:
    """One value refused: no ``errors`` list, as before."""
    body = {"selection": {"kind": "filters"}, "frames": ["bogus"]}
    assert _preview(runs, body) == (422, {"detail": {"field": "frames", "message": UNKNOWN}})


@pytest.mark.parametrize(
    ("knob", "said"),
    [(["round_count>=abc"], UNKNOWN), (["x"], f"{NO_OPERATOR}; {UNKNOWN}")],
    ids=["knob-read-on-the-runs", "knob-with-no-operator"],
)
def test_mcp_names_every_refused_value_of_an_export(
    runs: str, knob: list[str], said: str, tmp_path: Path
) -> None:
    """MCP's ``export_runs`` said the table's refusal alone; each one now, ``; ``-joined, in
    REST's order (the selection before the tables); a knob value its runs cannot read is
    judged only once the tables pass, as REST judges it."""
    out = tmp_path / "out"
    answer, _ = _mcp(runs, "export_runs", out=str(out), frames=["bogus"], knob=knob)
    assert answer == Answer(True, said, "tool error")
    assert not out.exists()


def test_mcp_names_the_out_beside_the_tables(runs: str) -> None:
    """Three values refused, each named, in the request's order: ``out``, the tables, the
    zip's option."""
    afile = Path(runs).parent / "afile"
    afile.write_text("x")
    answer, _ = _mcp(runs, "export_runs", out=str(afile), frames=["bogus"], include_logs=True)
    assert answer == Answer(True, "; ".join([
        f"out {str(afile)!r} is a file, not a folder", UNKNOWN,
        "include_logs and include_atif apply to raw",
    ]), "tool error")  # fmt: skip


def test_the_cli_prints_each_refusal_and_exits_with_the_firsts_code(
    runs: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line said the first refusal alone: each one now, a line each, in the
    request's order, the exit code the first's (h50names)."""
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exited:
        main(["export", "--runs-dir", runs, "--out", str(out), "--frames", "bogus",
              "--knob", "x"])  # fmt: skip
    assert (exited.value.code, capsys.readouterr().err.splitlines()) == (64, [
        f"glossogen: error: --{NO_OPERATOR}", f"glossogen: error: --frames: {UNKNOWN}",
    ])  # fmt: skip
    assert not out.exists()


def test_a_knob_value_holding_the_runs_dir_is_quoted_as_sent(runs: str, tmp_path: Path) -> None:
    """REST and MCP cut the server's runs dir out of a knob value the client sent
    (``value 'x'``, the path gone); only ``run_ids`` were spared. Every value now."""
    condition = f"round_count>={runs}/x"
    said = (f"knob '{condition}': knob 'round_count', operator '>=', value '{runs}/x': "
            "the run records a number")  # fmt: skip
    body = {"selection": {"kind": "filters", "knob": [condition]}}
    assert _preview(runs, body) == (422, {"detail": {"field": "knob", "message": said}})
    answer, _ = _mcp(runs, "export_runs", out=str(tmp_path / "out"), knob=[condition])
    assert answer == Answer(True, said, "tool error")


def test_a_status_holding_the_runs_dir_is_quoted_as_sent(runs: str, tmp_path: Path) -> None:
    """A ``status`` filter holding the server's runs dir was quoted cut (``status 'x' ...``)."""
    status = f"{runs}/x"
    said = (f"status '{status}' is no run's status (one of completed, incomplete, error, "
            "interrupted, running, stopped, queued, or scenario_complete)")  # fmt: skip
    body = {"selection": {"kind": "filters", "status": status}}
    assert _preview(runs, body) == (422, {"detail": {"field": "status", "message": said}})
    answer, _ = _mcp(runs, "export_runs", out=str(tmp_path / "out"), status=status)
    assert answer == Answer(True, said, "tool error")


def test_an_out_under_the_runs_dir_is_quoted_as_sent(runs: str) -> None:
    """MCP's ``out`` was spared by a special case of its own; the one rule keeps it now, the
    folder it names under the runs dir too."""
    afile = f"{runs}/afile"
    Path(afile).write_text("x")
    answer, _ = _mcp(runs, "export_runs", out=afile)
    assert answer == Answer(True, f"out '{afile}' is a file, not a folder", "tool error")
    answer, _ = _mcp(runs, "export_runs", out=f"{afile}/sub")
    assert answer == Answer(
        True, f"out '{afile}/sub': {afile} is a file, not a folder", "tool error"
    )


QUERY = "/api/g/local/runs/analysis/query"
SORT = "sort 'nope' is neither a measure (run_id:count) nor a key"
NO_FIELD = (
    "measure 'nosuch': no such field at the run grain of this selection (list the grain's "
    "fields); no run of this selection has a report yet: metrics and the round grain's rows "
    "come from scoring them (glossogen evaluate)"
)


def test_an_analysis_query_names_every_refused_value(runs: str) -> None:
    """A ``sort`` naming neither a measure nor a key stopped the query there: the selection's
    knob and a measure the rows do not hold went unnamed. REST lists each, MCP joins each."""
    knob = {"kind": "filters", "knob": ["round_count>=abc"]}
    body = {"measures": [{"field": "run_id", "agg": "count"}], "sort": "nope", "selection": knob}
    got = TestClient(create_app(runs)).post(QUERY, json=body)
    assert (got.status_code, got.json()) == (422, {"detail": {
        "field": "sort", "message": SORT,
        "errors": [{"field": "sort", "message": SORT}, {"field": "knob", "message": KNOB}],
    }})  # fmt: skip
    answer, _ = _mcp(runs, "analyze_runs", measures=["run_id:count"], sort="nope", selection=knob)
    assert answer == Answer(True, f"{SORT}; {KNOB}", "tool error")
    body = {"measures": [{"field": "nosuch", "agg": "mean"}], "sort": "nope"}
    sort = SORT.replace("run_id:count", "nosuch:mean")
    got = TestClient(create_app(runs)).post(QUERY, json=body)
    assert (got.status_code, got.json()) == (422, {"detail": {
        "field": "sort", "message": sort,
        "errors": [{"field": "sort", "message": sort},
                   {"field": "measures", "message": NO_FIELD}],
    }})  # fmt: skip
    answer, _ = _mcp(runs, "analyze_runs", measures=["nosuch:mean"], sort="nope")
    assert answer == Answer(True, f"{sort}; {NO_FIELD}", "tool error")


def test_an_analysis_query_with_one_refused_value_is_answered_as_before(
    runs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sort alone: no ``errors``; the run ceiling or an id that no longer resolves is not
    a value named beside it; the command line says the first refusal alone."""
    body = {"measures": [{"field": "run_id", "agg": "count"}], "sort": "nope"}
    got = TestClient(create_app(runs)).post(QUERY, json=body)
    assert (got.status_code, got.json()) == (422, {"detail": {"field": "sort", "message": SORT}})
    body["selection"] = {"kind": "run_ids", "run_ids": ["veyru/1"]}
    got = TestClient(create_app(runs)).post(QUERY, json=body)
    assert (got.status_code, got.json()) == (422, {"detail": {"field": "sort", "message": SORT}})
    answer = _cli(capsys, "analyze", "--runs-dir", runs, "--measure", "run_id:count",
                  "--sort", "nope", "--knob", "round_count>=abc")  # fmt: skip
    assert answer == Answer(True, f"--{SORT}", 64)


def test_a_runs_group_is_one_rule() -> None:
    """The group a ``simulation_started`` recorded, else the default group."""
    assert [group_of(None), group_of({}), group_of({"group_slug": None}),
            group_of({"group_slug": "lab"})] == [DEFAULT_GROUP] * 3 + ["lab"]  # fmt: skip
