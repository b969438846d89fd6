"""A cohort scored: the entry of ``glossogen evaluate --runs-dir`` and MCP ``evaluate_runs``.

:func:`check_cohort` checks a cohort's values once (the cap, the knob conditions, the runs
directory, the judge's key) and returns the one request value, :class:`CohortRequest`;
:func:`evaluate_cohort` hands it, whole, to the ``evaluate-cohort`` flow (on a temporary local
Prefect server when no API is configured) and returns the flow's ``CohortEvaluation``;
:func:`cohort_summary` is its one line. A refusal is an ``EvaluationError`` carrying its exit
code and, for a request value, its :class:`~glossogen.refusals.Refusal`, which each surface words
its own way (the CLI its flags, MCP the tool's arguments).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from glossogen import exit_codes
from glossogen.evaluation import EvaluationError, EvaluationRequest
from glossogen.export import MAX_RUNS, Selection, SelectionError
from glossogen.refusals import Refusal, not_finite, refusal_of, validator_line

if TYPE_CHECKING:
    from flows.evaluate import CohortEvaluation


class CohortRequest(BaseModel):
    """A cohort to score, checked once (:func:`check_cohort`).

    Attributes:
        runs_dir: The runs directory (local path or fsspec URL).
        selection: The export's selection of runs under it; None for every run.
        evaluation: What to score on each run.
        spend_cap_usd: The cohort's judge spend cap (USD); None for no cap.
        max_runs: Ceiling on the runs selected (the export's; a selection over it is refused).
        listed: The run ids under ``runs_dir`` the check listed for a filter selection
            (``export.check_selection``), which the flow's selection reads instead of listing
            the folder again; None: the flow lists it (every run, run ids, an older caller).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    runs_dir: str
    selection: Selection | None = None
    evaluation: EvaluationRequest
    spend_cap_usd: float | None = None
    max_runs: int = MAX_RUNS
    listed: list[str] | None = None


def check_cohort(
    runs_dir: str,
    selection: Any,
    evaluation: EvaluationRequest,
    spend_cap_usd: float | None = None,
) -> CohortRequest:
    """Check a cohort's values once, before any flow run: no run's log is read.

    The runs directory is listed once for a filter selection, and the knobs the runs it
    names recorded read (``export.check_selection``: a knob value their type cannot read,
    ``round_count>=abc``, is refused here); the listing goes to the flow in the request.

    Args:
        runs_dir: The runs directory.
        selection: The export's selection (a model or its dict form); None for every run.
        evaluation: What to score (:func:`~glossogen.evaluation.check_request`).
        spend_cap_usd: The judge spend cap (USD), or None.

    Raises:
        EvaluationError: 64 a negative or not finite cap (``refusals.finite_number``) or a
            knob condition that does not parse or a malformed selection value, 65 a selection
            refused (a scenario or ``status`` no run has, a knob value a run's recorded type
            cannot read, over ``max_runs``), 66 a runs directory that is
            not a folder, run ids that no longer resolve or that name runs that cannot be read
            (``runs that cannot be read: veyru/<ts>: veyru/<ts>/labels.json is not UTF-8
            text (...)``, as the export refuses them),
            69 unreachable storage, 77 the judge's key missing; ``refusal`` names the request
            field. Every value of the selection refused is named: the first raised, each
            other in ``also`` (the values no run need be read for first: when one is
            refused no run is read).
    """
    from glossogen.environment import load_environment  # not launch's: it imports the engine
    from glossogen.evaluation import JUDGE_ENV_VARS
    from glossogen.export import RunsDirError, check_runs_dir, check_selection
    from glossogen.storage import StorageError

    refused = not_finite("spend_cap_usd", spend_cap_usd)  # inf, nan: as --spend-cap-usd's
    if refused is not None:
        raise EvaluationError(refusal=refused, exit_code=exit_codes.USAGE)
    if spend_cap_usd is not None and spend_cap_usd < 0:
        reason = f"must be a number of USD of at least 0, got {spend_cap_usd:g}"
        said = Refusal(field="spend_cap_usd", reason=reason)
        raise EvaluationError(refusal=said, exit_code=exit_codes.USAGE)
    try:
        request = CohortRequest(runs_dir=runs_dir, selection=selection, evaluation=evaluation,
                                spend_cap_usd=spend_cap_usd)  # fmt: skip
    except ValidationError as exc:
        ours = exc.errors()[0].get("ctx", {}).get("error")
        if isinstance(ours, SelectionError):  # the selection's own check: each value it refused
            raise _refused(ours) from ours
        found = refusal_of(exc)
        line = validator_line(exc.errors()[0])
        raise EvaluationError(line, exit_codes.USAGE,
                              found if isinstance(found, Refusal) else None) from None  # fmt: skip
    try:
        if request.selection is None:  # every run (nothing to refuse)
            check_runs_dir(runs_dir)
        else:  # every value, then the named runs (before any flow run)
            listed = check_selection(runs_dir, request.selection)
            request = request.model_copy(update={"listed": listed})
    except SelectionError as exc:  # each value refused; named runs missing or unreadable: 66
        raise _refused(exc) from exc
    except RunsDirError as exc:
        said = Refusal(field="runs_dir", reason=str(exc))
        raise EvaluationError(refusal=said, exit_code=exit_codes.UNREADABLE) from None
    except StorageError as exc:
        raise EvaluationError(str(exc), exit_codes.TRANSPORT) from None
    if evaluation.provider is not None:
        var = JUDGE_ENV_VARS[evaluation.provider]
        if not load_environment().get(var):
            line = f"missing credentials: {var} (judge provider {evaluation.provider})"
            raise EvaluationError(line, exit_codes.CREDENTIALS)
    return request


def _refused(exc: SelectionError) -> EvaluationError:
    """The cohort's refusal of each value of its selection ``exc`` refused, in order.

    64 a value malformed whatever the runs hold (a knob condition with no operator), 65 one
    the runs refuse (a scenario or ``status`` no run has, a knob value the recorded type
    cannot read), 66 named runs that no longer resolve or cannot be read (as the export).
    Each carries the selection's refusal as its cause (a server words it for its client).
    """
    from glossogen.export import NamedRunsRefused

    every = []
    for each in exc.every:
        if isinstance(each, NamedRunsRefused):  # the export's exit 66, its line as it is
            refused = EvaluationError(str(each), exit_codes.UNREADABLE)
        else:
            code = exit_codes.USAGE if each.usage else exit_codes.REFUSED
            refused = EvaluationError(str(each), code, each.refusal)
        refused.__cause__ = each
        every.append(refused)
    first = every[0]
    first.also = tuple(every[1:])
    return first


async def evaluate_cohort(request: CohortRequest) -> CohortEvaluation:
    """Score the cohort as the ``evaluate-cohort`` flow; return what it did.

    Raises:
        EvaluationError: 65 the cap cannot be honoured (the judge is not priced) or the
            selection is refused (an unknown scenario, over its ceiling), 69 unreachable
            storage; ``refusal`` names the request field.
    """
    from glossogen.launch._process import apply_prefect_defaults
    from glossogen.storage import StorageError

    apply_prefect_defaults()
    from flows.evaluate import SpendCapError
    from flows.evaluate import evaluate_cohort as cohort_flow

    try:
        return await cohort_flow(request)
    except SpendCapError as exc:
        raise EvaluationError(refusal=exc.refusal, exit_code=exit_codes.REFUSED) from None
    except SelectionError as exc:
        raise EvaluationError(str(exc), exit_codes.REFUSED, exc.refusal) from None
    except StorageError as exc:
        raise EvaluationError(str(exc), exit_codes.TRANSPORT) from None


def _usd(value: float | None) -> str:
    return "not costed" if value is None else f"${value:.6f}"


NAMED = 5
"""Runs not evaluated the cohort's summary names by id (``...`` after them)."""


def cohort_summary(done: CohortEvaluation, runs_dir: str | None) -> str:
    """The cohort's one sentence of counts: runs evaluated of those selected, and the spend.

    ``evaluated 2 of 3 runs under runs: 1 scored, 1 skipped (report up to date); 1 not
    evaluated (veyru/1790000002) · evaluation cost $0.000000``: a run evaluated is scored now
    or skipped (its report up to date); one not evaluated (unreadable, named but missing,
    refused, or its task failed) is named by its run id, the first :data:`NAMED` of them
    (each one's reason is its own line: the CLI's error, MCP's ``not_evaluated_runs``).

    Args:
        done: What the cohort's flow did.
        runs_dir: The runs directory as the user typed it (the CLI's ``--runs-dir``: ``under
            <runs_dir>``), or None for a server's, which its client never gave and is named
            ``in the server's runs directory``, never by its path.
    """
    from glossogen.export import SERVED_RUNS_DIR

    where = f"in {SERVED_RUNS_DIR}" if runs_dir is None else f"under {runs_dir}"
    short = [*done.unreadable, *done.missing_run_ids,
             *(o.run_id for o in done.outcomes if o.state in ("refused", "failed"))]  # fmt: skip
    scored, skipped = done.count("scored"), done.count("skipped")
    counted = len(done.outcomes) + len(done.unreadable) + len(done.missing_run_ids)
    named = ", ".join(short[:NAMED]) + (" ..." if len(short) > NAMED else "")
    return (
        f"evaluated {scored + skipped} of {counted} run{'' if counted == 1 else 's'} {where}: "
        f"{scored} scored, {skipped} skipped (report up to date); {len(short)} not evaluated"
        f"{f' ({named})' if short else ''} · evaluation cost {_usd(done.spent_usd)}"
    )
