"""Launch checks of what each model would do with its settings, and of the spend cap.

A run is refused when an agent or the judge would silently drop a setting it names: pydantic-ai
decides per model (its profile) whether ``thinking`` is sent at all, so a log must never record
a thinking level the model never ran with (spec: Agent model settings). Likewise a cache
lifetime (``cache="1h"``) the model does not sell: pydantic-ai would snap it to another one.
``cache`` true or false is never refused: a provider that takes no cache marker caches what it
caches by itself.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from glossogen.knobs import DEFAULT_MAX_TOKENS, BaseKnobs
from glossogen.launch._estimate import RunCostEstimate, estimate_cost
from glossogen.launch._plan import EXIT_REFUSED, LaunchError, RunConfig, plan_knobs
from glossogen.pricing import price_call
from glossogen.refusals import Refusal
from glossogen.storage import CONFIG, LABELS, LINEAGE, RunFolder, RunStore

if TYPE_CHECKING:
    from glossogen.derive import SeatCheck


def _profile(provider: str, model: str) -> Any:
    """Build the model as the run will (so a bad self-hosted map fails now) and return its profile.

    Raises:
        LaunchError: exit 65 when the model cannot be built (e.g. ``SELF_HOSTED_BASE_URLS`` is
            not JSON or lacks the model).
    """
    from pydantic_ai.exceptions import UserError

    from glossogen.models import ModelConfigError, model_profile

    if provider == "scripted":
        return {"supports_thinking": False, "thinking_always_enabled": False}
    try:
        return model_profile(provider, model)
    except (ModelConfigError, UserError, ImportError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise LaunchError(f"{provider}:{model}: {first}", EXIT_REFUSED) from None


def _refusal(who: str, provider: str, model: str, settings: dict[str, Any]) -> str | None:
    profile = _profile(provider, model)
    reason = _cache_refusal(who, provider, model, settings.get("cache"), profile)
    if reason:
        return reason
    thinking = settings.get("thinking")
    if thinking is None:
        return None
    spelled = json.dumps(thinking) if isinstance(thinking, bool) else str(thinking)
    if not profile.get("supports_thinking", False):
        # pydantic-ai sends such a model nothing, whatever the value: false is dropped too.
        return (
            f"{who} on {provider}:{model} cannot think (pydantic-ai's profile), so "
            f"thinking={spelled} would be dropped"
        )
    if thinking is False and profile.get("thinking_always_enabled", False):
        return f"{who} on {provider}:{model} always thinks, so thinking=false would be dropped"
    return None


def _cache_refusal(who: str, provider: str, model: str, cache: Any, profile: Any) -> str | None:
    """Why a cache lifetime would be dropped on this model, or None (``true``/``false``: never)."""
    from glossogen.models import CACHE_MARKED

    if not isinstance(cache, str):
        return None
    sold: tuple[str, ...] = ()
    if provider in CACHE_MARKED and profile.get("supports_cache", False):
        sold = tuple(profile.get("supported_cache_retentions", ()))
    if cache in sold:
        return None
    offer = f"sells {', '.join(sold)}" if sold else "has no cache lifetime to choose"
    return (
        f"{who} on {provider}:{model} {offer} (pydantic-ai's profile), so cache={cache} "
        "would be dropped; use cache=true for the provider's default"
    )


def check_model_settings(config: RunConfig) -> None:
    """Build every agent's and the judge's model; refuse settings a model would drop.

    Raises:
        LaunchError: exit 65, naming the agent, its model and the setting (``thinking`` on a
            model that cannot think, a ``cache`` lifetime it does not sell), or a model that
            cannot be built (self-hosted map), or the test-only virtual clock asked for with a
            provider not on loopback.
    """
    from glossogen.launch._credentials import apply_dotenv

    apply_dotenv()  # keys found in a .env must reach the SDKs that build the models
    config.plays_on_virtual_clock(os.environ)  # the test-only clock setting, refused up front
    for seat in config.seats:
        reason = _refusal(f"agent {seat.agent_id}", seat.provider, seat.model, seat.model_settings)
        if reason:
            raise LaunchError(reason, EXIT_REFUSED)
    judge_settings = config.knobs.judge_model_settings.model_dump(mode="json")
    judge = config.judge
    if judge is not None and judge.provider != "scripted":
        settings = {k: v for k, v in judge_settings.items() if v is not None}
        reason = _refusal("the judge", judge.provider, judge.model, settings)
        if reason:
            raise LaunchError(reason, EXIT_REFUSED)


def derived_run_check(scenario: str) -> SeatCheck:
    """Return the launch checks of a derived run, for before its folder is claimed.

    Every seat's and the judge's provider needs its variables, and no model may drop a setting
    it names (``thinking`` on a model that cannot think): the checks ``glossogen run`` makes,
    over the seats the derived run's knobs resolve to.

    Raises (the returned callable):
        LaunchError: 77 for a missing variable, 65 for a setting a model would drop.
    """

    def check(knobs: BaseKnobs, model: str, provider: str) -> None:
        from glossogen.launch._credentials import check_credentials

        config = plan_knobs(scenario, model, provider, "the derived run's knobs", knobs)
        check_credentials(config)
        check_model_settings(config)

    return check


def check_derived_spend_cap(folder: RunFolder) -> None:
    """Refuse a derived run whose spend cap its dry-run estimate passes, before it plays.

    The estimate needs the derived run's own config (seats, rounds ahead), which exists once
    its folder is prepared; a refused folder, made a moment ago and never played, is removed.

    Raises:
        LaunchError: (65) as :func:`check_spend_cap`, the folder removed.
    """
    from glossogen.launch._resume import ResumeRequest, plan_resume

    plan, point = plan_resume(ResumeRequest(run_dir=folder.url))
    if plan.limits.spend_cap_usd is None:
        return
    try:
        check_spend_cap(plan, max(0, plan.knobs.round_count - point.state.after_round))
    except LaunchError:
        names = (CONFIG, LABELS, LINEAGE, folder.log_url.rsplit("/", 1)[-1])
        RunStore(folder.runs_dir).release_claim(folder, names, keep=folder.runs_dir)
        raise


def check_spend_cap(config: RunConfig, rounds: int) -> RunCostEstimate | None:
    """Refuse a spend cap the run cannot keep or cannot be held to, before anything is spent.

    Args:
        config: The planned run (``config.limits.spend_cap_usd``; None: nothing to check).
        rounds: Rounds still to play (a resume counts only the rounds ahead).

    Returns:
        The estimate the cap was checked against (a dry run prints it rather than estimating
        again), or None when there is no cap.

    Raises:
        LaunchError: (65) a billed model is not in the price catalogue (its spend could not
            be counted against the cap), the dry-run estimate of the rounds to play
            (:func:`~glossogen.launch.estimate_cost`) passes the cap, or one request's
            output cap (its ``max_tokens``, else 16384, at the output rate) alone does.
    """
    cap = config.limits.spend_cap_usd
    if cap is None:
        return None
    missing = uncosted_models(config)
    if missing:
        raise LaunchError(
            refusal=Refusal(
                field="spend_cap_usd",
                value=f"{cap:g}",
                reason=f"{', '.join(missing)} is not in the price catalogue, "
                "so its spend cannot be counted against the cap",
            )
        )
    estimate = estimate_cost(config, max(0, config.knobs.round_count - rounds))
    total = estimate.total_usd or 0.0
    if total > cap:
        raise LaunchError(
            refusal=Refusal(
                field="spend_cap_usd",
                value=f"{cap:g}",
                reason=f"the dry-run estimate of the {rounds} rounds to play is "
                f"${total:.6f} (${estimate.per_round_usd or 0.0:.6f} per round), above the cap",
            )
        )
    callers = [(s.agent_id, s.provider, s.model, s.model_settings) for s in config.seats]
    if config.judge is not None:
        j = config.judge
        callers.append(("judge", j.provider, j.model, j.model_settings))
    for caller, provider, model, settings in callers:
        # Each request reserves at least its output cap (engine/_spend.py); one that passes
        # the cap alone could never be sent.
        max_tokens = settings.get("max_tokens") or DEFAULT_MAX_TOKENS
        output = price_call(provider, model, input_tokens=0, output_tokens=max_tokens) or 0.0
        if output > cap:
            raise LaunchError(
                refusal=Refusal(
                    field="spend_cap_usd",
                    value=f"{cap:g}",
                    reason=f"one request of {caller} ({provider}:{model}) "
                    f"reserves ${output:.6f} for its output cap alone (max_tokens {max_tokens}), "
                    "above the cap, so none could be sent",
                )
            )
    return estimate


def uncosted_models(config: RunConfig) -> list[str]:
    """Return ``provider:model`` of every billed model genai-prices does not know."""
    pairs = {(s.provider, s.model) for s in config.seats}
    if config.judge is not None:
        pairs.add((config.judge.provider, config.judge.model))
    return sorted(
        f"{p}:{m}" for p, m in pairs if price_call(p, m, input_tokens=1, output_tokens=1) is None
    )


def check_launch(
    config: RunConfig, rounds_done: int = 0, runs_dir: str = ""
) -> RunCostEstimate | None:
    """Every launch check of a planned run, once and in one order, for every surface.

    Credentials, then the model settings (building a model needs its key), then the spend cap
    against the dry-run estimate of the rounds still to play, then (a new run) the runs dir.
    ``glossogen run``, MCP's ``start_run`` and ``resume_run`` all call this, so a launch that
    fails two checks is refused for the same one everywhere.

    Args:
        config: The planned run.
        rounds_done: Rounds already played (a resume); the cap is held to the rest.
        runs_dir: A new run's runs dir, checked last ("" for a resume: its folder exists).

    Returns:
        The spend cap's dry-run estimate (None when the run has no cap).

    Raises:
        LaunchError: 77 for a missing credential, 65 for a setting a model would drop or a
            cap the estimate passes, 66/69 for a runs dir where no folder can be made.
    """
    from glossogen.launch._claim import check_runs_dir
    from glossogen.launch._credentials import check_credentials

    check_credentials(config)
    check_model_settings(config)
    estimate = check_spend_cap(config, max(0, config.knobs.round_count - rounds_done))
    if runs_dir:
        check_runs_dir(runs_dir)
    return estimate
