"""Launching a run: plan and validate, check credentials, claim a folder, play, price, finish."""

from glossogen.launch._credentials import (
    EXIT_CREDENTIALS,
    apply_dotenv,
    check_credentials,
    load_environment,
)
from glossogen.launch._observers import RunObserver, notify, observing
from glossogen.launch._plan import (
    EXIT_REFUSED,
    EXIT_USAGE,
    LaunchError,
    RunPlan,
    RunRequest,
    SeatPlan,
    plan_run,
)
from glossogen.launch._session import (
    RunResult,
    RunSession,
    Spend,
    check_runs_dir,
    claim_run,
    claim_run_async,
    log_url,
    open_session,
    price_spend,
)
from glossogen.launch._settings import (
    CostEstimate,
    check_model_settings,
    estimate_round_cost,
    uncosted_models,
)

__all__ = [
    "check_runs_dir",
    "CostEstimate",
    "check_model_settings",
    "estimate_round_cost",
    "uncosted_models",
    "EXIT_CREDENTIALS",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "LaunchError",
    "RunObserver",
    "RunPlan",
    "RunRequest",
    "RunResult",
    "RunSession",
    "SeatPlan",
    "Spend",
    "apply_dotenv",
    "check_credentials",
    "claim_run",
    "claim_run_async",
    "load_environment",
    "log_url",
    "notify",
    "observing",
    "open_session",
    "plan_run",
    "price_spend",
]
