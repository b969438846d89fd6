import json
import os

import pytest

from glossogen.storage import RunFolder, RunStore, StorageError, absolute, join, open_fs


def _tree(root) -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        found += [os.path.join(rel, d) + "/" for d in dirnames]
        found += [os.path.join(rel, f) for f in filenames]
    return sorted(p.removeprefix("./") for p in found)


def test_store_creates_nothing_until_a_claim(tmp_path):
    runs = tmp_path / "runs"
    store = RunStore(str(runs))
    assert not runs.exists()
    assert store.list_runs() == []


def test_two_claims_in_the_same_second_get_two_folders(tmp_path):
    runs = tmp_path / "runs"
    store = RunStore(str(runs))
    first = store.claim_run_dir("demo", 1700000000)
    second = store.claim_run_dir("demo", 1700000000)
    assert first == RunFolder("demo/1700000000", str(runs / "demo" / "1700000000"), 1700000000)
    assert second == RunFolder("demo/1700000001", str(runs / "demo" / "1700000001"), 1700000001)
    assert _tree(runs) == ["demo/", "demo/1700000000/", "demo/1700000001/"]


def test_relative_runs_dir_gives_absolute_urls(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    claimed = RunStore("runs").claim_run_dir("demo", 5)
    assert claimed.url == str(tmp_path / "runs" / "demo" / "5")


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b"])
def test_claim_refuses_path_like_scenario_names(tmp_path, name):
    with pytest.raises(ValueError, match="invalid scenario name"):
        RunStore(str(tmp_path)).claim_run_dir(name, 1)
    assert _tree(tmp_path) == []


def test_write_json_then_read_json(tmp_path):
    store = RunStore(str(tmp_path))
    run = store.claim_run_dir("demo", 100)
    store.write_json(run.url, "config.json", {"b": [1, 2.5, None], "a": "é"})
    assert (tmp_path / "demo" / "100" / "config.json").read_text(encoding="utf-8") == (
        '{\n  "b": [\n    1,\n    2.5,\n    null\n  ],\n  "a": "é"\n}\n'
    )
    assert store.read_json(run.url, "config.json") == {"b": [1, 2.5, None], "a": "é"}
    assert store.exists(run.url, "config.json") is True
    assert store.exists(run.url, "labels.json") is False
    store.write_json(run.url, "atif/a1.json", {"steps": []})
    assert store.read_json(run.url, "atif/a1.json") == {"steps": []}
    assert _tree(tmp_path / "demo" / "100") == ["atif/", "atif/a1.json", "config.json"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_write_json_leaves_no_file_when_serialising_fails(tmp_path, bad):
    store = RunStore(str(tmp_path))
    run = store.claim_run_dir("demo", 100)
    with pytest.raises(ValueError):
        store.write_json(run.url, "report.json", {"score": bad})
    with pytest.raises(TypeError):
        store.write_json(run.url, "report.json", {"when": object()})
    assert _tree(tmp_path / "demo" / "100") == []
    store.write_json(run.url, "report.json", {"score": 1})
    with pytest.raises(ValueError):
        store.write_json(run.url, "report.json", {"score": bad})
    assert json.loads((tmp_path / "demo" / "100" / "report.json").read_text()) == {"score": 1}
    assert _tree(tmp_path / "demo" / "100") == ["report.json"]


def test_write_json_leaves_no_file_when_the_write_fails(tmp_path, monkeypatch):
    store = RunStore(str(tmp_path))
    run = store.claim_run_dir("demo", 100)

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(StorageError, match="report.json.*No space left"):
        store.write_json(run.url, "report.json", {"score": 1})
    assert _tree(tmp_path / "demo" / "100") == []


def test_read_json_of_a_missing_file(tmp_path):
    store = RunStore(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        store.read_json(str(tmp_path / "demo" / "1"), "config.json")


def test_list_runs(tmp_path):
    store = RunStore(str(tmp_path / "runs"))
    for scenario, ts in [("zeta", 20), ("alpha", 100), ("alpha", 99), ("alpha", 100)]:
        store.claim_run_dir(scenario, ts)
    (tmp_path / "runs" / "alpha" / "notes.txt").write_text("not a run")
    (tmp_path / "runs" / "sweeps" / "pd").mkdir(parents=True)  # a sweep's state: no run
    (tmp_path / "runs" / "sweeps" / "pd" / "run_summary.json").write_text("{}")
    (tmp_path / "runs" / "notes" / "drafts").mkdir(parents=True)  # stray folders: no run
    (tmp_path / "runs" / "alpha" / "scratch").mkdir()
    (tmp_path / "runs" / "alpha" / "\u00b2").mkdir()  # a digit, not an ASCII one
    assert store.list_runs() == ["alpha/99", "alpha/100", "alpha/101", "zeta/20"]
    assert store.list_runs("alpha") == ["alpha/99", "alpha/100", "alpha/101"]
    assert store.list_runs("nope") == []
    assert store.run_url("alpha/99") == str(tmp_path / "runs" / "alpha" / "99")


def test_join_local_and_url():
    assert join("/data/runs", "demo", "17") == "/data/runs/demo/17"
    assert join("s3://bkt/runs/", "demo", "17", "demo.jsonl") == "s3://bkt/runs/demo/17/demo.jsonl"
    assert join("s3://bkt", "/atif/", "a1.json") == "s3://bkt/atif/a1.json"
    assert join("s3://bkt/runs") == "s3://bkt/runs"


def test_open_fs_local(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fs, path = open_fs("runs")
    assert path == str(tmp_path / "runs")
    assert "file" in fs.protocol


def test_absolute_resolves_a_local_path_and_keeps_a_url(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert absolute("./runs/veyru/123/") == str(tmp_path / "runs" / "veyru" / "123")
    assert absolute("runs/../runs/veyru/123") == str(tmp_path / "runs" / "veyru" / "123")
    assert absolute("~/runs/veyru/123") == str(tmp_path / "home" / "runs" / "veyru" / "123")
    assert absolute("s3://bkt/runs/veyru/123/") == "s3://bkt/runs/veyru/123/"
    assert absolute("file:///data/runs/veyru/123") == "file:///data/runs/veyru/123"


def test_run_json_files_get_a_new_files_mode_not_0600(tmp_path):
    import os
    import stat

    from glossogen.storage import RunStore

    umask = os.umask(0o022)
    os.umask(umask)  # read it back unchanged
    store = RunStore(str(tmp_path))
    claimed = store.claim_run_dir("veyru", 1_800_000_000)
    store.write_json(claimed.url, "config.json", {"round_count": 3})
    mode = stat.S_IMODE((tmp_path / "veyru" / "1800000000" / "config.json").stat().st_mode)
    assert mode == 0o666 & ~umask  # 0o644 under the usual umask 022


def test_a_json_file_escaping_a_lone_surrogate_is_refused_at_its_first_place(tmp_path):
    # Breadth first, as the walk always took it: the mapping's own keys when it is reached,
    # then its values in turn; an ASCII or other UTF-8 string, a number or a null is text.
    folder = RunFolder(run_id="veyru/1700000000", url=str(tmp_path), timestamp=1700000000)
    (tmp_path / "labels.json").write_text(
        '{"a": ["ok", {"b\\udc80": 1}], "n": [1, 2.5, null, true], "c": "x\\udcff", "d": "é"}'
    )
    with pytest.raises(ValueError) as refused:
        folder.read_object("labels.json")
    assert str(refused.value) == (
        f"{tmp_path / 'labels.json'} is not UTF-8 text (it escapes the lone surrogate \\udcff)"
    )
    big = {"metrics": {f"m{i}": {"score": i / 7, "per_round": [{"note": "é"}] * 20}
                       for i in range(200)}}  # fmt: skip
    (tmp_path / "report.json").write_text(json.dumps(big))
    assert folder.read_object("report.json") == big
