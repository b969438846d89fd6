"""A run folder on S3 (moto's server on 127.0.0.1) is evaluated in place."""

from __future__ import annotations

import asyncio
import json

from glossogen.evaluation import plan_evaluation, score_all, write_html, write_outcomes
from glossogen.storage import open_fs
from tests.evaluation._logs import CASE_05


def test_a_run_on_s3_is_scored_and_its_report_put_there(s3_bucket: str) -> None:
    run_dir = f"{s3_bucket}/runs/veyru/{CASE_05.name}"
    fs, path = open_fs(run_dir)
    fs.pipe_file(f"{path}/veyru.jsonl", (CASE_05 / "veyru.jsonl").read_bytes())
    plan = plan_evaluation(run_dir, "round_success,mean_chars_per_round", scenario="veyru")
    report = write_outcomes(plan, asyncio.run(score_all(plan)))
    write_html(run_dir, report)
    fs.invalidate_cache()
    saved = json.loads(fs.cat_file(f"{path}/veyru_report.json"))
    assert saved["metrics"]["mean_chars_per_round"]["score"] == 91.2
    assert saved["metrics"]["round_success"]["summary"] == "5 of 5 rounds won"
    assert sorted(p.rsplit("/", 1)[-1] for p in fs.ls(path, refresh=True)) == [
        "report.html", "veyru.jsonl", "veyru_report.json",
    ]  # fmt: skip
