"""``glossogen rejudge``: a cohort's in-run rulings asked again of a new judge, through the cache.

Ten veyru runs (scripted agents, two rounds) are judged in-run by ``openai:gpt-4.1-mini``,
answered over real HTTP by the stub model server: it passes every action. They are rejudged by
``openai:gpt-4.1``, which the stub answers "failed" on every third question it is sent. The
flip report of each run names exactly the rulings whose question got a "failed"; a second
rejudge with the same judge is answered from the judge cache with no request reaching the stub.
"""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.derive import ForkRequest, prepare_fork
from glossogen.eventlog import RunView
from glossogen.export import FilterSelection, RunRecord, select_runs
from glossogen.storage import RunFolder, RunLock
from tests.fixtures.model_stubs import RecordedRequest, StubFault, StubModelServer, StubReply
from tests.fixtures.played_runs import play_run

FIRST, SECOND = "gpt-4.1-mini", "gpt-4.1"
BASE = 1796100000


def _cli(*argv: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    return int(exited.value.code)


class Judges:
    """The stub's two judges: the first passes all, the second fails every third question."""

    def __init__(self) -> None:
        self.second_asked = 0
        self.failed_prompts: list[str] = []

    def __call__(self, req: RecordedRequest) -> StubReply:
        prompt = json.dumps(req.messages)
        success, reason = True, "first judge: done"
        if req.model == SECOND:
            self.second_asked += 1
            success = self.second_asked % 3 != 0
            reason = "second judge: done" if success else "second judge: not done"
            if not success:
                self.failed_prompts.append(prompt)
        return StubReply(tool_calls=[("final_result", {"success": success, "reason": reason})])


@pytest.fixture
def cohort(
    model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> tuple[Path, list[str], str, Judges]:
    """Ten judged runs and a fork of the first after round 1; the judges answering them."""
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    judges = Judges()
    model_stub.responder = judges
    runs = tmp_path / "runs"
    judged = (
        "judge_provider=openai",
        f"judge_model={FIRST}",
        "postmortem_enabled=false",
        "postmortem_after_swap=false",
    )
    ids = [
        play_run(str(runs), overrides=(*judged, f"seed={n + 1}"), now_unix=BASE + n).run_id
        for n in range(10)
    ]
    fork = prepare_fork(
        ForkRequest("veyru", str(runs / ids[0]), 1, str(runs)), now_unix=BASE + 100
    ).folder.run_id
    return runs, ids, fork, judges


def _expected(record: RunRecord, failed_prompts: list[str]) -> list[tuple[int, int, bool, bool]]:
    """(round, ruling, old, new) of each ruling of the run whose question the stub failed."""
    out = []
    per_round: dict[int, int] = {}
    for ruling in RunView.load(record.log_url).rulings:
        n = per_round[ruling.round_number] = per_round.get(ruling.round_number, 0) + 1
        sent = json.dumps(ruling.question)[1:-1]
        if any(sent in prompt for prompt in failed_prompts):
            out.append((ruling.round_number, n, True, False))
    return out


def test_rejudge_names_each_flip_and_a_second_rejudge_asks_nothing(
    cohort: tuple[Path, list[str], str, Judges],
    model_stub: StubModelServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    runs, ids, fork, judges = cohort
    records = select_runs(str(runs), {"kind": "run_ids", "run_ids": ids}).records
    views = {r.run_id: RunView.load(r.log_url) for r in records}
    rulings = sum(len(v.rulings) for v in views.values())
    assert rulings == 38  # every stage an action ruled on, two rounds, ten runs
    assert {r.success for v in views.values() for r in v.rulings} == {True}  # the first judge
    questions = {(r.instructions, r.question) for v in views.values() for r in v.rulings}
    cache = tmp_path / "judge-cache"
    selection = [a for run_id in ids for a in ("--run-id", run_id)]
    argv = ["rejudge", "--runs-dir", str(runs), "--judge-cache", str(cache),
            "--model", SECOND, "--provider", "openai", *selection]  # fmt: skip
    capsys.readouterr()
    assert _cli(*argv) == 0
    out = capsys.readouterr().out

    asked = judges.second_asked
    assert asked == len(questions)  # each distinct question asked once, repeats from the cache
    assert len(judges.failed_prompts) == asked // 3
    flips_total = 0
    for record in records:
        report = json.loads((Path(record.run_url) / "judge_flips.json").read_text())
        got = [(f["round_number"], f["ruling"], f["old"], f["new"]) for f in report["flips"]]
        assert got == _expected(record, judges.failed_prompts), record.run_id
        assert report["rulings"] == len(views[record.run_id].rulings)
        assert report["derived_runs"] == ([fork] if record.run_id == ids[0] else [])
        flips_total += len(got)
        for flip in report["flips"]:
            assert (flip["old_reason"], flip["new_reason"]) == (
                "first judge: done",
                "second judge: not done",
            )
    assert flips_total >= len(judges.failed_prompts) > 0
    summary = json.loads((runs / "rejudge_summary.json").read_text())
    flipped = [r.run_id for r in records if _expected(r, judges.failed_prompts)]
    assert (summary["runs"], summary["rulings"], summary["flips"]) == (10, 38, flips_total)
    assert summary["flipped_runs"] == flipped
    hits = rulings - asked  # a question asked again in the cohort (the same action ruled on)
    assert (summary["cache_hits"], summary["cache_misses"]) == (hits, asked)
    # every miss answered is kept: the misses, the requests and the cache's files agree
    assert summary["cache_kept"] == len(list(cache.rglob("*.json"))) == asked
    affected = {ids[0]: [fork]} if ids[0] in flipped else {}
    assert summary["affected_derived_runs"] == affected
    assert out.splitlines()[-2] == (
        f"rejudged 10 runs, 38 rulings: {flips_total} flipped in {len(flipped)} runs; "
        f"judge cache {hits} hits, {asked} misses; cost ${summary['cost_usd']:.6f}"
    )
    first = next(r for r in records if r.run_id == flipped[0])
    lines = [
        f"  round {rnd} ruling {k}: passed -> failed"
        for rnd, k, _, _ in _expected(first, judges.failed_prompts)
    ]
    of = len(views[first.run_id].rulings)
    at = out.splitlines().index(f"{first.run_id}: {len(lines)} of {of} rulings flipped")
    assert out.splitlines()[at + 1 : at + 1 + len(lines)] == lines

    # export: a judge_flips column (blank for a run never rejudged: the fork)
    assert _cli("export", "--runs-dir", str(runs), "--out", str(tmp_path / "out"),
                "--frames", "run_level") == 0  # fmt: skip
    with (tmp_path / "out" / "run_level.csv").open(newline="") as f:
        cells = {row["run_id"]: row["judge_flips"] for row in csv.DictReader(f)}
    assert cells == {
        **{r.run_id: str(len(_expected(r, judges.failed_prompts))) for r in records},
        fork: "",
    }

    # the run browser: a badge in the list, the flips on the run's page
    from fastapi.testclient import TestClient

    from glossogen.server import create_app

    client = TestClient(create_app(str(runs)))
    listing = client.get("/").text
    for record in records:
        count = len(_expected(record, judges.failed_prompts))
        assert (f"judge flips {count}</span>" in listing) == (count > 0), record.run_id
    page = client.get(f"/runs/{first.run_id}").text
    assert f"rejudged: {len(lines)} flipped" in page
    for line in lines:
        assert f"<div>{html.escape(line.strip())}</div>" in page  # "passed -&gt; failed"

    # the same judge again: every answer from the cache, no request reaches the stub
    sent = len(model_stub.requests)
    assert _cli(*argv) == 0
    out = capsys.readouterr().out
    assert len(model_stub.requests) == sent
    assert "judge cache 38 hits, 0 misses; cost $0.000000" in out
    again = json.loads((runs / "rejudge_summary.json").read_text())
    assert (again["flips"], again["flipped_runs"]) == (flips_total, flipped)


def test_bad_input_is_one_line_naming_the_value_and_writes_nothing(
    cohort: tuple[Path, list[str], str, Judges],
    model_stub: StubModelServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    runs, _, _, _ = cohort
    cache = tmp_path / "judge-cache"
    file = tmp_path / "a-file"
    file.write_text("x")
    cases = [
        (["--model", SECOND], 64, "--model and --provider go together (the new judge)"),
        (["--model", SECOND, "--provider", "groq"], 64,
         "--provider 'groq' cannot judge (judge providers: anthropic, huggingface, openai)"),
        (["--judge-settings", "temperature=hot"], 64,
         "--judge-settings temperature='hot': not a number"),
        (["--judge-prompt", str(tmp_path / "none.txt")], 66, None),
        (["--label", "nobody"], 65, None),
    ]  # fmt: skip
    before = sorted(p for p in runs.rglob("*") if p.is_file())
    sent = len(model_stub.requests)
    for extra, code, message in cases:
        assert _cli("rejudge", "--runs-dir", str(runs), "--judge-cache", str(cache), *extra) == code
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1, err
        if message is not None:
            assert err[0] == f"glossogen: error: {message}"
        else:
            assert extra[1] in err[0]
    assert _cli("rejudge", "--runs-dir", str(runs), "--judge-cache", str(file)) == 64
    assert (
        capsys.readouterr().err == f"glossogen: error: --judge-cache {str(file)!r}: not a folder\n"
    )
    assert sorted(p for p in runs.rglob("*") if p.is_file()) == before
    assert not cache.exists()
    assert len(model_stub.requests) == sent
    assert RunFolder.at(str(runs / "veyru" / str(BASE))).read_object("judge_flips.json") is None


@pytest.fixture
def two_runs(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Two runs judged in-run by ``openai:gpt-4.1-mini`` (the stub passes every action)."""
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model_stub.responder = Judges()
    runs = tmp_path / "runs"
    judged = ("judge_provider=openai", f"judge_model={FIRST}", "postmortem_enabled=false",
              "postmortem_after_swap=false")  # fmt: skip
    for n in range(2):
        play_run(str(runs), overrides=(*judged, f"seed={n + 1}"), now_unix=BASE + n)
    monkeypatch.chdir(tmp_path)  # no .env above: the environment alone holds the keys
    return runs


def test_a_missing_key_of_the_recorded_judge_is_refused_before_anything_is_written(
    two_runs: Path,
    model_stub: StubModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No new judge named: each ruling goes to its recorded judge, whose key is checked first."""
    monkeypatch.delenv("OPENAI_API_KEY")
    before = sorted(p for p in two_runs.rglob("*") if p.is_file())
    sent = len(model_stub.requests)
    cache = tmp_path / "judge-cache"
    capsys.readouterr()
    assert _cli("rejudge", "--runs-dir", str(two_runs), "--judge-cache", str(cache)) == 77
    captured = capsys.readouterr()
    assert captured.err == (
        "glossogen: error: missing credentials: OPENAI_API_KEY "
        "(judge provider openai, recorded in 2 runs)\n"
    )
    assert captured.out == ""
    assert sorted(p for p in two_runs.rglob("*") if p.is_file()) == before
    assert not cache.exists()
    assert len(model_stub.requests) == sent

    # a new judge named: its key alone is checked
    argv = ["rejudge", "--runs-dir", str(two_runs), "--judge-cache", str(cache),
            "--model", "claude-sonnet-4-5", "--provider", "anthropic"]  # fmt: skip
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert _cli(*argv) == 77
    assert capsys.readouterr().err == (
        "glossogen: error: missing credentials: ANTHROPIC_API_KEY (judge provider anthropic)\n"
    )
    assert sorted(p for p in two_runs.rglob("*") if p.is_file()) == before


def test_rulings_the_judge_does_not_answer_are_counted_and_fail_the_command(
    two_runs: Path,
    model_stub: StubModelServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The new judge refuses the key (401): every ruling fails, is counted, and exits 1."""
    record = select_runs(str(two_runs), FilterSelection()).records[0]
    rulings = len(RunView.load(record.log_url).rulings)
    assert rulings == 3
    model_stub.responder = lambda req: StubFault(status=401, message="bad key sk-fake")
    sent = len(model_stub.requests)
    cache = tmp_path / "judge-cache"
    capsys.readouterr()
    code = _cli("rejudge", "--runs-dir", str(two_runs), "--judge-cache", str(cache),
                "--model", SECOND, "--provider", "openai", "--run-id", record.run_id)  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1
    assert len(model_stub.requests) - sent == 3  # each ruling asked once: a 401 is not retried
    assert captured.out.splitlines() == [
        "rejudged 1 run, 3 rulings: 0 flipped in 0 runs; judge cache 0 hits, 3 misses "
        "(0 answers kept); cost $0.000000; 3 failed",
        f"summary: {two_runs / 'rejudge_summary.json'}",
    ]
    assert captured.err == (
        "glossogen: error: the judge gave no answer to 3 of 3 rulings (not compared); its last "
        "error: ModelAuthenticationError: status_code: 401, model_name: gpt-4.1, body: "
        "{'message': 'bad key sk-fake', 'type': 'authentication_error', 'param': None, "
        "'code': None}\n"
    )
    summary = json.loads((two_runs / "rejudge_summary.json").read_text())
    assert (summary["runs"], summary["rulings"], summary["flips"], summary["failed"]) == (
        1,
        3,
        0,
        3,
    )
    assert (summary["cache_misses"], summary["cache_kept"]) == (3, 0)
    assert not cache.exists()  # a ruling with no answer is not cached: 3 misses, 0 files
    report = json.loads((Path(record.run_url) / "judge_flips.json").read_text())
    assert (report["failed"], report["flips"]) == (3, [])


def test_a_stray_folder_is_no_run_and_a_refused_selection_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder not named as a run is not selected; nothing selected, the last summary stays."""
    runs, cache = tmp_path / "runs", tmp_path / "judge-cache"
    play_run(str(runs), rounds=1, now_unix=BASE)
    (runs / "notes" / "drafts").mkdir(parents=True)
    summary = runs / "rejudge_summary.json"
    summary.write_text('{"runs": 7}')
    argv = ["rejudge", "--runs-dir", str(runs), "--judge-cache", str(cache)]
    assert _cli(*argv, "--status", "running") == 65
    assert capsys.readouterr() == (
        "",
        f"glossogen: error: no run under {runs} matches --status 'running' (1 scanned): "
        "nothing to rejudge\n",
    )
    assert _cli(*argv, "--scenario", "nope") == 65
    assert capsys.readouterr() == (
        "",
        f"glossogen: error: --scenario 'nope' has no run under {runs} (scenarios there: veyru)\n",
    )
    broken = runs / "broken" / str(BASE)
    broken.mkdir(parents=True)
    (broken / "broken.jsonl").write_text("not json\n")
    assert _cli(*argv, "--scenario", "broken") == 66
    assert capsys.readouterr() == (
        "rejudged 0 runs: none could be read; no summary written\n",
        f"glossogen: error: broken/{BASE}: cannot be read: broken/{BASE}/broken.jsonl is not a "
        "run log (no simulation_started event)\n",  # within --runs-dir (was its absolute path)
    )
    assert summary.read_text() == '{"runs": 7}'
    assert not cache.exists()


def test_a_run_still_playing_is_refused_by_name_and_nothing_of_it_is_written(
    two_runs: Path,
    model_stub: StubModelServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A live writer holds the run's lock: as replay and evaluate, rejudge refuses it (65)."""
    live, ended = select_runs(str(two_runs), FilterSelection()).records
    log = Path(live.log_url)  # the writer has not logged simulation_ended yet
    lines = log.read_text().splitlines(keepends=True)
    assert json.loads(lines[-1])["event_type"] == "simulation_ended"
    log.write_text("".join(lines[:-1]))
    before = sorted(p for p in two_runs.rglob("*") if p.is_file())
    sent = len(model_stub.requests)
    cache = tmp_path / "judge-cache"
    argv = ["rejudge", "--runs-dir", str(two_runs), "--judge-cache", str(cache),
            "--model", SECOND, "--provider", "openai"]  # fmt: skip
    refused = f"glossogen: error: run {live.run_id} has not ended (still playing): only an ended run is rejudged\n"
    lock = RunLock(RunFolder.at(live.run_url))
    try:
        capsys.readouterr()
        assert _cli(*argv, "--run-id", live.run_id) == 65
        captured = capsys.readouterr()
        assert (captured.out, captured.err) == ("", refused)
        assert sorted(p for p in two_runs.rglob("*") if p.is_file()) == before
        assert len(model_stub.requests) == sent
        assert not cache.exists()

        # over a cohort, as evaluate --runs-dir: the live run is named and left alone, the
        # others are rejudged; the command still exits 65
        assert _cli(*argv) == 65
        captured = capsys.readouterr()
        rulings = len(RunView.load(ended.log_url).rulings)
        assert captured.out.splitlines()[0].startswith(f"rejudged 1 run, {rulings} rulings: ")
        assert captured.err == refused
        assert not (Path(live.run_url) / "judge_flips.json").exists()
        assert (Path(ended.run_url) / "judge_flips.json").exists()
        assert json.loads((two_runs / "rejudge_summary.json").read_text())["runs"] == 1
    finally:
        lock.release()


def test_a_log_that_holds_a_ruling_twice_is_refused_naming_the_line_by_verify_and_rejudge(
    two_runs: Path,
    model_stub: StubModelServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A ``judge_called`` line written again (was: rejudge counted one ruling more than the run
    took, 0); rejudge refuses it as replay and fork do, naming the line, and asks nothing."""
    twice, _ = select_runs(str(two_runs), FilterSelection()).records
    log = Path(twice.log_url)
    lines = log.read_text().splitlines(keepends=True)
    first = next(n for n, line in enumerate(lines, 1) if '"judge_called"' in line)
    ruling = json.loads(lines[first - 1])
    lines.insert(first, lines[first - 1])
    log.write_text("".join(lines))
    named = (f"event {ruling['event_id']} (judge_called) is in the log twice (lines {first}, "
             f"{first + 1})")  # fmt: skip
    capsys.readouterr()
    assert _cli("verify", twice.run_url) == 1
    assert (  # verify names it under its requests rule (and its spend, summed twice)
        f"{twice.run_id}: requests: line {first + 1} (round {ruling['round_number']}): request "
        f"{ruling['request_ids'][0]} settled twice (judge_called; first at line {first})"
    ) in capsys.readouterr().out.splitlines()
    before = sorted(p for p in two_runs.rglob("*") if p.is_file())
    sent = len(model_stub.requests)
    cache = tmp_path / "judge-cache"
    assert _cli("rejudge", "--runs-dir", str(two_runs), "--judge-cache", str(cache), "--model",
                SECOND, "--provider", "openai", "--run-id", twice.run_id) == 65  # fmt: skip
    assert capsys.readouterr() == ("", (
        f"glossogen: error: {log} line {first + 1}: {named}; a run whose log holds an event "
        "twice is not rejudged\n"
    ))  # fmt: skip
    assert sorted(p for p in two_runs.rglob("*") if p.is_file()) == before
    assert len(model_stub.requests) == sent
    assert not cache.exists()
