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
            bad knob condition or selection value, 65 a selection refused (a scenario no run
            has, a knob value a run's recorded type cannot read), 66 a runs directory that is
            not a folder, run ids that no longer resolve or that name runs that cannot be read
            (``runs that cannot be read: veyru/<ts>: veyru/<ts>/labels.json is not UTF-8
            text (...)``, as the export refuses them),
            69 unreachable storage, 77 the judge's key missing; ``refusal`` names the request
            field.
    """
    from glossogen.environment import load_environment  # not launch's: it imports the engine
    from glossogen.evaluation import JUDGE_ENV_VARS
    from glossogen.export import (
        RunsDirError,
        RunsMissing,
        RunsUnreadable,
        check_runs_dir,
        check_selection,
        parse_conditions,
    )
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
        parse_conditions(getattr(request.selection, "knob", None))
    except SelectionError as exc:
        raise EvaluationError(str(exc), exit_codes.USAGE, exc.refusal) from None
    except ValidationError as exc:
        found = refusal_of(exc)
        line = validator_line(exc.errors()[0])
        raise EvaluationError(line, exit_codes.USAGE,
                              found if isinstance(found, Refusal) else None) from None  # fmt: skip
    try:
        check_runs_dir(runs_dir)
        if request.selection is not None:  # None: every run (nothing to refuse)
            listed = check_selection(runs_dir, request.selection)  # before any flow run
            request = request.model_copy(update={"listed": listed})
    except (RunsMissing, RunsUnreadable) as exc:  # the export's exit 66, before any flow run
        raise EvaluationError(str(exc), exit_codes.UNREADABLE) from None
    except SelectionError as exc:
        raise EvaluationError(str(exc), exit_codes.REFUSED, exc.refusal) from None
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


def cohort_summary(done: CohortEvaluation, runs_dir: str | None) -> str:
    """The cohort's one line: runs counted, scored, skipped, not evaluated, and the spend.

    Args:
        done: What the cohort's flow did.
        runs_dir: The runs directory as the user typed it (the CLI's ``--runs-dir``: ``under
            <runs_dir>``), or None for a server's, which its client never gave and is named
            ``in the server's runs directory``, never by its path.
    """
    from glossogen.export import SERVED_RUNS_DIR

    where = f"in {SERVED_RUNS_DIR}" if runs_dir is None else f"under {runs_dir}"
    not_evaluated = len(done.unreadable) + len(done.missing_run_ids) + done.count("refused")
    counted = len(done.outcomes) + len(done.unreadable) + len(done.missing_run_ids)
    return (
        f"evaluated {counted} run{'' if counted == 1 else 's'} {where}: "
        f"{done.count('scored')} scored, {done.count('skipped')} skipped "
        f"(report up to date), {not_evaluated + done.count('failed')} not evaluated"
        f" · evaluation cost {_usd(done.spent_usd)}"
    )
