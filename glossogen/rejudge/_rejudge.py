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

from pydantic import BaseModel, ConfigDict, Field

from glossogen import exit_codes
from glossogen.eventlog import AgentRunCycleFailed, Event, JudgeCalled, RunView
from glossogen.export import FilterSelection, RunRecord, Selection
from glossogen.refusals import NothingSelected, Refusal, refusal_of
from glossogen.rejudge._cache import JudgeCache
from glossogen.rejudge._flips import FLIPS
from glossogen.storage import RunFolder, join, json_bytes, write_bytes_atomic

SUMMARY = "rejudge_summary.json"
"""The cohort summary of the last rejudge, in the runs dir."""


USAGE = int(exit_codes.USAGE)


class RejudgeError(ValueError):
    """A rejudge request refused before anything is asked or written: one line, an exit code.

    A refused request value (``model``, ``provider``, ``judge_settings``, ``judge_cache``,
    ``judge_prompt_file``) is carried as ``exc.refusal``: ``str()`` names the request field,
    and each surface words it with its own name (the CLI its flag).
    """

    def __init__(
        self,
        message: str = "",
        exit_code: int = USAGE,
        refusal: Refusal | NothingSelected | None = None,
    ) -> None:
        """Keep the one-line message (or the refusal's) and the exit code (64, 65, 66, 69, 77)."""
        super().__init__(message or (refusal.worded() if refusal else ""))
        self.exit_code = exit_code
        self.refusal = refusal


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
    last_failure: str | None = None
    """The judge's error on the last ruling it gave no answer to (``AuthenticationError: ...``)."""
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
    last_failure: str | None = None
    """The judge's error on the last ruling it gave no answer to, in the cohort."""
    flipped_runs: list[str]
    affected_derived_runs: dict[str, list[str]]
    """Each flipped run -> the derived runs (forks, replacements) whose lineage names it."""
    cache_hits: int
    cache_misses: int
    cache_kept: int = 0
    """Answers written to the cache: a miss the judge gave no answer to is not kept."""
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
    playing: list[str] = field(default_factory=list)
    """Selected runs still being played (a live writer): refused, nothing of theirs written."""
    twice: list[str] = field(default_factory=list)
    """Selected runs whose log holds an event twice (``RunView.repeated_note``), each refused
    in one line naming the log and the line: its rulings would be counted twice."""


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


def _check_judge(request: RejudgeRequest) -> _Judge:
    """The judge of ``request``, every value checked (see :func:`rejudge_runs`)."""
    from glossogen.engine._judge import JUDGE_SYSTEM
    from glossogen.evaluation import EvaluationError
    from glossogen.evaluation._judge import check_judge_provider, parse_judge_settings
    from glossogen.storage import path_kind

    if (request.model is None) != (request.provider is None):
        refused = Refusal(field="model", also=("provider",), reason="go together (the new judge)")
        raise RejudgeError(refusal=refused)
    try:
        settings = parse_judge_settings(request.judge_settings)
        if request.provider is not None:
            check_judge_provider(request.provider)
    except EvaluationError as exc:
        raise RejudgeError(str(exc), exc.exit_code, refusal_of(exc)) from None
    cache = request.judge_cache
    if not cache.strip() or path_kind(cache) == "file":
        refused = Refusal(field="judge_cache", value=repr(cache), reason="not a folder")
        raise RejudgeError(refusal=refused)
    system = JUDGE_SYSTEM
    if request.judge_prompt_file is not None:
        system = _read_prompt(request.judge_prompt_file)
    return _Judge(request.model, request.provider, settings, system,
                  JudgeCache(request.judge_cache))  # fmt: skip


def _read_prompt(url: str) -> str:
    """The judge's new system prompt, read from ``url`` (66 unreadable, 64 empty)."""
    from glossogen.storage import open_fs

    fs, path = open_fs(url)
    try:
        with fs.open(path, "rb") as f:
            system = f.read().decode().strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = type(exc).__name__ if not str(exc) else str(exc).splitlines()[0]
        refused = Refusal(field="judge_prompt_file", value=repr(url),
                          reason=f"cannot be read ({reason})")  # fmt: skip
        raise RejudgeError(refusal=refused, exit_code=int(exit_codes.UNREADABLE)) from None
    if not system:
        raise RejudgeError(refusal=Refusal(field="judge_prompt_file", reason=f"{url!r} is empty"))
    return system


def _check_credentials(
    judge: _Judge, views: dict[str, RunView], environ: dict[str, str] | None
) -> None:
    """Refuse (77) when the key of a judge the rulings will go to is missing.

    The judges asked are the new one, or else each ruling's recorded provider: every one of
    them is checked before anything is asked or written.
    """
    from glossogen.environment import load_environment
    from glossogen.evaluation._judge import JUDGE_ENV_VARS

    if judge.provider is not None:
        asked = {judge.provider: ["the new judge"]}
    else:
        asked = {}
        for run_id, view in views.items():
            for provider in dict.fromkeys(r.provider for r in view.rulings):
                asked.setdefault(provider, []).append(run_id)
    env = environ if environ is not None else load_environment()
    missing = []
    for provider, whose in sorted(asked.items()):
        var = JUDGE_ENV_VARS.get(provider)
        if var is None or env.get(var):
            continue
        if judge.provider is not None:
            missing.append(f"{var} (judge provider {provider})")
        else:
            runs = f"{len(whose)} run" + ("" if len(whose) == 1 else "s")
            missing.append(f"{var} (judge provider {provider}, recorded in {runs})")
    if missing:
        raise RejudgeError("missing credentials: " + "; ".join(missing),
                           int(exit_codes.CREDENTIALS))  # fmt: skip


def _select(request: RejudgeRequest) -> tuple[list[RunRecord], list[RunRecord], dict[str, str]]:
    """The selected runs, every run of the runs dir (for lineage), and the unreadable ones."""
    from glossogen.export import select_runs
    from glossogen.verify import VerifyError, select_cohort

    try:
        selected = select_cohort(request.runs_dir, request.selection, "rejudge")
    except VerifyError as exc:
        raise RejudgeError(str(exc), exc.exit_code, exc.refusal) from None
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


@dataclass
class _Asked:
    """One ruling asked again: its new logged ruling, or the judge's error when none came."""

    ruling: JudgeCalled | None
    failure: str | None = None


async def _rejudge_one(ruling: JudgeCalled, judge: _Judge) -> _Asked:
    """Ask ``ruling``'s question of ``judge``: the new ruling, or the last error of the judge."""
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
    if not asked.failed_in_round and got:
        return _Asked(got[-1])
    errors = [e.error for e in emitted if isinstance(e, AgentRunCycleFailed)]
    return _Asked(None, errors[-1] if errors else "no ruling logged")


async def _rejudge_run(
    record: RunRecord, view: RunView, judge: _Judge, derived: list[str]
) -> RunFlips:
    from glossogen.pricing import add_costs

    flips: list[Flip] = []
    costs: list[float | None] = []
    failed, last_failure = 0, None
    per_round: dict[int, int] = {}
    rulings = view.rulings
    for ruling in rulings:
        number = per_round[ruling.round_number] = per_round.get(ruling.round_number, 0) + 1
        asked = await _rejudge_one(ruling, judge)
        new = asked.ruling
        if new is None:
            failed, last_failure = failed + 1, asked.failure
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
        failed=failed, last_failure=last_failure, cost_usd=add_costs(costs), derived_runs=derived,
    )  # fmt: skip


def _load(selected: list[RunRecord], done: Rejudged) -> dict[str, RunView]:
    """Each selected run's log, by run id, checked as replay and fork check theirs.

    A log that cannot be read is named in ``unreadable``; one that holds an event twice
    (:attr:`RunView.repeated_note`, a ruling counted twice) in ``twice``, naming the line.
    """
    views: dict[str, RunView] = {}
    for record in selected:
        try:
            view = RunView.load(record.log_url)
        except (FileNotFoundError, ValueError) as exc:
            done.unreadable[record.run_id] = str(exc).splitlines()[0][:300]
            continue
        if (repeated := view.repeated_note) is not None:
            where, what = repeated
            done.twice.append(f"{record.log_url} {where}: {what}; a run whose log holds an "
                              "event twice is not rejudged")  # fmt: skip
            continue
        views[record.run_id] = view
    return views


def rejudge_runs(request: RejudgeRequest, environ: dict[str, str] | None = None) -> Rejudged:
    """Re-judge every counted ruling of the selected runs; write the flip reports and summary.

    Every check comes first; nothing is asked or written before they pass. A ruling the judge
    gives no answer to (after its retries) is counted ``failed``, with the judge's last error.
    A selected run still being played (a live writer holds its lock) is not rejudged: it is
    named in ``playing`` and nothing of it is read or written, as ``evaluate`` refuses it.

    Raises:
        RejudgeError: 64 a judge's model without its provider (or the other way round), a bad
            judge setting, a provider that cannot judge, a judge cache that is a file, an empty
            prompt file; 65 a selection that matches no run; 66 a runs dir that is not a
            folder, a prompt file that cannot be read; 69 unreachable storage; 77 the key of a
            judge the rulings go to is missing (the new judge's, or else each recorded one's).
            ``exc.refusal`` names a refused request value.
        SelectionError: a knob condition that cannot be read as the recorded type (65).
        StorageError: the storage failed while runs were read or reports written.
    """
    judge = _check_judge(request)
    selected, everything, unreadable = _select(request)
    derived = _derived_of(everything)
    done = Rejudged(unreadable=unreadable)
    done.playing = [r.run_id for r in selected if RunFolder.at(r.run_url).is_locked()]
    selected = [r for r in selected if r.run_id not in done.playing]
    views = _load(selected, done)
    _check_credentials(judge, views, environ)
    for record in selected:
        view = views.pop(record.run_id, None)
        if view is None:
            continue
        flips = asyncio.run(_rejudge_run(record, view, judge, derived.get(record.run_id, [])))
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
        last_failure=next((r.last_failure for r in reversed(runs) if r.last_failure), None),
        flipped_runs=flipped,
        affected_derived_runs={
            r.run_id: r.derived_runs for r in runs if r.flips and r.derived_runs
        },
        cache_hits=judge.answers.hits,
        cache_misses=judge.answers.misses,
        cache_kept=judge.answers.kept,
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
