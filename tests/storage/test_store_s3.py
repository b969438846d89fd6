import pytest

from glossogen.storage import RunFolder, RunStore, StorageError, open_fs


def _objects(url: str) -> list[str]:
    fs, root = open_fs(url)
    fs.invalidate_cache()
    return sorted(p.removeprefix(root + "/") for p in fs.find(root))


def test_open_fs_honours_aws_endpoint_url(s3_server, s3_bucket):
    fs, path = open_fs(f"{s3_bucket}/runs")
    assert fs.endpoint_url == s3_server
    assert path == f"{s3_bucket.removeprefix('s3://')}/runs"


def test_create_only_put_refuses_a_second_create(s3_bucket):
    fs, path = open_fs(f"{s3_bucket}/lock")
    fs.pipe_file(path, b"first", mode="create")
    with pytest.raises(FileExistsError):
        fs.pipe_file(path, b"second", mode="create")
    assert fs.cat_file(path) == b"first"


def test_two_claims_in_the_same_second_on_s3(s3_bucket):
    runs = f"{s3_bucket}/runs"
    store = RunStore(runs)
    assert _objects(s3_bucket) == []
    first = store.claim_run_dir("demo", 1700000000)
    second = store.claim_run_dir("demo", 1700000000)
    assert first == RunFolder("demo/1700000000", f"{runs}/demo/1700000000", 1700000000)
    assert second == RunFolder("demo/1700000001", f"{runs}/demo/1700000001", 1700000001)
    assert _objects(s3_bucket) == [
        "runs/demo/1700000000/.claim",
        "runs/demo/1700000001/.claim",
    ]
    assert store.list_runs() == ["demo/1700000000", "demo/1700000001"]


def test_json_files_on_s3(s3_bucket):
    store = RunStore(f"{s3_bucket}/runs")
    run = store.claim_run_dir("demo", 7)
    assert store.exists(run.url, "config.json") is False
    store.write_json(run.url, "config.json", {"rounds": 3, "name": "é"})
    assert store.exists(run.url, "config.json") is True
    assert store.read_json(run.url, "config.json") == {"rounds": 3, "name": "é"}
    fs, path = open_fs(f"{run.url}/config.json")
    assert fs.cat_file(path).decode() == '{\n  "rounds": 3,\n  "name": "é"\n}\n'
    with pytest.raises(ValueError):
        store.write_json(run.url, "report.json", {"score": float("nan")})
    assert store.exists(run.url, "report.json") is False
    with pytest.raises(FileNotFoundError):
        store.read_json(run.url, "report.json")


def test_list_runs_on_s3(s3_bucket):
    store = RunStore(f"{s3_bucket}/runs")
    assert store.list_runs() == []
    for scenario, ts in [("zeta", 20), ("alpha", 100), ("alpha", 99)]:
        store.claim_run_dir(scenario, ts)
    assert store.list_runs() == ["alpha/99", "alpha/100", "zeta/20"]
    assert store.list_runs("zeta") == ["zeta/20"]
    assert store.list_runs("nope") == []


def test_missing_bucket_is_a_storage_error(s3_server):
    store = RunStore("s3://no-such-bucket-zz/runs")
    with pytest.raises(StorageError, match="s3://no-such-bucket-zz/runs/demo"):
        store.claim_run_dir("demo", 1)
    with pytest.raises(StorageError, match="s3://no-such-bucket-zz/runs"):
        store.list_runs()
    run = "s3://no-such-bucket-zz/runs/demo/1"
    with pytest.raises(StorageError, match=f"{run}/config.json"):
        store.exists(run, "config.json")
    with pytest.raises(StorageError, match=f"{run}/config.json"):
        store.read_json(run, "config.json")
    with pytest.raises(StorageError, match=f"{run}/config.json"):
        store.write_json(run, "config.json", {})


def test_unreachable_storage_is_a_one_line_storage_error(s3_server, monkeypatch, refused_port):
    port = refused_port
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "very-secret-value-123")
    store = RunStore(
        "s3://bucket-x/runs",
        storage_options={"config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 2}},
    )
    # One attempt, a 2 s connect timeout: the error comes from the first refused connection.
    with pytest.raises(StorageError) as info:
        store.claim_run_dir("demo", 1)
    message = str(info.value)
    assert message == (
        "storage error at s3://bucket-x/runs/demo: EndpointConnectionError: Could not connect "
        f'to the endpoint URL: "http://127.0.0.1:{port}/bucket-x/runs/demo/1/.claim"'
    )
    assert "\n" not in message
    assert "very-secret-value-123" not in message
