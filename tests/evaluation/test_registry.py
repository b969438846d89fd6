"""The metric registry: built-ins in code, plug-ins through the ``glossogen.metrics`` group."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

import glossogen.evaluation._registry as _registry_module
from glossogen.evaluation import (
    UnknownMetricError,
    get_metric,
    metric,
    metric_names,
    plan_evaluation,
    score_all,
    write_outcomes,
)
from tests.evaluation._logs import RunLog

BUILT_INS = [
    "agent_cycle_failures", "budget_utilisation", "character_entropy_bits", "cost_per_round_usd",
    "gzip_compression_ratio", "language_repetition", "mean_chars_per_message",
    "mean_chars_per_round", "messages_per_round", "protocol_probe", "round_success",
    "shorthand_codes", "vocabulary_growth",
]  # fmt: skip


def test_built_ins_declare_kind_unit_and_hooks() -> None:
    assert [n for n in metric_names() if n in BUILT_INS] == BUILT_INS
    kinds = {n: get_metric(n).kind for n in BUILT_INS}
    assert {n for n, k in kinds.items() if k == "judged"} == {
        "language_repetition",
        "shorthand_codes",
    }
    assert {n for n, k in kinds.items() if k == "model"} == {"protocol_probe"}
    assert get_metric("budget_utilisation").needs == ("budget",)
    assert get_metric("character_entropy_bits").unit == "bits per character"
    assert "mean over messages" in get_metric("character_entropy_bits").description.lower()


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownMetricError, match=r"unknown metric 'nope' \(known: agent_cycle"):
        get_metric("nope")


def test_a_name_registers_once() -> None:
    async def other(ctx):  # noqa: ANN001, ANN202
        raise AssertionError

    with pytest.raises(ValueError, match="already registered"):
        metric("round_success", unit="x")(other)


def test_a_plug_in_metric_registers_through_its_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The plug-in is installed for this test only: the registry and its last scan are put
    # back afterwards, so a later test's `--metrics all` in this process does not score it
    # (it did, on a worker that ran this file first: its reports had one metric more).
    assert "plugin_reply_count" not in metric_names()  # the built-ins loaded, the plug-in not
    monkeypatch.setattr(_registry_module, "_registry", dict(_registry_module._registry))
    monkeypatch.setattr(_registry_module, "_scanned_for", _registry_module._scanned_for)
    (tmp_path / "glossogen_plugin_replies.py").write_text(
        textwrap.dedent(
            '''
            from glossogen.evaluation import MetricContext, Scored, metric

            @metric("plugin_reply_count", unit="messages")
            async def reply_count(ctx: MetricContext) -> Scored:
                """Messages on the primary channels."""
                return Scored(score=float(len(ctx.run.messages)), summary="replies", rounds=0)
            '''
        )
    )
    info = tmp_path / "glossogen_plugin_replies-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: glossogen-plugin-replies\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(
        "[glossogen.metrics]\nplugin_reply_count = glossogen_plugin_replies:reply_count\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "plugin_reply_count" in metric_names()
    log = RunLog(tmp_path)
    log.round(1).say(1, "field_observer", "a").say(1, "stabilization_engineer", "b").end()
    plan = plan_evaluation(str(log.write()), "plugin_reply_count")
    report = write_outcomes(plan, asyncio.run(score_all(plan)))
    assert report.metrics["plugin_reply_count"].score == 2.0
