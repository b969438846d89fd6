"""A folder claimed for a run that never started is removed; anything else is left alone."""

import pytest

from glossogen.storage import RunStore, open_fs


def _names(url: str) -> list[str]:
    fs, path = open_fs(url)
    fs.invalidate_cache(path)
    if not fs.exists(path):
        return []
    return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(path, detail=False))


@pytest.fixture(params=["local", "s3"])
def runs_dir(request, tmp_path):
    if request.param == "local":
        return str(tmp_path / "runs")
    return f"{request.getfixturevalue('s3_bucket')}/runs"


def test_a_claimed_folder_with_only_its_config_files_is_removed(runs_dir):
    store = RunStore(runs_dir)
    folder = store.claim_run_dir("demo", 1700000000)
    folder.write_json("config.json", {"round_count": 2})
    folder.write_json("labels.json", {"sweep": "s"})
    assert folder.discard_unstarted() is True
    assert _names(folder.url) == []
    assert store.list_runs() == []
    # The timestamp is free again: the next claim of that second gets it.
    assert store.claim_run_dir("demo", 1700000000).run_id == "demo/1700000000"


def test_a_folder_with_a_log_or_a_file_of_its_own_is_left_exactly_as_it_is(runs_dir):
    store = RunStore(runs_dir)
    played = store.claim_run_dir("demo", 1700000000)
    played.write_json("config.json", {"round_count": 2})
    fs, path = open_fs(played.log_url)
    fs.pipe_file(path, b'{"event_type": "simulation_started"}\n')
    assert played.discard_unstarted() is False
    assert "demo.jsonl" in _names(played.url)
    assert "config.json" in _names(played.url)

    noted = store.claim_run_dir("demo", 1700000100)
    noted.write_json("config.json", {"round_count": 2})
    noted.write_json("notes.json", {"by": "a researcher"})
    assert noted.discard_unstarted() is False
    assert "notes.json" in _names(noted.url)
    assert store.list_runs() == ["demo/1700000000", "demo/1700000100"]
