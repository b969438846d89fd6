"""The limits file resolves into pools and llm:<provider> limits, judge-only providers included."""

from __future__ import annotations

from pathlib import Path

import pytest

from deployments.pools import LimitsError, load_limits, plan_limits


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
    with pytest.raises(LimitsError, match="unknown provider\\(s\\) bedrock"):
        load_limits(path)


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


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("providers:\n  openai: {llm_concurrency: true}\n", "providers.openai.llm_concurrency"),
        ("providers:\n  openai: {pool_concurrency: null}\n", "not null"),
        ("shared_pool: {pool_concurrency: 2.5}\n", "shared_pool.pool_concurrency"),
        ("", "is empty"),
    ],
)
def test_a_limits_file_that_does_not_say_a_number_is_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "limits.yaml"
    path.write_text(text)
    with pytest.raises(LimitsError, match=message) as refused:
        load_limits(path)
    assert refused.value.exit_code == 65


def test_defaults_that_name_one_number_keep_the_built_in_other(tmp_path: Path) -> None:
    path = tmp_path / "limits.yaml"
    path.write_text("defaults: {llm_concurrency: 2}\n")
    pools, limits = plan_limits(load_limits(path))
    assert {p.name: p.concurrency_limit for p in pools}["glossogen-openai"] == 8
    assert {limit.name: limit.limit for limit in limits}["llm:openai"] == 2
