"""The export endpoints over HTTP: preview, CSV and raw zip, every refusal, groups, a real server."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from glossogen.server import create_app
from tests.fixtures.played_runs import play_run
from tests.server.serving import serving, serving_here

CASE_05 = Path(__file__).parents[1] / "cases" / "glossogen-0.5-runs" / "veyru" / "1795939736"
API = "/api/g/local/runs/export"


def _report(run_id: str) -> dict:
    """A ``veyru_report.json`` under the report contract: round_success over 2 rounds."""
    return {
        "report_version": 1,
        "run_id": run_id,
        "scenario": "veyru",
        "log_sha256": "0" * 64,
        "updated_at": "2026-11-29T12:00:00Z",
        "metrics": {
            "round_success": {
                "name": "round_success",
                "kind": "deterministic",
                "version": 1,
                "unit": "share of rounds won",
                "status": "ok",
                "score": 0.5,
                "summary": "1 of 2 rounds won",
                "rounds": 2,
                "per_round": [
                    {"round_number": 1, "value": 1.0, "team_id": "team", "note": "won"},
                    {"round_number": 2, "value": 0.0, "team_id": "team", "note": "lost"},
                ],
                "per_agent": [],
                "replicas": None,
                "agreement": None,
                "judge": None,
                "cost_usd": 0.0,
                "sidecar": None,
                "error": None,
            }
        },
        "evaluation_cost": {"judge_usd": 0.0, "probe_usd": 0.0, "total_usd": 0.0},
    }


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Runs dir: two played veyru runs (2 and 3 rounds, the first with a report), one played
    run of group ``lab``, and the GlossoGen 0.5 case (group ``local`` by default)."""
    root = tmp_path_factory.mktemp("runs")
    two = play_run(str(root), rounds=2)
    three = play_run(str(root), rounds=3)
    lab = play_run(str(root), rounds=2, group_slug="lab")
    (Path(two.url) / "veyru_report.json").write_text(json.dumps(_report(two.run_id)))
    shutil.copytree(CASE_05, root / "veyru" / "1795939736")
    return {"root": str(root), "two": two.run_id, "three": three.run_id, "lab": lab.run_id}


@pytest.fixture
def tmpdir_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point ``TMPDIR`` (and tempfile's cache of it) at a fresh folder the test can inspect."""
    folder = tmp_path / "tmpdir"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr("tempfile.tempdir", None)
    return folder


def _client(cohort: dict[str, str], **limits: int) -> TestClient:
    return TestClient(create_app(cohort["root"], **limits))


def _filters(**fields: object) -> dict[str, object]:
    return {"kind": "filters", **fields}


def _ids(*run_ids: str) -> dict[str, object]:
    return {"kind": "run_ids", "run_ids": list(run_ids)}


def _archived_bytes(root: str, run_id: str) -> int:
    """Bytes of the files of a run folder that a raw zip archives (no locks, debug or stdout
    logs); played runs' logs differ in size from one play to the next."""
    left_out = {"stream.json", "eval_in_progress.json", ".writer.lock", ".lock", "_debug.jsonl"}
    return sum(
        f.stat().st_size
        for f in (Path(root) / run_id).rglob("*")
        if f.is_file() and f.name not in left_out and not f.name.endswith("_stdout.log")
    )


def test_preview_reports_runs_columns_metrics_and_the_three_limits(cohort: dict[str, str]) -> None:
    got = _client(cohort).post(f"{API}/preview", json={"selection": _filters(scenario=["veyru"])})
    assert got.status_code == 200
    body = got.json()
    assert body["group"] == "local"
    assert body["run_count"] == 3  # the lab run is another group's
    assert body["scenarios"] == ["veyru"]
    assert body["missing_run_ids"] == []
    assert body["limits"] == {
        "max_runs": 5000,
        "raw_zip_bytes": 4 * 1024**3,
        "csv_bytes": 512 * 1024**2,
    }
    assert body["metrics"] == [
        {"name": "round_success", "runs": 1, "round_rows": 2, "agent_rows": 0}
    ]
    assert body["runs_without_report"] == 2
    coverage = {(c["table"], c["column"]): c["runs_filled"] for c in body["columns"]}
    assert coverage[("run_level", "run_id")] == 3
    assert coverage[("run_level", "metric.round_success")] == 1
    assert coverage[("run_level", "knob.round_count")] == 3
    sizes = sum(
        p.stat().st_size
        for run_id in (cohort["two"], cohort["three"], "veyru/1795939736")
        for p in (Path(cohort["root"]) / run_id).iterdir()
        if p.name != ".writer.lock"
    )
    assert body["raw_zip_estimated_bytes"] == sizes
    assert body["refusals"] == []


def test_preview_lists_ids_that_do_not_resolve_and_other_groups_runs(
    cohort: dict[str, str],
) -> None:
    selection = _ids(cohort["two"], "veyru/1", cohort["lab"])
    body = _client(cohort).post(f"{API}/preview", json={"selection": selection}).json()
    assert body["run_count"] == 1
    assert body["missing_run_ids"] == ["veyru/1", cohort["lab"]]


def test_the_slug_selects_a_group(cohort: dict[str, str]) -> None:
    got = _client(cohort).post(
        "/api/g/lab/runs/export/csv",
        json={"selection": _filters(), "frames": ["run_level"], "columns": ["status"]},
    )
    assert got.status_code == 200
    rows = list(csv.DictReader(io.StringIO(got.text)))
    assert [(r["run_id"], r["status"]) for r in rows] == [(cohort["lab"], "completed")]


def test_csv_of_one_table_is_a_bare_csv_with_the_picked_columns_and_metrics(
    cohort: dict[str, str], tmpdir_env: Path
) -> None:
    got = _client(cohort).post(
        f"{API}/csv",
        json={
            "selection": _ids(cohort["three"], cohort["two"]),
            "frames": ["run_level"],
            "columns": ["status", "knob.round_count"],
            "metrics": ["round_success"],
            "repeat_run_columns": False,
        },
    )
    assert got.status_code == 200
    assert got.headers["content-type"] == "text/csv; charset=utf-8"
    assert got.headers["content-disposition"] == 'attachment; filename="run_level.csv"'
    rows = list(csv.DictReader(io.StringIO(got.text)))
    assert {c for c in rows[0] if not c.startswith("metric")} == {
        "run_id",
        "scenario_name",
        "status",
        "knob.round_count",
    }
    assert {c.split(".", 1)[1] for c in rows[0] if c.startswith("metric")} == {"round_success"}
    by_run = {r["run_id"]: r for r in rows}
    assert by_run[cohort["two"]]["knob.round_count"] == "2"
    assert by_run[cohort["three"]]["knob.round_count"] == "3"
    assert by_run[cohort["two"]]["metric.round_success"] == "0.5"
    assert by_run[cohort["three"]]["metric.round_success"] == ""  # no report: blank, never 0
    assert list(tmpdir_env.iterdir()) == []  # the temporary file is gone once sent


def test_csv_of_two_tables_is_a_zip_with_the_legend(cohort: dict[str, str]) -> None:
    got = _client(cohort).post(
        f"{API}/csv",
        json={"selection": _ids(cohort["two"]), "frames": ["run_level", "round_level"]},
    )
    assert got.status_code == 200
    assert got.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(got.content)) as zf:
        assert sorted(zf.namelist()) == ["columns.csv", "round_level.csv", "run_level.csv"]
        rounds = list(csv.DictReader(io.StringIO(zf.read("round_level.csv").decode())))
        assert [(r["round_number"], r["metric.round_success"]) for r in rounds] == [
            ("1", "1.0"),
            ("2", "0.0"),
        ]
        legend = list(csv.DictReader(io.StringIO(zf.read("columns.csv").decode())))
        assert {"table": "run_level", "column": "run_id"}.items() <= legend[0].items()


def test_a_download_refuses_an_id_that_no_longer_resolves_with_404(
    cohort: dict[str, str],
) -> None:
    client = _client(cohort)
    for route in ("csv", "raw"):
        got = client.post(f"{API}/{route}", json={"selection": _ids(cohort["two"], "veyru/1")})
        assert got.status_code == 404
        assert got.json()["detail"] == {
            "field": "run_ids",
            "message": "run ids that no longer resolve: veyru/1",
            "missing_run_ids": ["veyru/1"],
        }


def test_a_knob_condition_that_cannot_be_read_as_the_recorded_type_is_422(
    cohort: dict[str, str],
) -> None:
    client = _client(cohort)
    body = {"selection": _filters(scenario=["veyru"], knob=["round_count>=lots"])}
    for route in ("preview", "csv", "raw"):
        got = client.post(f"{API}/{route}", json=body)
        assert got.status_code == 422
        detail = got.json()["detail"]
        assert detail == {
            "field": "knob",
            "message": "knob 'round_count>=lots': knob 'round_count', operator '>=', "
            "value 'lots': the run records a number",
        }


def test_a_mixed_selection_and_an_unknown_table_are_422(cohort: dict[str, str]) -> None:
    client = _client(cohort)
    mixed = {"kind": "run_ids", "run_ids": [cohort["two"]], "scenario": ["veyru"]}
    assert client.post(f"{API}/csv", json={"selection": mixed}).status_code == 422
    got = client.post(f"{API}/csv", json={"selection": _ids(cohort["two"]), "frames": ["nope"]})
    assert got.status_code == 422
    assert got.json()["detail"] == {
        "field": "frames",
        "message": "unknown table 'nope' (tables: run_level, round_level, agent_level, "
        "message_level, round_context, call_level)",
    }


def test_the_csv_ceiling_refuses_before_any_byte_is_sent(
    cohort: dict[str, str], tmpdir_env: Path
) -> None:
    got = _client(cohort, csv_max_bytes=1000).post(
        f"{API}/csv", json={"selection": _filters(scenario=["veyru"])}
    )
    assert got.status_code == 413
    assert got.json()["detail"] == {
        "limit": "csv_bytes",
        "value": 1000,
        "message": "CSV refused: the download passed the 0.000953674 MiB CSV ceiling while "
        "being written; pick fewer tables, columns, metrics or runs, turn off "
        "repeat_run_columns, or export on the command line with `glossogen export` "
        "(no CSV ceiling)",
    }
    assert list(tmpdir_env.iterdir()) == []


def test_the_run_ceiling_refuses_downloads_and_the_preview_still_answers(
    cohort: dict[str, str],
) -> None:
    client = _client(cohort, max_runs=2)
    body = {"selection": _filters(scenario=["veyru"])}
    for route in ("csv", "raw"):
        got = client.post(f"{API}/{route}", json=body)
        assert got.status_code == 413
        assert got.json()["detail"] == {
            "limit": "max_runs",
            "value": 2,
            "message": "the selection holds 3 runs, over the 2-run limit; narrow the selection "
            "or raise it on the command line (`glossogen export --max-runs`)",
        }
    preview = client.post(f"{API}/preview", json=body).json()
    assert preview["run_count"] == 3
    assert [r["limit"] for r in preview["refusals"]] == ["max_runs"]


def test_raw_zip_holds_the_selected_folders_and_a_manifest(
    cohort: dict[str, str], tmpdir_env: Path
) -> None:
    got = _client(cohort).post(
        f"{API}/raw",
        json={"selection": _ids(cohort["two"], "veyru/1795939736"), "include_atif": True},
    )
    assert got.status_code == 200
    assert got.headers["content-disposition"] == 'attachment; filename="runs.zip"'
    with zipfile.ZipFile(io.BytesIO(got.content)) as zf:
        assert zf.testzip() is None
        manifest = list(csv.DictReader(io.StringIO(zf.read("manifest.csv").decode())))
        assert [(r["run_id"], r["atif_trajectories"]) for r in manifest] == [
            (cohort["two"], "2"),
            ("veyru/1795939736", "2"),
        ]
        assert f"{cohort['two']}/veyru_report.json" in zf.namelist()
        assert f"{cohort['two']}/atif/field_observer.json" in zf.namelist()
    assert list(tmpdir_env.iterdir()) == []


def test_a_single_run_raw_zip_always_carries_its_trajectories(cohort: dict[str, str]) -> None:
    got = _client(cohort).post(f"{API}/raw", json={"selection": _ids(cohort["three"])})
    with zipfile.ZipFile(io.BytesIO(got.content)) as zf:
        assert sorted(n for n in zf.namelist() if "/atif/" in n) == [
            f"{cohort['three']}/atif/field_observer.json",
            f"{cohort['three']}/atif/stabilization_engineer.json",
        ]


def test_the_raw_ceiling_refuses_and_names_the_limit(cohort: dict[str, str]) -> None:
    client = _client(cohort, raw_max_bytes=1000)
    got = client.post(f"{API}/raw", json={"selection": _ids(cohort["two"])})
    assert got.status_code == 413
    held = _archived_bytes(cohort["root"], cohort["two"])
    assert got.json()["detail"] == {
        "limit": "raw_zip_bytes",
        "value": 1000,
        "message": f"raw zip refused: the selected run folders hold {held} bytes, over the "
        "1000 bytes raw zip ceiling; select fewer runs or leave out the debug and stdout logs",
    }
    preview = client.post(f"{API}/preview", json={"selection": _ids(cohort["two"])}).json()
    assert [r["limit"] for r in preview["refusals"]] == ["raw_zip_bytes"]


def test_glossogen_serve_answers_over_real_http(cohort: dict[str, str]) -> None:
    log: list[bytes] = []
    with serving(cohort["root"], log=log) as base:
        # Asked for port 0, it listens on the port the OS gave it and names it.
        assert base != "http://127.0.0.1:0"
        assert f"INFO:     Uvicorn running on {base} (Press CTRL+C to quit)\n".encode() in log
        body = {"selection": _ids(cohort["two"]), "frames": ["run_level"], "columns": ["status"]}
        got = httpx.post(f"{base}{API}/csv", json=body, timeout=None)
        assert got.status_code == 200
        assert [r["status"] for r in csv.DictReader(io.StringIO(got.text))] == ["completed"]
        assert httpx.post(f"{base}{API}/preview", json=body, timeout=None).json()["run_count"] == 1


def test_serve_refuses_a_runs_dir_that_is_not_a_folder(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "glossogen", "serve", "--runs-dir", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 66
    assert (
        done.stderr == f"glossogen: error: --runs-dir {str(tmp_path / 'nope')!r} is not a folder\n"
    )


def test_a_runs_dir_on_s3_is_served_like_a_local_one(
    cohort: dict[str, str], s3_bucket: str
) -> None:
    import s3fs

    fs = s3fs.S3FileSystem()
    two = Path(cohort["root"]) / cohort["two"]
    fs.put(str(two), f"{s3_bucket.removeprefix('s3://')}/runs/{cohort['two']}", recursive=True)
    client = TestClient(create_app(f"{s3_bucket}/runs"))
    body = {"selection": _filters(scenario=["veyru"]), "frames": ["run_level"]}
    preview = client.post(f"{API}/preview", json=body).json()
    assert (preview["run_count"], preview["missing_run_ids"]) == (1, [])
    got = client.post(f"{API}/raw", json=body)
    assert got.status_code == 200
    with zipfile.ZipFile(io.BytesIO(got.content)) as zf:
        assert zf.read(f"{cohort['two']}/veyru.jsonl") == (two / "veyru.jsonl").read_bytes()
        assert (
            zf.read(f"{cohort['two']}/veyru_report.json")
            == (two / "veyru_report.json").read_bytes()
        )


def test_an_empty_result_is_no_error(cohort: dict[str, str], tmpdir_env: Path) -> None:
    client = _client(cohort)
    for selection in (_filters(knob=["no_knob_anywhere=1"]), _filters(run_id_contains="zz")):
        preview = client.post(f"{API}/preview", json={"selection": selection})
        assert preview.status_code == 200
        assert (preview.json()["run_count"], preview.json()["refusals"]) == (0, [])
        got = client.post(f"{API}/csv", json={"selection": selection, "frames": ["run_level"]})
        assert got.status_code == 200
        lines = got.text.splitlines()
        assert len(lines) == 1 and lines[0].startswith("run_id,scenario_name,status,")
    got = client.post(f"{API}/raw", json={"selection": _filters(knob=["no_knob_anywhere=1"])})
    assert got.status_code == 200
    with zipfile.ZipFile(io.BytesIO(got.content)) as zf:
        assert zf.namelist() == ["manifest.csv"]
        assert len(zf.read("manifest.csv").decode().splitlines()) == 1
    assert list(tmpdir_env.iterdir()) == []


def test_a_scenario_no_run_has_is_422_naming_it(cohort: dict[str, str]) -> None:
    client = _client(cohort)
    body = {"selection": _filters(scenario=["nosuch"]), "frames": ["run_level"]}
    for route in ("preview", "csv", "raw"):
        got = client.post(f"{API}/{route}", json=body)
        assert (got.status_code, got.json()) == (422, {"detail": {  # never the server's path
            "field": "scenario",
            "message": "scenario 'nosuch' has no run in the server's runs directory (scenarios "
                       "there: veyru)"}})  # fmt: skip


def test_an_empty_run_id_list_or_table_list_is_422(cohort: dict[str, str]) -> None:
    client = _client(cohort)
    for route in ("preview", "csv", "raw"):
        for empty in ([], [""], [" "]):  # [""]: was "selection.run_ids.0: String should ..."
            got = client.post(f"{API}/{route}", json={"selection": _ids(*empty)})
            assert (got.status_code, got.json()) == (422, {"detail": {  # as --run-id '' is
                "field": "run_ids",
                "message": "run_ids needs a run id (<scenario>/<run_dir_name>)",
            }})  # fmt: skip
        both = {"selection": {**_ids(cohort["two"]), "scenario": ["veyru"]}}
        got = client.post(f"{API}/{route}", json=both)  # as MCP's export_runs words it
        assert (got.status_code, got.json()) == (422, {"detail": {
            "field": "run_ids", "message": "run_ids cannot be combined with scenario",
        }})  # fmt: skip
    not_json = client.post(
        f"{API}/csv", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert (not_json.status_code, not_json.json()) == (
        422, {"detail": {"field": "body", "message": "the body is not UTF-8 JSON"}}
    )  # fmt: skip
    got = client.post(f"{API}/csv", json={"selection": _ids(cohort["two"]), "frames": []})
    assert got.status_code == 422
    assert got.json()["detail"] == {
        "field": "frames",
        "message": "no table named (tables: run_level, round_level, agent_level, "
        "message_level, round_context, call_level)",
    }


def test_unknown_columns_or_metrics_are_422_and_named(cohort: dict[str, str]) -> None:
    client = _client(cohort)
    body = {
        "selection": _ids(cohort["two"]),
        "frames": ["run_level"],
        "columns": ["status", "knob.round_cuont"],
    }
    got = client.post(f"{API}/csv", json=body)
    assert got.status_code == 422
    assert got.json()["detail"] == {
        "field": "columns",
        "message": "unknown columns for these tables of this selection: 'knob.round_cuont'",
    }
    preview = client.post(f"{API}/preview", json=body).json()
    assert preview["refusals"] == [got.json()["detail"]]
    body = {"selection": _ids(cohort["two"]), "metrics": ["round_success", "round_sucess"]}
    got = client.post(f"{API}/csv", json=body)
    assert got.status_code == 422
    assert got.json()["detail"] == {
        "field": "metrics",
        "message": "unknown metrics for this selection (no selected run's report has them): "
        "'round_sucess'",
    }


def test_every_route_refuses_a_bad_table_list_or_pick_alike(cohort: dict[str, str]) -> None:
    """The three routes share one body: /raw refuses what /csv refuses, with the same line,
    and an empty table name or one named twice is refused as the command line refuses it."""
    client = _client(cohort)
    tables = (
        "(tables: run_level, round_level, agent_level, message_level, round_context, call_level)"
    )
    for extra, status, detail in [
        ({"frames": ["run_level", "run_level"]}, 422,
         {"field": "frames", "message": "the table 'run_level' is named twice"}),
        ({"frames": ["run_level", ""]}, 422,
         {"field": "frames", "message": "a table name is empty"}),
        ({"frames": ["nosuch"]}, 422,
         {"field": "frames", "message": f"unknown table 'nosuch' {tables}"}),
        ({"frames": []}, 422, {"field": "frames", "message": f"no table named {tables}"}),
        ({"frames": ["run_level"], "columns": ["nosuch_col"]}, 422,
         {"field": "columns",
          "message": "unknown columns for these tables of this selection: 'nosuch_col'"}),
    ]:  # fmt: skip
        body = {"selection": _ids(cohort["two"]), **extra}
        for route in ("csv", "raw"):
            got = client.post(f"{API}/{route}", json=body)
            assert (route, got.status_code, got.json()) == (route, status, {"detail": detail})
        preview = client.post(f"{API}/preview", json=body)
        if detail["field"] == "frames":
            assert (preview.status_code, preview.json()) == (status, {"detail": detail})
        else:
            assert preview.json()["refusals"] == [detail]
    for route in ("preview", "csv", "raw"):  # README: the body's selection is required
        got = client.post(f"{API}/{route}", json={"frames": ["run_level"]})
        assert (got.status_code, got.json()) == (
            422, {"detail": {"field": "selection", "message": "Field required"}})  # fmt: skip


def test_a_runs_dir_that_is_gone_is_503(tmp_path: Path) -> None:
    gone = str(tmp_path / "gone")
    client = TestClient(create_app(gone))
    got = client.post(f"{API}/preview", json={"selection": _filters()})
    assert got.status_code == 503  # the server's folder, not its path: the client gave none
    assert got.json()["detail"] == {"message": "the server's runs directory does not exist"}


def _serve_exit(*argv: str) -> int:
    from glossogen.cli import main

    try:
        main(["serve", *argv])
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_serve_names_a_port_in_use_or_a_host_it_cannot_listen_on_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    host = "no.such.host.invalid"  # named as no address before the token rule asks for one
    assert _serve_exit("--runs-dir", str(tmp_path), "--host", host, "--port", "0") == 64
    assert capsys.readouterr().err == (
        f"glossogen: error: --host {host!r} names no address: Name or service not known\n"
    )
    monkeypatch.setenv("GLOSSOGEN_SERVE_TOKEN", "sekrit")  # off loopback needs it
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        assert _serve_exit("--runs-dir", str(tmp_path), "--port", str(port)) == 75
        assert capsys.readouterr().err == (
            f"glossogen: error: cannot listen on 127.0.0.1:{port}: the port is in use\n"
        )
    assert _serve_exit("--runs-dir", str(tmp_path), "--host", host, "--port", "0") == 64
    assert capsys.readouterr().err == (
        f"glossogen: error: --host {host!r} names no address: Name or service not known\n"
    )
    # TEST-NET-1 (RFC 5737): an address, but none of this machine's.
    assert _serve_exit("--runs-dir", str(tmp_path), "--host", "192.0.2.1", "--port", "0") == 64
    assert capsys.readouterr().err == (
        "glossogen: error: cannot listen on 192.0.2.1:0: Cannot assign requested address\n"
    )


def test_the_preview_names_unreadable_runs_within_the_runs_dir_as_the_analysis_notes_do(
    cohort: dict[str, str], tmp_path: Path
) -> None:
    """Over real HTTP: a report that is ``{}`` and a labels.json escaping a lone surrogate
    (valid JSON, not UTF-8 text: was a 500 for the whole runs dir) skip their runs; the
    preview named them by the server's absolute path where the analysis said runs-dir-relative
    paths: both say the path within the runs dir now."""
    root = tmp_path / "runs"
    two, three = cohort["two"], cohort["three"]
    for run_id in (two, three, "veyru/1795939736"):
        shutil.copytree(Path(cohort["root"]) / run_id, root / run_id)
    (root / two / "veyru_report.json").write_text("{}")
    (root / three / "labels.json").write_text('{"bad": "a\\udcffb"}')
    with serving_here(str(root)) as base:
        preview = httpx.post(f"{base}{API}/preview", json={"selection": _filters()}, timeout=None)
        query = httpx.post(
            f"{base}/api/g/local/runs/analysis/query",
            json={"measures": [{"field": "total_chars", "agg": "count"}]}, timeout=None,
        )  # fmt: skip
    assert preview.status_code == 200, preview.text
    assert preview.json()["run_count"] == 1
    assert preview.json()["unreadable_runs"] == {
        two: f"{two}/veyru_report.json is an empty JSON object (no metrics)",
        three: f"{three}/labels.json is not UTF-8 text (it escapes the lone surrogate \\udcff)",
    }
    assert query.status_code == 200, query.text
    assert query.json()["notes"] == [
        f"skipped {run_id}: {reason}"
        for run_id, reason in sorted(preview.json()["unreadable_runs"].items())
    ]


def test_a_download_names_the_runs_it_skipped_in_its_headers_as_the_cli_notes_them(
    cohort: dict[str, str], tmp_path: Path
) -> None:
    """Over real HTTP: ``/csv`` and ``/raw`` skipped an unreadable run saying nothing (the
    preview's ``unreadable_runs`` alone named it, the CLI a note); each download now counts
    and names the runs it skipped in two headers, and counts 0 when it skipped none."""
    root = tmp_path / "runs"
    two, three = cohort["two"], cohort["three"]
    for run_id in (two, three, "veyru/1795939736"):
        shutil.copytree(Path(cohort["root"]) / run_id, root / run_id)
    (root / two / "veyru_report.json").write_text("{}")
    (root / three / "labels.json").write_bytes(b'{"bad": "a\xffb"}')
    headers = ("glossogen-unreadable-runs", "glossogen-unreadable-run-ids")
    asked = [("csv", {"selection": _filters(), "frames": ["run_level"]}),
             ("csv", {"selection": _filters()}), ("raw", {"selection": _filters()}),
             ("csv", {"selection": _ids("veyru/1795939736"), "frames": ["run_level"]})]  # fmt: skip
    with serving_here(str(root)) as base:
        got = [httpx.post(f"{base}{API}/{route}", json=body, timeout=None) for route, body in asked]
    assert [(g.status_code, *(g.headers.get(h) for h in headers)) for g in got] == [
        (200, "2", f"{two}, {three}"),
        (200, "2", f"{two}, {three}"),
        (200, "2", f"{two}, {three}"),
        (200, "0", None),
    ]


def test_a_group_no_run_records_is_404_as_the_analysis_routes_say(
    cohort: dict[str, str],
) -> None:
    """Was a preview of 0 runs (200) where the analysis fields said 404: both refuse it."""
    client = _client(cohort)
    preview = client.post("/api/g/nolab/runs/export/preview", json={"selection": _filters()})
    fields = client.get("/api/g/nolab/runs/analysis/fields")
    assert (preview.status_code, preview.json()) == (
        404, {"detail": {"message": "no group 'nolab': no run records it"}}
    )  # fmt: skip
    assert (fields.status_code, fields.json()) == (preview.status_code, preview.json())
