"""The limits file resolves into pools and llm:<provider> limits, judge-only providers included."""

from __future__ import annotations

from pathlib import Path

import pytest

from deployments.pools import LimitsError, load_limits, plan_limits
from glossogen.cli import main


def test_the_shipped_limits_cover_every_provider_and_the_judge_only_one() -> None:
    pools, limits = plan_limits(load_limits())
    by_name = {limit.name: limit.limit for limit in limits}
    assert by_name["llm:anthropic"] == 8 and by_name["llm:openai"] == 8
    assert by_name["llm:huggingface"] == 4  # judges only: a call limit ...
    assert "glossogen-huggingface" not in {pool.name for pool in pools}  # ... and no pool
    assert by_name["llm:scripted"] is None  # null: offline, nothing to rate-limit


def test_a_judge_only_provider_takes_its_own_number(tmp_path: Path) -> None:
    path = tmp_path / "limits.yaml"
    path.write_text("providers:\n  huggingface: {llm_concurrency: 2}\n")
    _, limits = plan_limits(load_limits(path))
    assert {limit.name: limit.limit for limit in limits}["llm:huggingface"] == 2


def test_an_unknown_provider_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "limits.yaml"
    path.write_text("providers:\n  bedrock: {llm_concurrency: 2}\n")
    with pytest.raises(LimitsError) as refused:
        load_limits(path)
    assert refused.value.exit_code == 65
    assert str(refused.value) == (
        f"limits file {path}: unknown provider(s) bedrock (known: anthropic, openai, google-gla, "
        "xai, groq, mistral, deepseek, openrouter, ollama, self-hosted, scripted, local, "
        "huggingface)"
    )


def test_pools_apply_says_one_call_in_the_singular(tmp_path: Path) -> None:
    path = tmp_path / "limits.yaml"
    path.write_text(
        "providers:\n  huggingface: {llm_concurrency: 1}\n  openai: {llm_concurrency: 2}\n"
    )
    _, limits = plan_limits(load_limits(path))
    by_name = {limit.name: limit for limit in limits}
    assert by_name["llm:huggingface"].line("created") == (
        "created limit llm:huggingface (1 call at once)"
    )
    assert by_name["llm:huggingface"].line("updated") == (
        "updated limit llm:huggingface (1 call at once)"
    )
    assert by_name["llm:openai"].line("created") == "created limit llm:openai (2 calls at once)"


def test_defaults_that_name_one_number_keep_the_built_in_other(tmp_path: Path) -> None:
    path = tmp_path / "limits.yaml"
    path.write_text("defaults: {llm_concurrency: 2}\n")
    pools, limits = plan_limits(load_limits(path))
    assert {p.name: p.concurrency_limit for p in pools}["glossogen-openai"] == 8
    assert {limit.name: limit.limit for limit in limits}["llm:openai"] == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "providers:\n  openai: {llm_concurrency: true}\n",
            "providers.openai.llm_concurrency must be a whole number of at least 1 or null "
            "(no limit), got true",
        ),
        (
            "providers:\n  openai: {llm_concurrency: '3'}\n",
            "providers.openai.llm_concurrency must be a whole number of at least 1 or null "
            "(no limit), got '3'",
        ),
        (
            "defaults: {llm_concurrency: 0}\n",
            "defaults.llm_concurrency must be a whole number of at least 1 or null (no limit), "
            "got 0",
        ),
        (
            "providers:\n  openai: {pool_concurrency: null}\n",
            "providers.openai.pool_concurrency must be a whole number of at least 1, not null "
            "(leave it out for defaults), got null",
        ),
        (
            "shared_pool: {pool_concurrency: 2.5}\n",
            "shared_pool.pool_concurrency must be a whole number of at least 1, got 2.5",
        ),
        (
            "providers:\n  openai: {llm_concurency: 3}\n",
            "unknown key providers.openai.llm_concurency (known: pool_concurrency, "
            "llm_concurrency), got 3",
        ),
        (
            "providers:\n  openai: 5\n",
            "providers.openai must be a mapping of keys to values, got 5",
        ),
        ("shared_pool: {name: 5}\n", "shared_pool.name must be a name, got 5"),
        (
            "providers:\n  openai: {llm_concurrency: 99999999999999999999999}\n",
            "providers.openai.llm_concurrency must be a whole number of at most 2147483647, "
            "got 99999999999999999999999",
        ),
        (
            "defaults: {pool_concurrency: 2147483648}\n",
            "defaults.pool_concurrency must be a whole number of at most 2147483647, "
            "got 2147483648",
        ),
        (
            "shared_pool: {name: ''}\n",
            "shared_pool.name must be a pool name (letters, digits, '-', '_', '.'), got ''",
        ),
        (
            "shared_pool: {name: glossogen-openai}\n",
            "shared_pool.name is the pool of openai runs; give the shared pool its own, "
            "got glossogen-openai",
        ),
        (
            "providers:\n  openai:\n    llm_concurrency: 2\n    llm_concurrency: 3\n",
            "line 4, column 5: duplicate key 'llm_concurrency' (first at line 3)",
        ),
        (
            "providers:\n  openai: {llm_concurrency: 2}\n  openai: {llm_concurrency: 3}\n",
            "line 3, column 3: duplicate key 'openai' (first at line 2)",
        ),
        (
            "defaults: {llm_concurrency: 2}\ndefaults: {llm_concurrency: 3}\n",
            "line 2, column 1: duplicate key 'defaults' (first at line 1)",
        ),
        # a fault of the whole file follows its path without a colon
        ("- openai\n", " must be a mapping of keys to values, got [openai]"),
        ("", " is empty (see deployments/limits.yaml)"),
    ],
    ids=[
        "boolean",
        "quoted-number",
        "zero",
        "null-pool",
        "fraction",
        "unknown-key",
        "not-a-mapping",
        "name-not-text",
        "past-32-bits",
        "one-past-32-bits",
        "empty-shared-pool-name",
        "shared-pool-is-a-provider-pool",
        "duplicate-number",
        "duplicate-provider",
        "duplicate-section",
        "file-is-a-list",
        "empty-file",
    ],
)
def test_pools_apply_names_the_bad_key_and_its_value_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = tmp_path / "limits.yaml"
    path.write_text(text)
    with pytest.raises(SystemExit) as exited:
        main(["pools", "apply", "--limits", str(path)])
    assert exited.value.code == 65
    said = message if message.startswith(" ") else f": {message}"
    assert capsys.readouterr().err.splitlines() == [f"glossogen: error: limits file {path}{said}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["limits.yaml"]
