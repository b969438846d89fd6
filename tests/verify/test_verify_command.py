"""``glossogen verify``: one line per broken rule, the summary, the export's selection flags and
the exit codes (0 balanced, 1 broken, 64 usage, 65 refused, 66 unreadable)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from glossogen.cli import main
from glossogen.eventlog import RunView
from glossogen.storage import RunFolder
from tests.fixtures.played_runs import claim_unbegun, play_run
from tests.verify.runs import copy_run, duplicate_verdict, line_of, lines, write


def _verify(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    with pytest.raises(SystemExit) as exited:
        main(["verify", *args])
    out, err = capsys.readouterr()
    return int(exited.value.code), out.splitlines(), err.splitlines()


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Under one runs dir: a 1-round veyru run labelled ``arm=a``, a prisoners_dilemma run,
    and a 2-round veyru run copied with round 2's verdict duplicated (its books broken); and
    two stray folders not named as runs (``notes/drafts``, ``veyru/scratch``), which no
    selection counts."""
    root = tmp_path_factory.mktemp("runs")
    (root / "notes" / "drafts").mkdir(parents=True)
    (root / "veyru" / "scratch").mkdir(parents=True)
    one = play_run(str(root), rounds=1, overrides=("labels.arm=a",))
    pd = play_run(str(root), scenario="prisoners_dilemma", rounds=1)
    spare = tmp_path_factory.mktemp("spare")
    two = play_run(str(spare), rounds=2)
    broken, log, line = duplicate_verdict(two, root, 1000000009)
    pd_seat = next(iter(RunView.load(pd.log_url).roster))
    return {"root": str(root), "one": one.run_id, "pd": pd.run_id, "broken": broken,
            "line": line, "one_dir": one.url, "pd_dir": pd.url, "pd_seat": pd_seat,
            "broken_dir": str(log.parent)}  # fmt: skip


def test_a_broken_run_is_one_line_and_the_exit_is_1(
    cohort: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _verify(capsys, "--runs-dir", cohort["root"]) == (
        1, [cohort["line"], "verified 3 runs: 1 failed"], [])  # fmt: skip
    assert _verify(capsys, cohort["broken_dir"]) == (
        1, [cohort["line"], "verified 1 run: 1 failed"], [])  # fmt: skip


def test_run_folders_that_balance_exit_0(
    cohort: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _verify(capsys, cohort["one_dir"], cohort["pd_dir"]) == (
        0, ["verified 2 runs: 0 failed"], [])  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "runs", "failed"),
    [
        (["--scenario", "prisoners_dilemma"], 1, 0),
        (["--label", "arm=a"], 1, 0),
        (["--knob", "round_count>=2"], 1, 1),
        (["--status", "completed"], 3, 1),
        (["--run-id-contains", "1000000009"], 1, 1),
        (["--contains-agent-id", "PD_SEAT"], 1, 0),
        (["--run-id", "ONE", "--run-id", "PD"], 2, 0),
    ],
)
def test_the_exports_selection_flags_pick_the_runs(
    cohort: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    runs: int,
    failed: int,
) -> None:
    named = {"PD_SEAT": cohort["pd_seat"], "ONE": cohort["one"], "PD": cohort["pd"]}
    code, out, err = _verify(capsys, "--runs-dir", cohort["root"],
                             *[named.get(f, f) for f in flags])  # fmt: skip
    plural = "" if runs == 1 else "s"
    assert (code, out[-1], err) == (
        int(failed > 0),
        f"verified {runs} run{plural}: {failed} failed",
        [],
    )
    assert out[:-1] == ([cohort["line"]] if failed else [])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["RUN", "--runs-dir", "ROOT"], "name run folders or a runs dir (--runs-dir), not both"),
        ([], "name the run folders to verify, or a runs dir (--runs-dir)"),
        (["RUN", "--scenario", "veyru"],
         "the selection flags select runs of --runs-dir, not run folders"),
        (["--runs-dir", "ROOT", "--run-id", "veyru/1", "--scenario", "veyru"],
         "--run-id cannot be combined with --scenario"),
        (["--runs-dir", "ROOT", "--run-id", " "],
         "--run-id needs a run id (<scenario>/<run_dir_name>)"),
        (["--runs-dir", "ROOT", "--knob", "round_count"],
         "--knob 'round_count': no operator; write <knob><op><value> with op one of "
         "!= >= <= = > <"),
    ],
)  # fmt: skip
def test_usage_errors_exit_64_in_one_line(
    cohort: dict[str, str], capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    named = {"RUN": cohort["one_dir"], "ROOT": cohort["root"]}
    assert _verify(capsys, *[named.get(a, a) for a in args]) == (
        64, [], [f"glossogen: error: {message}"])  # fmt: skip


def test_what_cannot_be_read_exits_66_naming_it(
    cohort: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "veyru" / "1000000000"
    empty.mkdir(parents=True)
    assert _verify(capsys, str(empty), cohort["one_dir"]) == (
        66,
        ["verified 1 run: 0 failed, 1 unreadable"],
        [f"glossogen: error: {empty}: cannot be read: no event log"],
    )
    not_a_run = tmp_path / "loose"
    not_a_run.mkdir()
    assert _verify(capsys, str(not_a_run)) == (
        66,
        ["verified 0 runs: 0 failed, 1 unreadable"],
        [f"glossogen: error: {not_a_run}: cannot be read: '{not_a_run}' is not a run folder "
         "(<runs-dir>/<scenario>/<unix_ts>)"],
    )  # fmt: skip
    missing = tmp_path / "nowhere"
    gone = missing / "veyru" / "1000000001"
    assert _verify(capsys, str(missing), str(gone)) == (
        66,
        ["verified 0 runs: 0 failed, 2 unreadable"],
        [f"glossogen: error: {missing}: cannot be read: '{missing}' does not exist",
         f"glossogen: error: {gone}: cannot be read: '{gone}' does not exist"],
    )  # fmt: skip
    assert _verify(capsys, "--runs-dir", str(missing)) == (
        66, [], [f"glossogen: error: --runs-dir '{missing}' does not exist"])  # fmt: skip
    assert _verify(capsys, "--runs-dir", cohort["root"], "--run-id", "veyru/1") == (
        66,
        ["verified 0 runs: 0 failed, 1 unreadable"],
        [f"glossogen: error: veyru/1: no such run under {cohort['root']}"],
    )


def test_a_knob_value_of_the_wrong_type_is_refused_65(
    cohort: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _verify(capsys, "--runs-dir", cohort["root"], "--knob", "round_count>=many")
    assert (code, out) == (65, [])
    assert err == ["glossogen: error: --knob 'round_count>=many': knob 'round_count', "
                   "operator '>=', value 'many': the run records a number"]  # fmt: skip


def test_the_line_names_the_run_as_its_folder_does(cohort: dict[str, str]) -> None:
    assert RunFolder.at(cohort["broken_dir"]).run_id == cohort["broken"]


def test_runs_on_s3_are_verified_by_url(s3_bucket: str, capsys: pytest.CaptureFixture[str]) -> None:
    runs_dir = f"{s3_bucket}/runs"
    one = play_run(runs_dir, rounds=2)
    play_run(runs_dir, scenario="prisoners_dilemma", rounds=1)
    assert _verify(capsys, "--runs-dir", runs_dir) == (0, ["verified 2 runs: 0 failed"], [])
    assert _verify(capsys, one.url) == (0, ["verified 1 run: 0 failed"], [])


def test_a_run_whose_ending_was_torn_fails_naming_the_line(
    cohort: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run_id, log = copy_run(RunFolder.at(cohort["one_dir"]), tmp_path, 1000000020)
    text = log.read_text()
    log.write_text(text[: len(text) - 40])  # the simulation_ended line cut mid-write
    torn = len(text.splitlines())
    line = (f"{run_id}: ended: line {torn}: the last line is torn (cut off mid-write) and no "
            "simulation_ended precedes it: a stopped run whose books cannot close")  # fmt: skip
    assert _verify(capsys, str(log.parent), cohort["one_dir"]) == (
        1, [line, "verified 2 runs: 1 failed"], [])  # fmt: skip
    # The words are the status filter's: --status stopped selects it, --status interrupted not.
    assert _verify(capsys, "--runs-dir", str(tmp_path), "--status", "stopped") == (
        1, [line, "verified 1 run: 1 failed"], [])  # fmt: skip
    assert _verify(capsys, "--runs-dir", str(tmp_path), "--status", "interrupted") == (
        65, [], [f"glossogen: error: no run under {tmp_path} matches --status 'interrupted' "
                 "(1 scanned): nothing to verify"])  # fmt: skip


def test_a_run_folder_with_no_log_is_unreadable_however_it_is_named(
    cohort: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A claimed run folder whose log never began is named under --runs-dir as by its path
    (66); a folder not named as a run is still no run; a filter it fails leaves it out."""
    root = tmp_path / "runs"
    copy_run(RunFolder.at(cohort["one_dir"]), root, 1000000030)  # labelled arm=a, completed
    claimed = claim_unbegun(str(root), ("labels.arm=a",), now_unix=1000000031)
    assert sorted(p.name for p in Path(claimed.url).iterdir()) == ["config.json", "labels.json"]
    (root / "notes" / "drafts").mkdir(parents=True)
    unread = "glossogen: error: veyru/1000000031: cannot be read: no event log"
    assert _verify(capsys, "--runs-dir", str(root)) == (
        66, ["verified 1 run: 0 failed, 1 unreadable"], [unread])  # fmt: skip
    assert _verify(capsys, "--runs-dir", str(root), "--label", "arm=a") == (
        66, ["verified 1 run: 0 failed, 1 unreadable"], [unread])  # fmt: skip
    assert _verify(capsys, "--runs-dir", str(root), "--status", "queued") == (
        66, ["verified 0 runs: 0 failed, 1 unreadable"], [unread])  # fmt: skip
    assert _verify(capsys, "--runs-dir", str(root), "--status", "completed") == (
        0, ["verified 1 run: 0 failed"], [])  # fmt: skip
    assert _verify(capsys, "--runs-dir", str(root), "--label", "arm=b", "--scenario", "veyru") == (
        65, [], [f"glossogen: error: no run under {root} matches --scenario 'veyru' --label "
                 "'arm=b' (2 scanned): nothing to verify"])  # fmt: skip
    assert _verify(capsys, claimed.url) == (
        66, ["verified 0 runs: 0 failed, 1 unreadable"],
        [f"glossogen: error: {claimed.url}: cannot be read: no event log"])  # fmt: skip


def test_a_broken_labels_json_is_unreadable_however_the_run_is_named(
    cohort: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    run_id, log = copy_run(RunFolder.at(cohort["one_dir"]), root, 1000000040)
    labels = log.parent / "labels.json"
    labels.write_text('{"arm": ')
    reason = (f"cannot be read: {labels} is not valid JSON (Expecting value: line 1 column 9 "
              "(char 8))")  # fmt: skip
    assert _verify(capsys, str(log.parent)) == (
        66, ["verified 0 runs: 0 failed, 1 unreadable"],
        [f"glossogen: error: {log.parent}: {reason}"])  # fmt: skip
    within = reason.replace(f"{root}/", "")  # under --runs-dir: the file within it (issue 32)
    assert _verify(capsys, "--runs-dir", str(root)) == (
        66, ["verified 0 runs: 0 failed, 1 unreadable"], [f"glossogen: error: {run_id}: {within}"])  # fmt: skip


def test_one_folder_named_twice_is_verified_once(
    cohort: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The same folder twice, with a trailing slash, through a link, or linked under a second
    run id in a runs dir: one run, one line per broken rule."""
    broken = cohort["broken_dir"]
    link = tmp_path / "links" / "veyru" / "1000000009"
    link.parent.mkdir(parents=True)
    link.symlink_to(broken)
    assert _verify(capsys, broken, broken + "/", str(link), broken) == (
        1, [cohort["line"], "verified 1 run: 1 failed"], [])  # fmt: skip
    gone = tmp_path / "veyru" / "1000000001"
    assert _verify(capsys, str(gone), str(gone)) == (
        66, ["verified 0 runs: 0 failed, 1 unreadable"],
        [f"glossogen: error: {gone}: cannot be read: '{gone}' does not exist"])  # fmt: skip
    root = tmp_path / "runs"
    copy_run(RunFolder.at(broken), root, 1000000009)
    (root / "veyru" / "1000000050").symlink_to(root / "veyru" / "1000000009")
    assert _verify(capsys, "--runs-dir", str(root)) == (
        1, [cohort["line"], "verified 1 run: 1 failed"], [])  # fmt: skip


def test_a_negative_cost_that_balances_is_named(
    cohort: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """One answer priced below nothing, the ending's figures edited to match: the totals
    balance, and the cost is named in one line."""
    run_id, log = copy_run(RunFolder.at(cohort["one_dir"]), tmp_path, 1000000060)
    events = lines(log)
    answer = next(e for e in events if e["event_type"] == "llm_response_received")
    ended = next(e for e in events if e["event_type"] == "simulation_ended")
    seat = answer["agent_id"]
    assert (answer["cost_usd"], ended["total_cost_usd"]) == (0.0, 0.0)
    answer["cost_usd"] = ended["total_cost_usd"] = -0.25
    next(c for c in ended["agent_costs"] if c["agent_id"] == seat)["cost_usd"] = -0.25
    write(log, events)
    assert json.loads(log.read_text().splitlines()[-1])["total_cost_usd"] == -0.25
    assert _verify(capsys, str(log.parent)) == (
        1,
        [f"{run_id}: spend: line {line_of(events, answer)} (round 1, agent {seat}): "
         "llm_response_received cost_usd -0.25 is negative: a priced request cannot cost less "
         "than nothing",
         "verified 1 run: 1 failed"],
        [],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--scenario", "nosuch"],
         "--scenario 'nosuch' has no run under ROOT (scenarios there: prisoners_dilemma, veyru)"),
        (["--scenario", "veyru", "--scenario", "pd"],
         "--scenario 'pd' has no run under ROOT (scenarios there: prisoners_dilemma, veyru)"),
        (["--status", "running"],
         "no run under ROOT matches --status 'running' (3 scanned): nothing to verify"),
        (["--scenario", "veyru", "--label", "arm=b"],
         "no run under ROOT matches --scenario 'veyru' --label 'arm=b' (2 scanned): nothing to "
         "verify"),
        (["EMPTY"], "EMPTY holds no run: nothing to verify"),
        (["EMPTY", "--scenario", "veyru"],
         "--scenario 'veyru' has no run under EMPTY (it holds no run)"),
    ],
)  # fmt: skip
def test_a_selection_of_no_run_is_refused_65_naming_it(
    cohort: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    flags: list[str],
    message: str,
) -> None:
    where = str(tmp_path) if flags[0] == "EMPTY" else cohort["root"]
    asked = flags[1:] if flags[0] == "EMPTY" else flags
    expected = message.replace("ROOT", where).replace("EMPTY", where)
    assert _verify(capsys, "--runs-dir", where, *asked) == (
        65, [], [f"glossogen: error: {expected}"])  # fmt: skip


def test_a_stray_folder_is_no_run_and_a_broken_run_stays_unreadable(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    (root / "notes" / "drafts").mkdir(parents=True)
    assert _verify(capsys, "--runs-dir", str(root), "--status", "running") == (
        65, [], [f"glossogen: error: no run under {root} matches --status 'running' (0 scanned): "
                 "nothing to verify"])  # fmt: skip
    assert _verify(capsys, "--runs-dir", str(root), "--scenario", "notes") == (
        65, [], [f"glossogen: error: --scenario 'notes' has no run under {root} (it holds no run)"])  # fmt: skip
    broken = root / "veyru" / "1000000000"
    broken.mkdir(parents=True)
    (broken / "veyru.jsonl").write_text("not json\n")
    assert _verify(capsys, "--runs-dir", str(root), "--status", "running") == (
        66,
        ["verified 0 runs: 0 failed, 1 unreadable"],
        ["glossogen: error: veyru/1000000000: cannot be read: veyru/1000000000/veyru.jsonl is not "
         "a run log (no simulation_started event)"],  # within --runs-dir (was its absolute path)
    )  # fmt: skip
    assert _verify(capsys, "--runs-dir", str(root), "--scenario", "nope") == (
        65, [], [f"glossogen: error: --scenario 'nope' has no run under {root} (scenarios there: veyru)"])  # fmt: skip


VERIFY_PROBE = """
import sys
from glossogen.cli import main
try:
    main(["verify", sys.argv[1]])
except SystemExit as exited:
    print(exited.code)
print(sorted(m for m in ("polars", "pyarrow", "prefect", "pydantic_ai") if m in sys.modules))
"""


def test_verify_imports_no_tables_prefect_or_pydantic_ai(cohort: dict[str, str]) -> None:
    """Selecting and checking runs needs no polars (the export's tables load on first use)."""
    done = subprocess.run(
        [sys.executable, "-c", VERIFY_PROBE, cohort["one_dir"]],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-2:] == ["0", "[]"]
