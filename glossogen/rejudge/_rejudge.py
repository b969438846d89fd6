"""Re-judge a cohort's in-run rulings with another judge, through the judge cache.

``glossogen rejudge --runs-dir R --judge-cache C [--model M --provider P] [--judge-prompt F]``:
every ``judge_called`` that counts in each selected run (:attr:`RunView.rulings`) is asked
again, its logged instructions and question unchanged, of the judge the request names (by
default each ruling's own model and provider: a new system prompt alone is a new judge), through
:class:`~glossogen.rejudge.JudgeCache`: a question asked before under the same judge is answered
from the cache, sending nothing. Then, per run, ``judge_flips.json`` in its folder: the judge,
every ruling compared, and the ones whose verdict changed (round, ruling number in its round,
old verdict, new verdict, both reasons); and for the cohort ``rejudge_summary.json`` in the runs
dir: the runs, rulings and flips, the runs whose verdicts flipped and the derived runs (forks,
replacements) whose lineage names one of those, listed as affected.

The run's own log is never changed: the first judge stays its verdict; the flip report sits
beside it, and ``export`` (``judge_flips``) and the run browser read it.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from glossogen import exit_codes
from glossogen.eventlog import Event, JudgeCalled, RunView
from glossogen.export import FilterSelection, RunRecord, Selection
from glossogen.rejudge._cache import JudgeCache
from glossogen.storage import RunFolder, join, json_bytes, write_bytes_atomic

FLIPS = "judge_flips.json"
"""A run's flip report, in its folder (the last rejudge's)."""

SUMMARY = "rejudge_summary.json"
"""The cohort summary of the last rejudge, in the runs dir."""


class RejudgeError(ValueError):
    """A rejudge request refused before anything is asked or written: one line, an exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        """Keep the one-line message and the exit code (64, 65, 66, 69, 77)."""
        super().__init__(message)
        self.exit_code = exit_code


class RejudgeRequest(BaseModel):
    """What ``glossogen rejudge`` is asked.

    Attributes:
        runs_dir: The runs directory (local path or fsspec URL).
        selection: The export's selection of runs under it (all runs by default).
        judge_cache: The judge cache folder every question goes through.
        model: The new judge model (None: each ruling's logged model); with ``provider``.
        provider: The new judge provider (``anthropic``, ``huggingface``, ``openai``).
        judge_settings: pydantic-ai settings of the new judge, as ``key=value`` items.
        judge_prompt_file: A file whose text replaces the judge's system prompt.
    """

    model_config = ConfigDict(extra="forbid")
    runs_dir: str
    selection: Selection = Field(default_factory=FilterSelection)
    judge_cache: str
    model: str | None = None
    provider: str | None = None
    judge_settings: list[str] = []
    judge_prompt_file: str | None = None

    @model_validator(mode="after")
    def _judge_whole(self) -> RejudgeRequest:
        if (self.model is None) != (self.provider is None):
            raise ValueError("--model and --provider go together (the new judge)")
        return self


class Flip(BaseModel):
    """One ruling whose verdict changed."""

    round_number: int
    ruling: int
    """Its number among the run's rulings of that round, from 1."""
    old: bool
    new: bool
    old_reason: str
    new_reason: str
    event_id: str
    """The recorded ``judge_called`` it re-judges."""


class JudgeUsed(BaseModel):
    """The judge a rejudge asked."""

    model: str | None
    provider: str | None
    settings: dict[str, Any]
    prompt_sha256: str
    """SHA-256 of the system prompt asked under."""


class RunFlips(BaseModel):
    """A run's flip report (``judge_flips.json``)."""

    run_id: str
    judge: JudgeUsed
    rulings: int
    flips: list[Flip]
    failed: int = 0
    """Rulings the new judge gave no answer to (after its retries): not compared."""
    cost_usd: float | None = 0.0
    derived_runs: list[str] = []
    """Runs whose lineage names this one (affected when it flipped)."""


class CohortFlips(BaseModel):
    """The cohort summary (``rejudge_summary.json``)."""

    judge: JudgeUsed
    runs: int
    rulings: int
    flips: int
    failed: int
    flipped_runs: list[str]
    affected_derived_runs: dict[str, list[str]]
    """Each flipped run -> the derived runs (forks, replacements) whose lineage names it."""
    cache_hits: int
    cache_misses: int
    cost_usd: float | None


@dataclass
class Rejudged:
    """What a rejudge did: each run's report and the cohort's summary, with where they went.

    ``summary`` is None (and nothing was written) when no selected run could be read.
    """

    runs: list[RunFlips] = field(default_factory=list)
    summary: CohortFlips | None = None
    summary_url: str = ""
    unreadable: dict[str, str] = field(default_factory=dict)


@dataclass
class _Judge:
    """The new judge, checked: who is asked, under which settings and system prompt."""

    model: str | None
    provider: str | None
    settings: dict[str, Any]
    system: str
    answers: JudgeCache

    @property
    def used(self) -> JudgeUsed:
        digest = hashlib.sha256(self.system.encode()).hexdigest()
        return JudgeUsed(
            model=self.model, provider=self.provider, settings=self.settings, prompt_sha256=digest
        )


def _check_judge(request: RejudgeRequest, environ: dict[str, str] | None) -> _Judge:
    """The judge of ``request``, every value checked (see :func:`rejudge_runs`)."""
    from glossogen.engine._judge import JUDGE_SYSTEM
    from glossogen.environment import load_environment
    from glossogen.evaluation import EvaluationError
    from glossogen.evaluation._judge import (
        JUDGE_ENV_VARS,
        check_judge_provider,
        parse_judge_settings,
    )
    from glossogen.storage import open_fs, path_kind

    try:
        settings = parse_judge_settings(request.judge_settings)
        if request.provider is not None:
            check_judge_provider(request.provider)
    except EvaluationError as exc:
        raise RejudgeError(str(exc), exc.exit_code) from None
    if not request.judge_cache.strip() or path_kind(request.judge_cache) == "file":
        raise RejudgeError(f"--judge-cache {request.judge_cache!r}: not a folder", 64)
    system = JUDGE_SYSTEM
    if request.judge_prompt_file is not None:
        fs, path = open_fs(request.judge_prompt_file)
        try:
            with fs.open(path, "rb") as f:
                system = f.read().decode().strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = type(exc).__name__ if not str(exc) else str(exc).splitlines()[0]
            raise RejudgeError(
                f"--judge-prompt {request.judge_prompt_file!r}: cannot be read ({reason})", 66
            ) from None
        if not system:
            raise RejudgeError(f"--judge-prompt {request.judge_prompt_file!r} is empty", 64)
    if request.provider is not None:
        env = environ if environ is not None else load_environment()
        var = JUDGE_ENV_VARS[request.provider]
        if not env.get(var):
            raise RejudgeError(f"missing credentials: {var} (judge provider {request.provider})",
                               int(exit_codes.CREDENTIALS))  # fmt: skip
    return _Judge(request.model, request.provider, settings, system,
                  JudgeCache(request.judge_cache))  # fmt: skip


def _select(request: RejudgeRequest) -> tuple[list[RunRecord], list[RunRecord], dict[str, str]]:
    """The selected runs, every run of the runs dir (for lineage), and the unreadable ones."""
    from glossogen.export import select_runs
    from glossogen.verify import VerifyError, select_cohort

    try:
        selected = select_cohort(request.runs_dir, request.selection, "rejudge")
    except VerifyError as exc:
        raise RejudgeError(str(exc), exc.exit_code) from None
    everything = select_runs(request.runs_dir, FilterSelection(), max_runs=sys.maxsize)
    unreadable = dict(selected.unreadable)
    unreadable.update({m: "no such run" for m in selected.missing_run_ids})
    return selected.records, everything.records, unreadable


def _derived_of(records: list[RunRecord]) -> dict[str, list[str]]:
    """Source run id -> the runs whose lineage names it, in run id order."""
    derived: dict[str, list[str]] = {}
    for record in records:
        source = (record.lineage or {}).get("source_run_id")
        if isinstance(source, str):
            derived.setdefault(source, []).append(record.run_id)
    return {k: sorted(v) for k, v in derived.items()}


async def _rejudge_one(ruling: JudgeCalled, judge: _Judge) -> JudgeCalled | None:
    """Ask ``ruling``'s question of ``judge``; its logged ruling, or None when none came."""
    from glossogen.engine import RunJudge
    from glossogen.scenario import JudgeDecision

    emitted: list[Event] = []
    asked = RunJudge(
        judge.model or ruling.model,
        judge.provider or ruling.provider,
        judge.settings,
        emitted.append,
        answers=judge.answers,
        system=judge.system,
    )
    await asked.rule(
        ruling.question, ruling.instructions, partial(JudgeDecision, ruling.success, ruling.reason)
    )
    got = [e for e in emitted if isinstance(e, JudgeCalled)]
    return None if asked.failed_in_round or not got else got[-1]


async def _rejudge_run(record: RunRecord, judge: _Judge, derived: list[str]) -> RunFlips:
    from glossogen.pricing import add_costs

    view = RunView.load(record.log_url)
    flips: list[Flip] = []
    costs: list[float | None] = []
    failed = 0
    per_round: dict[int, int] = {}
    rulings = view.rulings
    for ruling in rulings:
        number = per_round[ruling.round_number] = per_round.get(ruling.round_number, 0) + 1
        new = await _rejudge_one(ruling, judge)
        if new is None:
            failed += 1
            continue
        costs.append(new.cost_usd)
        if new.success != ruling.success:
            flips.append(
                Flip(
                    round_number=ruling.round_number,
                    ruling=number,
                    old=ruling.success,
                    new=new.success,
                    old_reason=ruling.reason,
                    new_reason=new.reason,
                    event_id=ruling.event_id,
                )  # fmt: skip
            )
    return RunFlips(
        run_id=record.run_id, judge=judge.used, rulings=len(rulings), flips=flips,
        failed=failed, cost_usd=add_costs(costs), derived_runs=derived,
    )  # fmt: skip


def rejudge_runs(request: RejudgeRequest, environ: dict[str, str] | None = None) -> Rejudged:
    """Re-judge every counted ruling of the selected runs; write the flip reports and summary.

    Every check comes first; nothing is asked or written before they pass.

    Raises:
        RejudgeError: 64 a bad judge setting, a provider that cannot judge, a ``--judge-cache``
            that is a file, an empty prompt file; 65 a selection that matches no run; 66 a runs
            dir that is not a folder, a prompt file that cannot be read; 69 unreachable
            storage; 77 the new judge's key is missing.
        SelectionError: a knob condition that cannot be read as the recorded type (65).
        StorageError: the storage failed while runs were read or reports written.
    """
    judge = _check_judge(request, environ)
    selected, everything, unreadable = _select(request)
    derived = _derived_of(everything)
    done = Rejudged(unreadable=unreadable)
    for record in selected:
        try:
            flips = asyncio.run(_rejudge_run(record, judge, derived.get(record.run_id, [])))
        except (FileNotFoundError, ValueError) as exc:
            done.unreadable[record.run_id] = str(exc).splitlines()[0][:300]
            continue
        RunFolder.at(record.run_url).write_json(FLIPS, flips)
        done.runs.append(flips)
    if not done.runs:  # every selected run unreadable: the last rejudge's summary stays
        return done
    done.summary = _summary(done.runs, judge)
    done.summary_url = join(request.runs_dir, SUMMARY)
    write_bytes_atomic(done.summary_url, json_bytes(done.summary))
    return done


def _summary(runs: list[RunFlips], judge: _Judge) -> CohortFlips:
    from glossogen.pricing import add_costs

    flipped = [r.run_id for r in runs if r.flips]
    return CohortFlips(
        judge=judge.used,
        runs=len(runs),
        rulings=sum(r.rulings for r in runs),
        flips=sum(len(r.flips) for r in runs),
        failed=sum(r.failed for r in runs),
        flipped_runs=flipped,
        affected_derived_runs={
            r.run_id: r.derived_runs for r in runs if r.flips and r.derived_runs
        },
        cache_hits=judge.answers.hits,
        cache_misses=judge.answers.misses,
        cost_usd=add_costs([r.cost_usd for r in runs]),
    )


def read_flips(folder: RunFolder) -> RunFlips | None:
    """The run's flip report (the last rejudge's), or None when it has none or it is damaged.

    Raises:
        StorageError: the storage is unreachable.
    """
    from pydantic import ValidationError

    try:
        report = folder.read_object(FLIPS)
        return None if report is None else RunFlips.model_validate(report)
    except (ValueError, ValidationError):
        return None


def flip_lines(flips: RunFlips) -> list[str]:
    """One line per flip: ``round 2 ruling 1: passed -> failed``."""

    def word(success: bool) -> str:
        return "passed" if success else "failed"

    return [
        f"round {f.round_number} ruling {f.ruling}: {word(f.old)} -> {word(f.new)}"
        for f in flips.flips
    ]


def flips_of(folder: RunFolder) -> int | None:
    """How many rulings of the run the last rejudge flipped; None when never rejudged.

    Raises:
        StorageError: the storage is unreachable.
    """
    report = folder.read_object(FLIPS)
    flips = report.get("flips") if report is not None else None
    return len(flips) if isinstance(flips, list) else None
