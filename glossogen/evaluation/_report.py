"""The run's evaluation report, ``<run_dir>/<scenario>_report.json``, and its sidecars.

A report we did not write (GlossoGen 0.5's ``measurements`` format) is never lost: before ours
replaces it, its bytes are kept as ``<scenario>_report.glossogen-0.5.json``, and readers see
both (:func:`combined_metrics`: ours wins a metric name in both).

Written atomically (temporary name, then rename; one put on S3), JSON with ``allow_nan=False``.
Evaluating again replaces the entries of the metrics scored and keeps the others, as long as the
log is the one the report describes; a report of an older log (the run was resumed since) is
started afresh, since its numbers no longer describe the log (:func:`stale_entries` names the
entries that drops, for the command to say so). A report of an older log beside a log that is
not evaluated now (refused: cut, or still playing) is moved aside, bytes kept, so no reader
takes it for the log's (:func:`set_aside_stale_report`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ValidationError

from glossogen.evaluation._contract import MetricResult
from glossogen.evaluation._run import LoadedRun
from glossogen.pricing import add_costs
from glossogen.storage import RunStore, join, open_fs, translate_errors, write_bytes_atomic

REPORT_VERSION: Final = 1


class EvaluationCost(BaseModel):
    """Spend of evaluation's own model calls, USD; None where some call was not costed.

    ``judge_usd`` sums the judged metrics in the report, ``probe_usd`` the model (probe)
    metrics; deterministic metrics spend nothing. ``estimated_cost_usd`` repeats ``total_usd``
    under the name the user guide (``running-simulations.md``) gives it.
    """

    judge_usd: float | None = 0.0
    probe_usd: float | None = 0.0
    total_usd: float | None = 0.0
    estimated_cost_usd: float | None = 0.0


class LogLinesSkipped(BaseModel):
    """Lines of the event log the reader skipped; the metrics describe the other lines.

    ``invalid``: not JSON objects or failing validation; ``unknown``: events of a type no
    installed class knows; ``truncated_tail``: the last line was cut mid-write.
    """

    invalid: int = 0
    unknown: int = 0
    truncated_tail: bool = False


class LeftBlank(BaseModel):
    """A metric computed on this log that left itself blank: its version and why."""

    version: int
    reason: str


class Report(BaseModel):
    """``<scenario>_report.json`` (report contract version 1).

    ``run_status`` is the status of the log's ``simulation_ended`` (``completed``, ``error``,
    ``interrupted``, ``incomplete``) and null when the log has none (a run scored with
    ``--allow-incomplete`` while still playing or after a kill). ``log_lines_skipped`` counts the
    log lines the metrics could not read. Both were added within version 1; a report written
    before them reads with ``run_status`` null and no skipped lines.
    """

    report_version: Literal[1] = REPORT_VERSION
    run_id: str
    scenario: str
    log_sha256: str
    run_status: str | None = None
    log_lines_skipped: LogLinesSkipped = LogLinesSkipped()
    updated_at: str
    metrics: dict[str, MetricResult] = {}
    left_blank: dict[str, LeftBlank] = {}
    evaluation_cost: EvaluationCost = EvaluationCost()


def report_name(scenario: str) -> str:
    """Return the report's file name, ``<scenario>_report.json``."""
    return f"{scenario}_report.json"


def read_report(run_dir: str, scenario: str) -> Report | None:
    """Return the run's report, or None when there is none or it is not a valid version-1 report."""
    store = RunStore(run_dir)
    name = report_name(scenario)
    if not store.exists(run_dir, name):
        return None
    try:
        return Report.model_validate(store.read_json(run_dir, name))
    except (ValueError, ValidationError):
        return None


def stale_entries(previous: Report | None, run: LoadedRun) -> list[str]:
    """Return the metrics of ``previous`` that describe another log than ``run``'s (sorted).

    :func:`merge_report` drops them: their numbers were computed on a log that has changed
    since (the run was resumed, or the file replaced).
    """
    if previous is None or previous.log_sha256 == run.log_sha256:
        return []
    return sorted(previous.metrics)


def stale_report_name(scenario: str, log_sha256: str) -> str:
    """Where a report of another log is set aside: ``<scenario>_report.stale-<sha12>.json``.

    ``<sha12>`` is the first 12 hex digits of the SHA-256 of the log the report describes.
    """
    return f"{scenario}_report.stale-{log_sha256[:12]}.json"


def set_aside_stale_report(run_dir: str, scenario: str, log_sha256: str) -> str | None:
    """Move our report aside when it describes another log than ``log_sha256``'s; say where.

    The rule: ``<scenario>_report.json`` is the report of the log beside it. When its
    ``log_sha256`` is another (the log was cut, resumed or replaced since it was scored) and
    the log is not evaluated now, the report would describe a log that is gone to every reader
    (export, the run browser), so it is set aside: its bytes are copied to
    :func:`stale_report_name` (never overwritten: ``.2``, ``.3``... before ``.json`` when that
    name holds other bytes; the same bytes already there are not copied again), then
    ``<scenario>_report.json`` is removed only if it still holds those bytes (a report written
    meanwhile stays). Nothing is lost. A report that is not ours, unreadable, or of this log
    is left alone.

    Returns:
        The name the stale report now has, or None when nothing was set aside.

    Raises:
        StorageError: the storage is unreachable.
    """
    name = report_name(scenario)
    url = join(run_dir, name)
    fs, path = open_fs(url)
    with translate_errors(url, fs):
        if not fs.exists(path):
            return None
        data = bytes(fs.cat_file(path))
    try:
        previous = Report.model_validate_json(data)
    except ValueError:
        return None  # not ours: keep_foreign_report keeps it before ours is ever written
    if previous.log_sha256 == log_sha256:
        return None
    base = stale_report_name(scenario, previous.log_sha256).removesuffix(".json")
    for n in range(1, 1000):
        aside = f"{base}.json" if n == 1 else f"{base}.{n}.json"
        aside_url = join(run_dir, aside)
        afs, apath = open_fs(aside_url)
        with translate_errors(aside_url, afs):
            if afs.exists(apath) and bytes(afs.cat_file(apath)) != data:
                continue  # another report of that log is kept under this name
            if not afs.exists(apath):
                write_bytes_atomic(aside_url, data)
            if bytes(fs.cat_file(path)) == data:
                fs.rm_file(path)
        return aside
    return None


def _cost(results: Iterable[MetricResult], kind: str) -> float | None:
    return add_costs([r.cost_usd for r in results if r.kind == kind])


def merge_report(
    previous: Report | None,
    run: LoadedRun,
    results: list[MetricResult],
    blank: Iterable[str] = (),
    now: datetime | None = None,
    left_blank: dict[str, LeftBlank] | None = None,
) -> Report:
    """Return the report after this evaluation.

    Args:
        previous: The report on disk, if any.
        run: The run evaluated.
        results: Entries scored now; each replaces the entry of the same name.
        blank: Metrics that did not apply now; their old entries are removed (blank, never 0).
        now: The time stamped in ``updated_at`` (UTC; the current time when None).
        left_blank: Metrics computed now that found nothing to measure (recorded as such).

    Returns:
        The merged report with ``evaluation_cost`` recomputed from its entries.
    """
    metrics: dict[str, MetricResult] = {}
    blanks: dict[str, LeftBlank] = {}
    if previous is not None and previous.log_sha256 == run.log_sha256:
        metrics = dict(previous.metrics)
        blanks = dict(previous.left_blank)
    for name in blank:
        metrics.pop(name, None)
        blanks.pop(name, None)
    for result in results:
        metrics[result.name] = result
        blanks.pop(result.name, None)
    blanks.update(left_blank or {})
    entries = list(metrics.values())
    judge, probe = _cost(entries, "judged"), _cost(entries, "model")
    total = add_costs([judge, probe])
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Report(
        run_id=run.run_id,
        scenario=run.scenario,
        log_sha256=run.log_sha256,
        run_status=run.status,
        log_lines_skipped=LogLinesSkipped(
            invalid=run.skipped.invalid,
            unknown=run.skipped.unknown,
            truncated_tail=run.skipped.truncated_tail,
        ),
        updated_at=stamp,
        metrics=dict(sorted(metrics.items())),
        left_blank=dict(sorted(blanks.items())),
        evaluation_cost=EvaluationCost(
            judge_usd=judge, probe_usd=probe, total_usd=total, estimated_cost_usd=total
        ),
    )


def write_report(run_dir: str, report: Report) -> str:
    """Write ``report`` atomically into ``run_dir``; return its URL.

    A report there that we did not write is kept first (:func:`keep_foreign_report`).

    Raises:
        StorageError: the storage is unreachable.
    """
    keep_foreign_report(run_dir, report.scenario)
    name = report_name(report.scenario)
    RunStore(run_dir).write_json(run_dir, name, report)
    return join(run_dir, name)


def write_text(run_dir: str, name: str, text: str) -> str:
    """Write ``text`` (UTF-8) to ``<run_dir>/<name>`` atomically; return its URL.

    Locally a temporary file in the same folder is fsync'd and renamed; on object storage the
    file is put once, so a failure never leaves a partial file under ``name``.

    Raises:
        StorageError: the storage is unreachable.
    """
    return write_bytes_atomic(join(run_dir, name), text.encode("utf-8"))


def write_sidecar(run_dir: str, name: str, rows: list[dict[str, Any]]) -> str:
    """Write ``rows`` as JSONL (one object per line, ``allow_nan=False``) atomically.

    Raises:
        ValueError: a row holds NaN or an infinite float.
        StorageError: the storage is unreachable.
    """
    lines = [json.dumps(row, allow_nan=False, ensure_ascii=False) for row in rows]
    return write_text(run_dir, name, "".join(line + "\n" for line in lines))


OURS: Final = "glossogen"
"""The ``source`` of a report entry ``glossogen evaluate`` wrote."""
GLOSSOGEN_05: Final = "glossogen-0.5"
"""The ``source`` of an entry read from a GlossoGen 0.5 report (``measurements``)."""


def foreign_report_name(scenario: str) -> str:
    """Where a report we did not write is kept: ``<scenario>_report.glossogen-0.5.json``."""
    return f"{scenario}_report.{GLOSSOGEN_05}.json"


def is_glossogen05_report(data: Any) -> bool:
    """True for a GlossoGen 0.5 report: an object with a ``measurements`` list, no version."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("measurements"), list)
        and "report_version" not in data
    )


def glossogen05_metrics(data: Any) -> dict[str, dict[str, Any]]:
    """Return a GlossoGen 0.5 report's measurements as report entries, keyed by metric name.

    Each ``measurements`` item becomes an entry under its own ``metric_name`` (names kept as
    they are): ``score``, ``unit`` (its ``score_unit``), ``summary``, ``per_round`` (its
    ``round_number``/``value``/``note`` observations), ``per_agent``, ``rounds`` (the rounds
    observed), ``status`` ``ok`` and ``source`` :data:`GLOSSOGEN_05`. Items without a string
    ``metric_name`` are skipped; anything else not a report is an empty dict.
    """
    if not is_glossogen05_report(data):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for item in data["measurements"]:
        if not isinstance(item, dict) or not isinstance(item.get("metric_name"), str):
            continue
        per_round = [r for r in item.get("per_round") or [] if isinstance(r, dict)]
        score = item.get("score")
        out[item["metric_name"]] = {
            "name": item["metric_name"],
            "status": "ok",
            "score": score if isinstance(score, int | float) else None,
            "unit": item.get("score_unit") or "",
            "summary": item.get("summary") or "",
            "rounds": len({r.get("round_number") for r in per_round}),
            "per_round": per_round,
            "per_agent": [a for a in item.get("per_agent") or [] if isinstance(a, dict)],
            "source": GLOSSOGEN_05,
        }
    return out


def combined_metrics(
    ours: dict[str, Any] | None, foreign: dict[str, Any] | None
) -> dict[str, dict[str, Any]]:
    """The metric entries a reader of a run sees: a foreign report's, then ours over them.

    Where a metric name is in both, our own entry wins. Every entry carries its ``source``
    (:data:`OURS` or :data:`GLOSSOGEN_05`). ``ours`` may itself be a GlossoGen 0.5 report (a
    migrated run never evaluated here).
    """
    metrics: dict[str, dict[str, Any]] = {}
    for data in (foreign, ours):
        if is_glossogen05_report(data):
            metrics.update(glossogen05_metrics(data))
        elif isinstance(data, dict) and isinstance(data.get("metrics"), dict):
            for name, entry in data["metrics"].items():
                if isinstance(entry, dict):
                    metrics[name] = {**entry, "source": OURS}
    return metrics


def keep_foreign_report(run_dir: str, scenario: str) -> str | None:
    """Keep the bytes of a report we did not write before ours replaces it; return where.

    A file at ``<scenario>_report.json`` that is not a version-1 report of ours (a GlossoGen
    0.5 report, or anything unreadable as ours) is copied byte for byte to
    :func:`foreign_report_name` (``.2``, ``.3``... before ``.json`` when that name holds other
    bytes). Done once: the same bytes already kept are not copied again; a kept file is never
    deleted or overwritten.

    Returns:
        The URL of the copy made now, or None when nothing needed keeping.

    Raises:
        StorageError: the storage is unreachable.
    """
    store = RunStore(run_dir)
    name = report_name(scenario)
    if not store.exists(run_dir, name):
        return None
    fs, path = open_fs(join(run_dir, name))
    data = bytes(fs.cat_file(path))
    try:
        Report.model_validate_json(data)
        return None  # ours
    except ValueError:
        pass
    base = foreign_report_name(scenario).removesuffix(".json")
    for n in range(1, 1000):
        kept = f"{base}.json" if n == 1 else f"{base}.{n}.json"
        if not store.exists(run_dir, kept):
            return write_bytes_atomic(join(run_dir, kept), data)
        kfs, kpath = open_fs(join(run_dir, kept))
        if bytes(kfs.cat_file(kpath)) == data:
            return None  # already kept
    return None
