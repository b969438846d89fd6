"""Launching a run: plan and validate, check credentials, claim a folder, play, price, finish."""

from glossogen.launch._credentials import (
    EXIT_CREDENTIALS,
    apply_dotenv,
    check_credentials,
    load_environment,
)
from glossogen.launch._observers import RunObserver, notify, observing
from glossogen.launch._plan import (
    DEFAULT_MAX_AGENT_TURNS,
    EXIT_REFUSED,
    EXIT_USAGE,
    LaunchError,
    RunConfig,
    RunLimits,
    RunRequest,
    plan_run,
)
from glossogen.launch._resume import ResumeRequest, plan_resume, recorded_config, resume_point
from glossogen.launch._session import (
    RunResult,
    RunSession,
    RunSpend,
    check_runs_dir,
    claim_run,
    claim_run_async,
    open_session,
    price_spend,
)
from glossogen.launch._settings import (
    CostEstimate,
    check_model_settings,
    check_spend_cap,
    estimate_round_cost,
    uncosted_models,
)

__all__ = [
    "DEFAULT_MAX_AGENT_TURNS",
    "check_runs_dir",
    "CostEstimate",
    "check_model_settings",
    "check_spend_cap",
    "estimate_round_cost",
    "uncosted_models",
    "EXIT_CREDENTIALS",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "LaunchError",
    "ResumeRequest",
    "RunConfig",
    "RunLimits",
    "RunObserver",
    "RunRequest",
    "RunResult",
    "RunSession",
    "RunSpend",
    "apply_dotenv",
    "check_credentials",
    "claim_run",
    "claim_run_async",
    "load_environment",
    "notify",
    "observing",
    "open_session",
    "plan_resume",
    "plan_run",
    "price_spend",
    "recorded_config",
    "resume_point",
]
