"""The projection cache: the same answers as the logs give, kept true when runs change.

Each test works on its own copy of the five-run cohort of ``cohort.py`` (played once per
module), so a changed or deleted run never leaks into another test.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import polars as pl
import pytest

from glossogen.analysis import Query, Result, answer, fields
from glossogen.analysis._projection import CACHE_FILE, CACHE_FOLDER
from glossogen.export import FilterSelection, RunIdSelection
from tests.analysis.cohort import SURFACE_FLAGS, Cohort, build


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return build(Path(tmp_path_factory.mktemp("projection-runs")))


@pytest.fixture
def cohort(played: Cohort, tmp_path: Path) -> Cohort:
    """A fresh copy of the played cohort, with no cache yet."""
    copy = tmp_path / "runs"
    shutil.copytree(played.runs_dir, copy, ignore=shutil.ignore_patterns(CACHE_FOLDER))
    return Cohort(str(copy), dict(played.ids))


def cache_file(cohort: Cohort) -> Path:
    return Path(cohort.runs_dir) / CACHE_FOLDER / CACHE_FILE


def cached_runs(cohort: Cohort) -> list[str]:
    with zipfile.ZipFile(cache_file(cohort)) as archive:
        tables = {
            t: pl.read_parquet(archive.read(f"{t}.parquet")) for t in ("run", "round", "agent")
        }
    runs = sorted(tables["run"].get_column("__run").to_list())
    for table in ("round", "agent"):  # no rows of a run the run table does not hold
        assert set(tables[table].get_column("__run").to_list()) <= set(runs), table
    return runs


def both(cohort: Cohort, **query: object) -> Result:
    """The answer through the cache (twice: cold then warm), asserted equal to the logs' one."""
    parsed = Query.model_validate(query)
    plain = answer(cohort.runs_dir, parsed, cache=False)
    assert answer(cohort.runs_dir, parsed) == plain
    assert answer(cohort.runs_dir, parsed) == plain
    return plain


QUERIES = [
    {"grain": "run", "by": ["round_budget_chars", "channel_noise_level"],
     "measures": [{"field": "round_success"}, {"field": "total_chars", "agg": "sum"},
                  {"field": "task_done", "agg": "rate"}, {"field": "status", "agg": "count"}]},
    {"grain": "round", "by": ["round_budget_chars"],
     "measures": [{"field": "round_success", "agg": "rate"}, {"field": "mean_chars_per_round"},
                  {"field": "team_split", "agg": "max"}],
     "compare": {"key": "round_budget_chars", "a": "300", "b": "600"}, "seed": 7,
     "resamples": 50},
    {"grain": "round", "by": ["round_number", "seed"], "measures": [{"field": "round_success"}],
     "filters": [{"field": "round_budget_chars", "op": ">=", "value": "300"}]},
    {"grain": "agent", "by": ["role"],
     "measures": [{"field": "requests", "agg": "sum"}, {"field": "output_tokens"}]},
    {"grain": "run", "selection": {"kind": "filters", "knob": ["channel_noise_level>0"]}, "by": ["status"],
     "measures": [{"field": "message_count", "agg": "median"}]},
]  # fmt: skip


@pytest.mark.parametrize("query", QUERIES, ids=["run", "round-compare", "round-filter", "agent",
                                                "knob-selection"])  # fmt: skip
def test_answers_with_and_without_the_cache_are_equal(cohort: Cohort, query: dict) -> None:
    result = both(cohort, **query)
    assert result.runs in (5, 3) and result.groups
    assert cached_runs(cohort) == sorted(cohort.ids.values())


def test_field_listings_with_and_without_the_cache_are_equal(cohort: Cohort) -> None:
    for grain in ("run", "round", "agent"):
        plain = fields(cohort.runs_dir, FilterSelection(), grain, cache=False)
        assert fields(cohort.runs_dir, FilterSelection(), grain) == plain
        assert fields(cohort.runs_dir, FilterSelection(), grain) == plain


def test_a_knob_int_in_one_run_and_float_in_others_is_typed_by_the_selected_runs(
    cohort: Cohort,
) -> None:
    r1 = Path(cohort.runs_dir, cohort.ids["r1"], "config.json")
    config = json.loads(r1.read_text())
    config["channel_noise_level"] = 0  # an int; the other runs recorded floats
    r1.write_text(json.dumps(config))
    measure = [{"field": "round_success"}]
    everyone = both(cohort, by=["channel_noise_level"], measures=measure)
    assert [g.keys["channel_noise_level"] for g in everyone.groups] == ["0.0", "0.1", "0.2"]
    alone = both(cohort, selection={"kind": "run_ids", "run_ids": [cohort.ids["r1"]]}, by=["channel_noise_level"],
                 measures=measure)  # fmt: skip
    assert [g.keys["channel_noise_level"] for g in alone.groups] == ["0"]


def test_a_changed_log_invalidates_its_row(cohort: Cohort) -> None:
    query = {"grain": "run", "by": ["seed"], "measures": [{"field": "total_chars", "agg": "sum"}]}
    before = both(cohort, **query)
    sums = {g.keys["seed"]: g.cells[0].value for g in before.groups}
    log = Path(cohort.runs_dir, cohort.ids["r1"], "veyru.jsonl")  # seed 1, with r3
    lines = log.read_text().splitlines(keepends=True)
    ending = json.loads(lines[-1])
    assert ending["event_type"] == "simulation_ended"
    r1_chars = ending["total_chars"]
    lines[-1] = re.sub(r'"total_chars":\d+', f'"total_chars":{r1_chars + 1000}', lines[-1])
    log.write_text("".join(lines))
    after = both(cohort, **query)
    assert {g.keys["seed"]: g.cells[0].value for g in after.groups} == {
        **sums,
        "1": sums["1"] + 1000,
    }
    assert len(cached_runs(cohort)) == 5


ROUND_QUERY = {"grain": "round", "by": ["round_number"], "measures": [{"field": "round_success"}]}


def round_success(cohort: Cohort) -> list[tuple[str, object]]:
    """Round success by round number, through the cache and not, asserted equal."""
    result = both(cohort, **ROUND_QUERY)
    return [(g.keys["round_number"], g.cells[0].value) for g in result.groups]


def test_a_changed_report_invalidates_its_rounds(cohort: Cohort) -> None:
    assert round_success(cohort) == [("1", 0.8), ("2", 0.4)]  # r1..r5: 1,1,0,1,1 and 0,1,0,0,1
    report = Path(cohort.runs_dir, cohort.ids["r3"], "veyru_report.json")
    data = json.loads(report.read_text())
    data["metrics"]["round_success"]["per_round"][1]["value"] = 1  # r3 wins round 2 after all
    report.write_text(json.dumps(data))
    assert round_success(cohort) == [("1", 0.8), ("2", 0.6)]


def test_a_deleted_run_disappears(cohort: Cohort) -> None:
    query = {"grain": "run", "measures": [{"field": "round_success"}]}
    assert both(cohort, **query).runs == 5
    shutil.rmtree(Path(cohort.runs_dir, cohort.ids["r5"]))
    after = both(cohort, **query)
    assert after.runs == 4 and cohort.ids["r5"] not in after.run_ids
    assert after.groups[0].cells[0].value == pytest.approx((0.5 + 1 + 0 + 0.5) / 4)
    assert cached_runs(cohort) == sorted(v for k, v in cohort.ids.items() if k != "r5")


def test_a_run_without_its_ending_is_answered_but_not_kept(cohort: Cohort) -> None:
    log = Path(cohort.runs_dir, cohort.ids["r2"], "veyru.jsonl")
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:-1]))  # no simulation_ended: stopped, not ended
    result = both(cohort, grain="run", by=["status"], measures=[{"field": "run_id",
                                                                 "agg": "count"}])  # fmt: skip
    assert [(g.keys["status"], g.cells[0].value) for g in result.groups] == [
        ("completed", 4.0), ("stopped", 1.0)
    ]  # fmt: skip
    assert cohort.ids["r2"] not in cached_runs(cohort)


def test_two_processes_filling_the_cache_at_once_agree(cohort: Cohort) -> None:
    command = [str(Path(sys.executable).with_name("glossogen")), "analyze", "--runs-dir", cohort.runs_dir,
               *SURFACE_FLAGS, "--json"]  # fmt: skip
    children = [subprocess.Popen(command, stdout=subprocess.PIPE) for _ in range(2)]
    outs = [json.loads(c.communicate()[0]) for c in children]
    assert [c.returncode for c in children] == [0, 0]
    plain = answer(cohort.runs_dir, Query.model_validate(outs[0]["query"]), cache=False)
    assert outs[0] == outs[1] == json.loads(plain.model_dump_json())
    assert cached_runs(cohort) == sorted(cohort.ids.values())
    assert [p.name for p in cache_file(cohort).parent.iterdir()] == [CACHE_FILE]


def test_a_file_url_uses_the_same_cache_as_its_folder(cohort: Cohort) -> None:
    query = Query.model_validate({"grain": "round", "measures": [{"field": "round_success"}]})
    plain = answer(cohort.runs_dir, query, cache=False)
    assert answer(f"file://{cohort.runs_dir}", query) == plain
    assert cached_runs(cohort) == sorted(cohort.ids.values())
    log = Path(cohort.runs_dir, cohort.ids["r5"], "veyru.jsonl")
    log.unlink()  # no log: not a run any more, through the URL as through the folder
    assert answer(f"file://{cohort.runs_dir}", query).runs == 4


def test_the_cache_file_has_a_new_files_mode(cohort: Cohort) -> None:
    """0644 under umask 022, as every other file the product writes (not mkstemp's 0600)."""
    import os
    import stat

    answer(cohort.runs_dir, Query.model_validate({"measures": [{"field": "round_success"}]}))
    made = Path(cohort.runs_dir, "a-new-file")
    made.write_text("")
    mode = stat.S_IMODE(os.stat(Path(cohort.runs_dir, CACHE_FOLDER, CACHE_FILE)).st_mode)
    assert (mode, mode) == (stat.S_IMODE(made.stat().st_mode), 0o666 & ~_process_umask())


def _process_umask() -> int:
    """The umask, read in a child process (setting it here would change this process's)."""
    out = subprocess.run([sys.executable, "-c", "import os; print(os.umask(0))"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return int(out)


def _outcome(runs_dir: str, query: Query, cache: bool) -> Result | str:
    """The answer, or the refusal's message (a refusal is an answer too: warm must equal cold)."""
    try:
        return answer(runs_dir, query, cache=cache)
    except ValueError as exc:
        return f"{type(exc).__name__}: {exc}"


def test_unscored_runs_at_the_round_grain_answer_alike_after_the_cache_is_filled(
    cohort: Cohort,
) -> None:
    """Cached round rows of other runs, none of the selected ones: the cold answer, not a crash."""
    Path(cohort.runs_dir, cohort.ids["r2"], "veyru_report.json").unlink()  # r2 unscored
    Path(cohort.runs_dir, cohort.ids["r4"], "veyru_report.json").unlink()  # r4 unscored
    both(cohort, grain="round", measures=[{"field": "round_success"}])  # fills the cache
    assert cached_runs(cohort) == sorted(cohort.ids.values())
    unscored = RunIdSelection(run_ids=[cohort.ids["r2"], cohort.ids["r4"]])
    for grain in ("round", "agent", "run"):
        plain = fields(cohort.runs_dir, unscored, grain, cache=False)
        assert fields(cohort.runs_dir, unscored, grain) == plain
    listed = fields(cohort.runs_dir, unscored, "round")
    assert (listed.runs, listed.rows) == (2, 0)
    assert [(f.name, f.rows) for f in listed.fields[:3]] == [
        ("run_id", 0), ("scenario_name", 0), ("round_number", 0)
    ]  # fmt: skip
    selection = {"kind": "run_ids", "run_ids": [cohort.ids["r2"], cohort.ids["r4"]]}
    counted = both(cohort, grain="round", selection=selection,
                   measures=[{"field": "run_id", "agg": "count"}])  # fmt: skip
    assert counted.rows == 0 and counted.runs == 2
    for measure in ({"field": "round_success"}, {"field": "round_success", "agg": "mean"}):
        query = Query.model_validate({"grain": "round", "selection": selection,
                                      "measures": [measure]})  # fmt: skip
        cold = _outcome(cohort.runs_dir, query, cache=False)
        assert isinstance(cold, str) and "'round_success': no such field" in cold
        assert _outcome(cohort.runs_dir, query, cache=True) == cold


SELECTIONS = [
    {"kind": "run_ids", "run_ids": ["r1"]},
    {"kind": "run_ids", "run_ids": ["r2", "r4"]},
    {"kind": "run_ids", "run_ids": ["r5", "r3", "r1"]},
    {"kind": "filters", "knob": ["channel_noise_level>0.1"]},
    {"kind": "filters", "knob": ["channel_noise_level>5"]},
]  # fmt: skip


@pytest.mark.parametrize("grain", ["run", "round", "agent"])
def test_every_selection_answers_alike_warm_and_cold(cohort: Cohort, grain: str) -> None:
    """For each selection and grain, whatever the cache holds, the warm answer is the cold one."""
    Path(cohort.runs_dir, cohort.ids["r4"], "veyru_report.json").unlink()  # one unscored run
    both(cohort, grain=grain, measures=[{"field": "run_id", "agg": "count"}])  # fills the cache
    for raw in SELECTIONS:
        selection = dict(raw)
        if raw["kind"] == "run_ids":
            selection["run_ids"] = [cohort.ids[s] for s in raw["run_ids"]]
        for measures in ([{"field": "run_id", "agg": "count"}], [{"field": "round_success"}]):
            query = Query.model_validate({"grain": grain, "selection": selection,
                                          "measures": measures, "by": ["seed"]})  # fmt: skip
            cold = _outcome(cohort.runs_dir, query, cache=False)
            assert _outcome(cohort.runs_dir, query, cache=True) == cold, (selection, measures)
        chosen = query.selection
        assert fields(cohort.runs_dir, chosen, grain) == fields(
            cohort.runs_dir, chosen, grain, cache=False
        )


def _edit_in_place(path: Path, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` (same length) and put the file's mtime back, as ``touch -r``."""
    assert len(old) == len(new)
    before = path.stat()
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_labels_edited_at_the_same_size_with_the_mtime_put_back_are_read_again(
    cohort: Cohort,
) -> None:
    """The fresh user's case: ``"trial": "1"`` made ``"9"``, ``touch -r``, the CLI asked again."""
    for short, trial in (("r1", "1"), ("r2", "2")):
        Path(cohort.runs_dir, cohort.ids[short], "labels.json").write_text(
            json.dumps({"trial": trial})
        )
    command = [str(Path(sys.executable).with_name("glossogen")), "analyze", "--runs-dir",
               cohort.runs_dir, "--by", "label.trial", "--measure", "total_chars:count", "--json"]  # fmt: skip

    def trials() -> list[tuple[str | None, int]]:
        out = json.loads(subprocess.run(command, capture_output=True, check=True).stdout)
        return [(g["keys"]["label.trial"], g["cells"][0]["value"]) for g in out["groups"]]

    assert trials() == [("1", 1), ("2", 1), (None, 3)]
    assert cache_file(cohort).exists()
    labels = Path(cohort.runs_dir, cohort.ids["r1"], "labels.json")
    _edit_in_place(labels, '"trial": "1"', '"trial": "9"')
    assert trials() == [("2", 1), ("9", 1), (None, 3)]


def test_a_cache_holding_a_label_flag_as_true_is_read_again_as_the_export_writes_it(
    cohort: Cohort,
) -> None:
    """A cache written before a bare tag's cell was the contract's ``True`` (it held ``true``,
    its entries' facts without the ``label_flag`` mark) is read again, not served stale."""
    Path(cohort.runs_dir, cohort.ids["r2"], "labels.json").write_text(json.dumps({"pilot": True}))
    query = {"grain": "round", "by": ["label_flag.pilot"],
             "measures": [{"field": "round_success", "agg": "count"}]}  # fmt: skip

    def pilots(result: Result) -> list[tuple[str | None, float | None]]:
        return [(g.keys["label_flag.pilot"], g.cells[0].value) for g in result.groups]

    assert pilots(both(cohort, **query)) == [("True", 2.0), (None, 8.0)]  # r2's two rounds
    with zipfile.ZipFile(cache_file(cohort)) as archive:
        tables = {
            t: pl.read_parquet(archive.read(f"{t}.parquet")) for t in ("run", "round", "agent")
        }
    # The run table holds the run's context (the round and agent tables join it at a query).
    tables["run"] = tables["run"].with_columns(
        pl.col("label_flag.pilot").replace("True", "true"),
        pl.col("__record").str.replace(',"label_flag":"True"', "", literal=True),
    )
    assert tables["run"].get_column("label_flag.pilot").drop_nulls().to_list() == ["true"]
    assert all('"label_flag"' not in facts for facts in tables["run"].get_column("__record"))
    with zipfile.ZipFile(cache_file(cohort), "w") as archive:
        for table, frame in tables.items():
            data = io.BytesIO()
            frame.write_parquet(data)
            archive.writestr(f"{table}.parquet", data.getvalue())
    assert pilots(answer(cohort.runs_dir, Query.model_validate(query))) == [
        ("True", 2.0), (None, 8.0)]  # fmt: skip


def test_a_report_edited_at_the_same_size_with_the_mtime_put_back_is_read_again(
    cohort: Cohort,
) -> None:
    assert round_success(cohort) == [("1", 0.8), ("2", 0.4)]  # r1..r5: 1,1,0,1,1 and 0,1,0,0,1
    report = Path(cohort.runs_dir, cohort.ids["r3"], "veyru_report.json")
    data = json.loads(report.read_text())
    report.write_text(json.dumps(data))  # spelled as json.dumps spells it, then cached
    assert round_success(cohort) == [("1", 0.8), ("2", 0.4)]
    rounds = data["metrics"]["round_success"]["per_round"]
    old = json.dumps(rounds)
    rounds[1]["value"] = 1  # r3 wins round 2 after all
    _edit_in_place(report, old, json.dumps(rounds))
    assert round_success(cohort) == [("1", 0.8), ("2", 0.6)]


def test_a_log_edited_at_the_same_size_with_the_mtime_put_back_is_read_again(
    cohort: Cohort,
) -> None:
    query = {"grain": "run", "by": ["seed"], "measures": [{"field": "total_chars", "agg": "sum"}]}
    before = both(cohort, **query)
    sums = {g.keys["seed"]: g.cells[0].value for g in before.groups}
    log = Path(cohort.runs_dir, cohort.ids["r1"], "veyru.jsonl")  # seed 1, with r3
    ending = log.read_text().splitlines()[-1]
    chars = json.loads(ending)["total_chars"]
    old = f'"total_chars":{chars}'
    new = f'"total_chars":{int(str(chars)[0]) % 9 + 1}{str(chars)[1:]}'  # same digits count
    _edit_in_place(log, old, new)
    shift = int(new.rpartition(":")[2]) - chars
    after = both(cohort, **query)
    assert {g.keys["seed"]: g.cells[0].value for g in after.groups} == {
        **sums,
        "1": sums["1"] + shift,
    }


@pytest.mark.parametrize("link", ["run", "scenario"])
def test_a_run_linked_in_under_a_second_name_is_one_run_cold_warm_and_uncached(
    cohort: Cohort, tmp_path: Path, link: str
) -> None:
    """Its place is found from the stamp (no realpath of every run): two names, one run.

    ``run``: ``veyru/<later ts>`` a link to r1's folder; ``scenario``: the runs dir read through
    a link to it (``linked/veyru/...``), the run links as well.
    """
    r1 = Path(cohort.runs_dir, cohort.ids["r1"])
    alias = r1.parent / str(int(r1.name) + 1000)
    alias.symlink_to(r1, target_is_directory=True)
    runs_dir = cohort.runs_dir
    if link == "scenario":
        runs_dir = str(tmp_path / "linked")
        Path(runs_dir).symlink_to(cohort.runs_dir, target_is_directory=True)
    query = Query.model_validate({"measures": [{"field": "run_id", "agg": "count"}]})
    plain = answer(runs_dir, query, cache=False)
    assert (plain.runs, plain.run_ids) == (5, sorted(cohort.ids.values()))
    assert answer(runs_dir, query) == plain  # cold: the cache filled
    assert answer(runs_dir, query) == plain  # warm: from the cache
