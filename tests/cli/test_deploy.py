"""``glossogen deploy`` refuses a prefect.yaml it cannot use in one line, before any server."""

from __future__ import annotations

from pathlib import Path

import pytest

from glossogen.cli import main


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "name: x\ndeployments: [\n",
            " is not YAML: line 3, column 1: expected the node content, but found '<stream end>'",
        ),
        (
            "name: x\nname: y\n",
            ": line 2, column 1: duplicate key 'name' (first at line 1)",
        ),
        ("- a\n", " must be a mapping of keys to values"),
        ("deployments: {a: 1}\n", ": deployments must be a list"),
        (
            "deployments:\n  - entrypoint: flows/sweep.py:sweep\n",
            ": deployment 1 must be a mapping with a name",
        ),
        (
            "deployments:\n  - name: a\n    entrypoint: f.py:f\n  - name: a\n",
            ": deployment name 'a' is written twice (deployments 1 and 2)",
        ),
    ],
    ids=["not-yaml", "duplicate-key", "a-list", "deployments-not-a-list", "no-name", "name-twice"],
)
def test_a_malformed_prefect_yaml_is_refused_in_one_line_before_the_server_is_asked(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
    message: str,
    refused_port: int,
) -> None:
    # No server answers here: the file is refused first (the pools were applied first before).
    monkeypatch.setenv("PREFECT_API_URL", f"http://127.0.0.1:{refused_port}/api")
    (tmp_path / "prefect.yaml").write_text(text)
    with pytest.raises(SystemExit) as exited:
        main(["deploy", "--project-dir", str(tmp_path)])
    assert exited.value.code == 65
    assert capsys.readouterr().err.splitlines() == [
        f"glossogen: error: {tmp_path / 'prefect.yaml'}{message}"
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["prefect.yaml"]


def test_the_shipped_prefect_yaml_reads_with_every_entrypoint_present() -> None:
    from glossogen.cli.deploy import deployable

    names, skipped = deployable(Path(__file__).resolve().parents[2])
    assert skipped == []
    providers = [
        "anthropic", "openai", "google-gla", "xai", "groq", "mistral", "deepseek", "openrouter",
        "ollama", "self-hosted", "scripted", "local",
    ]  # fmt: skip
    assert names == [
        *(f"{verb}-{provider}" for provider in providers for verb in ("simulate", "resume")),
        "fork-at-round", "replace-agent", "evaluate", "evaluate-cohort", "export", "sweep",
        "reconcile", "nightly-export",
    ]  # fmt: skip


def test_a_project_whose_flow_files_are_all_missing_is_refused_before_the_server_is_asked(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    refused_port: int,
) -> None:
    monkeypatch.setenv("PREFECT_API_URL", f"http://127.0.0.1:{refused_port}/api")
    (tmp_path / "prefect.yaml").write_text("deployments:\n  - name: a\n    entrypoint: f.py:f\n")
    with pytest.raises(SystemExit) as exited:
        main(["deploy", "--project-dir", str(tmp_path)])
    assert exited.value.code == 66
    assert capsys.readouterr().err.splitlines() == [
        "glossogen: warning: skipping deployment a: f.py does not exist",
        f"glossogen: error: no deployment of {tmp_path / 'prefect.yaml'} has its entrypoint file",
    ]
