"""A fixture cohort for the export tests: scripted runs with varied knobs and labels, a fork,
the real GlossoGen 0.5 run folder, a run whose log was cut mid-write, and evaluation reports
written the way the report contract says (``<scenario>_report.json``, atomically).

Runs play through the library on a virtual clock with pinned folder timestamps, so their ids,
event timestamps and verdicts are the same on every machine. Two things stay volatile: each
event's random id (``message_id``) and the wall-clock ``duration_seconds`` of a played run.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from glossogen.derive import ForkRequest, prepare_fork
from glossogen.launch import (
    ResumeRequest,
    RunRequest,
    claim_run,
    open_session,
    plan_resume,
    plan_run,
    price_spend,
)
from glossogen.storage import RunStore

CASE_05 = Path(__file__).parents[1] / "cases" / "glossogen-0.5-runs" / "veyru" / "1795939736"
CLOCK_START = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

A, B, C, FORK, CUT = (
    "veyru/1795000001",
    "veyru/1795000002",
    "prisoners_dilemma/1795000003",
    "veyru/1795000004",
    "veyru/1795000009",
)
OLD = "veyru/1795939736"
VOLATILE = ("duration_seconds", "message_id")
"""Columns the golden comparison skips: random event ids and wall-clock durations."""


@dataclass(frozen=True)
class Cohort:
    """The cohort's runs directory."""

    runs_dir: Path

    def folder(self, run_id: str) -> Path:
        """Return the folder of ``run_id``."""
        return self.runs_dir / run_id


async def _play(request: RunRequest, now_unix: int) -> str:
    plan = plan_run(request)
    claimed = claim_run(plan, request.runs_dir, now_unix=now_unix)
    session = open_session(plan, claimed, clock_start=CLOCK_START)
    for n in range(1, plan.knobs.round_count + 1):
        await session.play_round(n)
    session.finish(price_spend(claimed), "completed")
    return claimed.url


def play(runs_dir: Path, scenario: str, now_unix: int, *overrides: str) -> str:
    """Play a scripted run into ``runs_dir/<scenario>/<now_unix>`` and return its folder."""
    request = RunRequest(
        scenario=scenario,
        model="scripted",
        provider="scripted",
        runs_dir=str(runs_dir),
        config="knobs_default",
        overrides=list(overrides),
    )
    return asyncio.run(_play(request, now_unix))


async def _resume(run_dir: str) -> None:
    plan, point = plan_resume(ResumeRequest(run_dir=run_dir))
    session = open_session(plan, point.folder, resume=point)
    for n in range(session.first_round, plan.knobs.round_count + 1):
        await session.play_round(n)
    session.finish(price_spend(point.folder), "completed")


def fork(runs_dir: Path, source: str, after_round: int, now_unix: int) -> str:
    """Fork ``source`` after ``after_round`` into a pinned folder and play it to its end."""
    prepared = prepare_fork(
        ForkRequest("veyru", source, after_round, str(runs_dir)), now_unix=now_unix
    )
    asyncio.run(_resume(prepared.folder.url))
    return prepared.folder.url


def write_report(run_dir: Path, scenario: str, metrics: dict, sidecars: dict | None = None) -> None:
    """Write ``<scenario>_report.json`` (and sidecar JSONL files) as the contract describes."""
    log = run_dir / f"{scenario}.jsonl"
    import hashlib

    report = {
        "report_version": 1,
        "run_id": f"{scenario}/{run_dir.name}",
        "scenario": scenario,
        "log_sha256": hashlib.sha256(log.read_bytes()).hexdigest(),
        "updated_at": "2026-11-29T12:30:00Z",
        "metrics": metrics,
        "evaluation_cost": {"judge_usd": 0.0, "probe_usd": 0.0, "total_usd": 0.0},
    }
    for name, rows in (sidecars or {}).items():
        (run_dir / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    RunStore(str(run_dir.parent.parent)).write_json(str(run_dir), f"{scenario}_report.json", report)


def metric(name: str, score: float | None, rounds: int, **extra: object) -> dict:
    """Return one metric entry of the report contract (deterministic, ok unless ``status``)."""
    entry = {
        "name": name,
        "kind": "deterministic",
        "version": 1,
        "unit": "share of rounds won" if name == "round_success" else "characters",
        "status": "ok",
        "score": score,
        "summary": f"{name} summary",
        "rounds": rounds,
        "per_round": [],
        "per_agent": [],
        "replicas": None,
        "agreement": None,
        "judge": None,
        "cost_usd": 0.0,
        "sidecar": None,
        "error": None,
    }
    entry.update(extra)
    return entry


def _message_ids(log: Path) -> list[tuple[str, int, str]]:
    out = []
    for line in log.read_text().splitlines():
        ev = json.loads(line)
        if ev["event_type"] == "message_sent":
            out.append((ev["message_id"], ev["round_number"], ev["sender_id"]))
    return out


def _reports(runs: Path) -> None:
    a = runs / A
    ids = _message_ids(a / "veyru.jsonl")
    write_report(
        a,
        "veyru",
        {
            "round_success": metric(
                "round_success",
                0.5,
                2,
                per_round=[
                    {"round_number": 1, "value": 0.0, "team_id": "team", "note": "lost: budget"},
                    {"round_number": 2, "value": 1.0, "team_id": "team", "note": "won: stabilized"},
                ],
            ),
            "mean_chars_per_message": metric(
                "mean_chars_per_message",
                30.25,
                2,
                per_round=[{"round_number": 2, "value": 0.0, "team_id": None, "note": None}],
                per_agent=[{"agent_id": "field_observer", "value": 12.0, "note": None}],
            ),
            "language_repetition": metric(
                "language_repetition",
                1.25,
                0,
                kind="judged",
                sidecar="language_repetition.jsonl",
                unit="repetition factor",
            ),
        },
        {
            "language_repetition.jsonl": [
                {
                    "message_id": mid,
                    "round_number": rnd,
                    "sender_id": sender,
                    "repetition_factor": None if i == 1 else 1.0 + i / 4,
                }
                for i, (mid, rnd, sender) in enumerate(ids[:3])
            ]
        },
    )
    write_report(
        runs / B,
        "veyru",
        {
            "round_success": metric(
                "round_success",
                None,
                3,
                status="failed",
                error="log changed while evaluating",
            ),
        },
    )


def _cut(runs: Path) -> None:
    """Copy B's log up to the middle of round 2, with one damaged line and a torn tail."""
    src = runs / B
    dst = runs / CUT
    dst.mkdir(parents=True)
    shutil.copy(src / "config.json", dst / "config.json")
    (dst / "labels.json").write_text("{}")
    lines = (src / "veyru.jsonl").read_text().splitlines(keepends=True)
    second = next(
        i
        for i, line in enumerate(lines)
        if '"round_started"' in line and '"round_number":2' in line
    )
    kept = lines[: second + 12]
    kept.insert(second + 4, '{"event_type": "message_sent", "broken\n')
    text = "".join(kept).replace('"run_id":"veyru/1795000002"', '"run_id":"veyru/1795000009"')
    (dst / "veyru.jsonl").write_text(text + '{"event_id":"x","event_type":"message_se')


@pytest.fixture(scope="session")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    """The export cohort (see the module docstring), built once per session."""
    runs = tmp_path_factory.mktemp("export-runs")
    play(runs, "veyru", 1795000001, "round_count=2",
         'labels={"budget": "800", "baseline_oss": true}')  # fmt: skip
    play(runs, "veyru", 1795000002, "round_count=3", "round_budget_chars=200", "seed=7",
         "agent_model_settings.temperature=0.5", 'labels={"budget": "400", "baseline": true}')  # fmt: skip
    play(runs, "prisoners_dilemma", 1795000003, "round_count=2",
         'labels={"baseline": true}')  # fmt: skip
    fork(runs, str(runs / A), 1, 1795000004)
    shutil.copytree(CASE_05, runs / OLD)
    _reports(runs)
    _cut(runs)
    return Cohort(runs)
