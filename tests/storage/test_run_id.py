"""``storage.resolve_run_id``: the one reading of a run id a user sent, every surface's."""

from __future__ import annotations

import pickle

import pytest

from glossogen.storage import RunFolder, RunIdRefused, RunStore, resolve_run_id

SHAPE = "not a run id (<scenario>/<run_dir_name>, relative to the runs directory)"


def test_a_run_id_resolves_to_its_folder_under_the_runs_dir_reading_nothing() -> None:
    folder = resolve_run_id("/nowhere/runs", "veyru/1790000000")
    assert folder == RunFolder("veyru/1790000000", "/nowhere/runs/veyru/1790000000", 1790000000)
    assert RunStore("s3://b/runs").open_run("veyru/17") == RunFolder(
        "veyru/17", "s3://b/runs/veyru/17", 17
    )


@pytest.mark.parametrize(
    ("run_id", "field", "line", "fault", "code"),
    [
        ("veyru/abc", "run_id", "run ids that no longer resolve: veyru/abc", "no_run", 66),
        ("veyru/1.5", "run_ids", "run ids that no longer resolve: veyru/1.5", "no_run", 66),
        ("veyru\\1", "run_id", f"run_id 'veyru\\1': {SHAPE}", "malformed", 64),
        ("veyru/1/", "run_ids", f"run_ids 'veyru/1/': {SHAPE}", "malformed", 64),
        ("veyru/\udcff", "source_run_id", "source_run_id 'veyru/\\udcff': not UTF-8 text",
         "malformed", 64),
        ("/x/veyru/1", "run_id",
         "run_id '/x/veyru/1': a path, not a run id: <scenario>/<run_dir_name>, relative to "
         "the runs directory", "malformed", 64),
    ],
)  # fmt: skip
def test_a_bad_run_id_is_refused_with_its_fault_and_exit_code(
    run_id: str, field: str, line: str, fault: str, code: int
) -> None:
    with pytest.raises(RunIdRefused) as refused:
        resolve_run_id("/nowhere/runs", run_id, field)
    exc = refused.value
    assert (str(exc), exc.fault, exc.exit_code, exc.run_id) == (line, fault, code, run_id)
    assert (exc.refusal is None) == (fault == "no_run")
    again = pickle.loads(pickle.dumps(exc))  # a task's failure carries it whole
    assert (str(again), again.fault, again.refusal) == (line, exc.fault, exc.refusal)


def test_a_run_folder_typed_is_quoted_whole_and_refused_when_not_utf8_text() -> None:
    """``glossogen stop``'s folder: the whole path quoted, a byte anywhere in it refused; a
    folder that names no run named as typed (was its last two parts, ``x/notes``)."""
    with pytest.raises(RunIdRefused) as refused:
        resolve_run_id("", "veyru/1", "run_dir", sent="/tmp/r\udcff/veyru/1")
    assert str(refused.value) == "run_dir '/tmp/r\\udcff/veyru/1': not UTF-8 text"
    with pytest.raises(RunIdRefused) as refused:
        resolve_run_id("", "x/notes", "run_dir", sent="/tmp/x/notes")
    assert str(refused.value) == "run ids that no longer resolve: /tmp/x/notes"
