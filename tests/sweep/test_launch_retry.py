"""Which failed launches a sweep asks or launches again: refused by the API, nothing started."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from prefect.exceptions import ObjectNotFound, PrefectHTTPStatusError

from flows.sweep import launch_all, play_in_process
from glossogen.sweep import Launch, SweepOptions, SweepRun, load_spec, plan_sweep
from tasks.sweep import refused_before_start
from tests.sweep.test_spec import ISSUE_SPEC

TASK_RUNS = "http://127.0.0.1:4200/api/task_runs/"


def _answered(status: int) -> PrefectHTTPStatusError:
    request = httpx.Request("POST", TASK_RUNS)
    response = httpx.Response(status, request=request, json={"exception_message": "busy"})
    return PrefectHTTPStatusError.from_httpx_error(
        httpx.HTTPStatusError(f"{status}", request=request, response=response)
    )


def test_a_refused_start_is_retried_only_while_nothing_of_the_trial_exists(
    prefect_api: str, tmp_path: Path
) -> None:
    spec_file = tmp_path / "pd.yaml"
    spec_file.write_text(ISSUE_SPEC)
    spec, sweep_id = load_spec(spec_file)
    plan = plan_sweep(spec, sweep_id, str(spec_file), SweepOptions())
    key = plan.main_keys()[0]
    launch = Launch(key, plan.request(key, 1), "pd/k/1", 0.0)

    def verdicts() -> dict[str, bool]:
        return {
            name: refused_before_start(exc, launch, sweep_id, 1)
            for name, exc in {
                "503": _answered(503),
                "429": _answered(429),
                "500": _answered(500),
                "404": _answered(404),
                "connection refused": httpx.ConnectError(
                    "refused", request=httpx.Request("POST", TASK_RUNS)
                ),
                "a bug": ValueError("no"),
            }.items()
        }

    assert verdicts() == {
        "503": True,
        "429": True,
        "500": False,
        "404": False,
        "connection refused": True,
        "a bug": False,
    }
    resume = Launch(key, launch.request, "pd/k/1/resume1", 0.0, resume_url=str(tmp_path / "r"))
    assert refused_before_start(_answered(503), resume, sweep_id, 1) is False

    run = SweepRun(plan, "in-process")
    asyncio.run(
        launch_all(run, [key], lambda launch: play_in_process(launch, sweep_id, 1))
    )  # the trial is played: its folder exists now
    run.close()
    assert run.states[key] == "done"
    assert set(verdicts().values()) == {False}


def test_the_summary_names_the_spec_by_its_absolute_path(
    prefect_api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from glossogen.cli import main

    monkeypatch.chdir(tmp_path)
    Path("pd.yaml").write_text(  # one run of one round: the summary's paths are the point
        ISSUE_SPEC.replace("round_count: [2, 3]", "round_count: [1]").replace(
            "trials: 2", "trials: 1"
        )
    )
    with pytest.raises(SystemExit) as exited:
        main(["sweep", "pd.yaml", "--concurrency", "2"])
    assert exited.value.code == 0
    summary = json.loads((tmp_path / "runs/sweeps/pd/run_summary.json").read_text())
    assert (summary["spec_path"], summary["runs_dir"]) == (
        str(tmp_path / "pd.yaml"),
        str(tmp_path / "runs"),
    )


class BusyProxy:
    """A real HTTP proxy on 127.0.0.1 in front of the session's Prefect server.

    Each ``POST .../create_flow_run`` (a launch) takes the next step of ``script``: a status
    to answer with, and headers (nothing reaches the server), or ``"drop"`` (passed on, and the
    connection closed before the server's answer reaches the client); once the script is
    spent, passed on. Every other request is passed on. ``seen`` says what each launch POST got.
    """

    def __init__(self, upstream: str, script: list[tuple[int, dict[str, str]] | str]) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from threading import Thread

        self.script, self.seen = list(script), list[str]()
        proxy, origin = self, upstream.removesuffix("/api")
        forward = self.forward = httpx.Client(base_url=origin)

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                launch = self.command == "POST" and self.path.endswith("/create_flow_run")
                step = proxy.script.pop(0) if launch and proxy.script else "pass"
                if isinstance(step, tuple):
                    status, headers = step
                    proxy.seen.append(" ".join([str(status), *headers.values()]))
                    self._answer(status, headers, b'{"exception_message": "busy"}')
                    return
                passed = forward.request(
                    self.command, self.path, content=body,
                    headers={"content-type": self.headers.get("content-type", "")},
                )  # fmt: skip
                if launch:
                    proxy.seen.append(f"{passed.status_code}{' dropped' * (step == 'drop')}")
                if step == "drop":
                    self.close_connection = True  # no answer at all: the client's read fails
                    return
                self._answer(passed.status_code, {}, passed.content)

            def _answer(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                for name, value in {**headers, "content-type": "application/json"}.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any  # noqa: N815

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api"
        Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.forward.close()


def _launch_through(proxy: BusyProxy, name: str, key: str) -> Any:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from orchestration.deployments import create_flow_run

    with temporary_settings(updates={PREFECT_API_URL: proxy.url}):
        return asyncio.run(create_flow_run(name, {}, key))


def test_a_launch_a_busy_server_refused_is_asked_again_and_creates_one_flow_run(
    prefect_api: str,
) -> None:
    from uuid import uuid4

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    # Its own deployment and keys: a server that outlives the test (PREFECT_API_URL) may hold
    # an earlier run's, which would hand back that run's flow run.
    name, key = f"busy-{uuid4().hex}", f"busy/{uuid4().hex}"
    with get_client(sync_client=True) as client:
        flow_id = client.create_flow_from_name("launch-retry")
        deployment_id = client.create_deployment(flow_id=flow_id, name=name)
    busy = [(503, {}), (429, {"Retry-After": "0"}), (502, {}), (504, {}), "drop"]
    proxy = BusyProxy(prefect_api, busy)
    try:
        flow_run = _launch_through(proxy, f"launch-retry/{name}", f"{key}/1")
        # Rate limited, busy, behind a busy proxy, then created but the answer lost: each
        # asked again, and the last ask got the flow run the lost answer had created.
        assert proxy.seen == ["503", "429 0", "502", "504", "201 dropped", "200"]
        assert (flow_run.deployment_id, flow_run.idempotency_key) == (deployment_id, f"{key}/1")
        with get_client(sync_client=True) as client:
            flow_runs = client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id]))
            )
        assert [f.id for f in flow_runs] == [flow_run.id]
        # A refusal that is no busy server (a 500, a deployment that does not exist) is
        # raised at once.
        proxy.script, proxy.seen = [(500, {})], []
        with pytest.raises(PrefectHTTPStatusError) as refused:
            _launch_through(proxy, f"launch-retry/{name}", f"{key}/2")
        assert (refused.value.response.status_code, proxy.seen) == (500, ["500"])
        with pytest.raises(ObjectNotFound):
            _launch_through(proxy, f"launch-retry/no-{name}", f"{key}/3")
        assert proxy.seen == ["500"]  # it never got as far as a launch
    finally:
        proxy.close()
