"""Launching a run: plan and validate, check credentials, claim a folder, play, price, finish."""

from glossogen.launch._credentials import (
    EXIT_CREDENTIALS,
    apply_dotenv,
    check_credentials,
    load_environment,
    placeholder_keys,
)
from glossogen.launch._estimate import (
    CHARS_PER_TOKEN,
    RunCostEstimate,
    SeatEstimate,
    estimate_cost,
    measure_prompts,
)
from glossogen.launch._observers import RunObserver, notify, observing
from glossogen.launch._plan import (
    DEFAULT_MAX_AGENT_TURNS,
    EXIT_REFUSED,
    EXIT_USAGE,
    VIRTUAL_CLOCK_SETTING,
    LaunchError,
    RunConfig,
    RunLimits,
    RunRequest,
    plan_knobs,
    plan_run,
)
from glossogen.launch._resume import ResumeRequest, plan_resume, recorded_config, resume_point
from glossogen.launch._run_table import TeamOutcome, ranked_winners, round_table, team_outcomes
from glossogen.launch._session import (
    RunResult,
    RunSession,
    RunSpend,
    check_agent_models,
    check_runs_dir,
    claim_folder,
    claim_run,
    claim_run_async,
    open_session,
    price_spend,
)
from glossogen.launch._settings import (
    check_model_settings,
    check_spend_cap,
    derived_run_check,
    uncosted_models,
)
from glossogen.launch._turns import turn_cap_warning

__all__ = [
    "turn_cap_warning",
    "VIRTUAL_CLOCK_SETTING",
    "DEFAULT_MAX_AGENT_TURNS",
    "check_agent_models",
    "check_runs_dir",
    "CHARS_PER_TOKEN",
    "RunCostEstimate",
    "SeatEstimate",
    "estimate_cost",
    "measure_prompts",
    "check_model_settings",
    "check_spend_cap",
    "derived_run_check",
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
    "placeholder_keys",
    "claim_folder",
    "claim_run",
    "claim_run_async",
    "load_environment",
    "notify",
    "observing",
    "open_session",
    "plan_knobs",
    "plan_resume",
    "plan_run",
    "ranked_winners",
    "team_outcomes",
    "TeamOutcome",
    "round_table",
    "price_spend",
    "recorded_config",
    "resume_point",
]
