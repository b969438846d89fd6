"""Launching a run: plan and validate, check credentials, claim a folder, play, price, finish.

Also run control (``_control.py``): starting a claimed run detached (``play.py``) or on a
deployment, stopping and cancelling a live one; the CLI, the REST server and MCP all call it.

Every name is imported on first use (PEP 562): ``glossogen stop`` reaches ``_control.py``
through this package and must not pay for the engine that ``_plan.py`` and ``_session.py``
import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from glossogen._lazy import first_use

if TYPE_CHECKING:
    from glossogen.launch._claim import (
        check_runs_dir,
        claim_folder,
        claim_run,
        claim_run_async,
    )
    from glossogen.launch._cohort import (
        CohortRequest,
        check_cohort,
        cohort_summary,
        evaluate_cohort,
    )
    from glossogen.launch._control import (
        StopError,
        Stopping,
        StopRequest,
        launch_new,
        launch_resume,
        stop_folder,
        stop_run,
        stop_run_folder,
    )
    from glossogen.launch._credentials import (
        EXIT_CREDENTIALS,
        apply_dotenv,
        check_credentials,
        load_environment,
        placeholder_keys,
    )
    from glossogen.launch._describe import (
        ChannelInfo,
        KnobsPreset,
        KnobsSchema,
        ScenarioInfo,
        ScenarioList,
        ScenarioSummary,
        SeatInfo,
        describe_scenario,
        knobs_preset,
        knobs_schema,
        list_scenarios,
    )
    from glossogen.launch._estimate import (
        CHARS_PER_TOKEN,
        LeastRequest,
        RunCostEstimate,
        SeatEstimate,
        estimate_cost,
        least_request,
        measure_prompts,
    )
    from glossogen.launch._evaluate import (
        evaluate_planned,
        through_flow,
    )
    from glossogen.launch._observers import (
        RunObserver,
        notify,
        observing,
    )
    from glossogen.launch._open import check_agent_models, open_session
    from glossogen.launch._plan import (
        DEFAULT_MAX_AGENT_TURNS,
        EXIT_REFUSED,
        EXIT_USAGE,
        VIRTUAL_CLOCK_SETTING,
        LaunchError,
        RunConfig,
        RunLimits,
        RunRequest,
        check_judge_cache,
        check_limits,
        plan_knobs,
        plan_run,
    )
    from glossogen.launch._process import (
        PREFECT_DEFAULTS,
        answer_ctrl_c,
        apply_prefect_defaults,
        prefect_api_configured,
    )
    from glossogen.launch._resume import (
        ResumeRequest,
        plan_resume,
        recorded_config,
        resume_point,
    )
    from glossogen.launch._run_table import (
        TeamOutcome,
        ranked_winners,
        round_table,
        team_outcomes,
    )
    from glossogen.launch._session import RunResult, RunSession
    from glossogen.launch._settings import (
        check_derived_spend_cap,
        check_launch,
        check_model_settings,
        check_spend_cap,
        derived_run_check,
        uncosted_models,
    )
    from glossogen.launch._spend import RunSpend, price_spend
    from glossogen.launch._turns import (
        TurnCapWarning,
        turn_cap_warning,
    )

_HOME = {
    "ChannelInfo": "glossogen.launch._describe",
    "KnobsPreset": "glossogen.launch._describe",
    "KnobsSchema": "glossogen.launch._describe",
    "ScenarioInfo": "glossogen.launch._describe",
    "ScenarioList": "glossogen.launch._describe",
    "ScenarioSummary": "glossogen.launch._describe",
    "SeatInfo": "glossogen.launch._describe",
    "describe_scenario": "glossogen.launch._describe",
    "knobs_preset": "glossogen.launch._describe",
    "knobs_schema": "glossogen.launch._describe",
    "list_scenarios": "glossogen.launch._describe",
    "EXIT_CREDENTIALS": "glossogen.launch._credentials",
    "apply_dotenv": "glossogen.launch._credentials",
    "check_credentials": "glossogen.launch._credentials",
    "load_environment": "glossogen.launch._credentials",
    "placeholder_keys": "glossogen.launch._credentials",
    "CHARS_PER_TOKEN": "glossogen.launch._estimate",
    "LeastRequest": "glossogen.launch._estimate",
    "RunCostEstimate": "glossogen.launch._estimate",
    "SeatEstimate": "glossogen.launch._estimate",
    "estimate_cost": "glossogen.launch._estimate",
    "least_request": "glossogen.launch._estimate",
    "measure_prompts": "glossogen.launch._estimate",
    "RunObserver": "glossogen.launch._observers",
    "notify": "glossogen.launch._observers",
    "observing": "glossogen.launch._observers",
    "DEFAULT_MAX_AGENT_TURNS": "glossogen.launch._plan",
    "EXIT_REFUSED": "glossogen.launch._plan",
    "EXIT_USAGE": "glossogen.launch._plan",
    "VIRTUAL_CLOCK_SETTING": "glossogen.launch._plan",
    "LaunchError": "glossogen.launch._plan",
    "RunConfig": "glossogen.launch._plan",
    "RunLimits": "glossogen.launch._plan",
    "RunRequest": "glossogen.launch._plan",
    "check_judge_cache": "glossogen.launch._plan",
    "check_limits": "glossogen.launch._plan",
    "plan_knobs": "glossogen.launch._plan",
    "plan_run": "glossogen.launch._plan",
    "ResumeRequest": "glossogen.launch._resume",
    "plan_resume": "glossogen.launch._resume",
    "recorded_config": "glossogen.launch._resume",
    "resume_point": "glossogen.launch._resume",
    "TeamOutcome": "glossogen.launch._run_table",
    "ranked_winners": "glossogen.launch._run_table",
    "round_table": "glossogen.launch._run_table",
    "team_outcomes": "glossogen.launch._run_table",
    "RunResult": "glossogen.launch._session",
    "RunSession": "glossogen.launch._session",
    "RunSpend": "glossogen.launch._spend",
    "check_agent_models": "glossogen.launch._open",
    "check_runs_dir": "glossogen.launch._claim",
    "claim_folder": "glossogen.launch._claim",
    "claim_run": "glossogen.launch._claim",
    "claim_run_async": "glossogen.launch._claim",
    "open_session": "glossogen.launch._open",
    "price_spend": "glossogen.launch._spend",
    "check_derived_spend_cap": "glossogen.launch._settings",
    "check_launch": "glossogen.launch._settings",
    "check_model_settings": "glossogen.launch._settings",
    "check_spend_cap": "glossogen.launch._settings",
    "derived_run_check": "glossogen.launch._settings",
    "uncosted_models": "glossogen.launch._settings",
    "TurnCapWarning": "glossogen.launch._turns",
    "turn_cap_warning": "glossogen.launch._turns",
    "StopError": "glossogen.launch._control",
    "StopRequest": "glossogen.launch._control",
    "Stopping": "glossogen.launch._control",
    "launch_new": "glossogen.launch._control",
    "launch_resume": "glossogen.launch._control",
    "stop_folder": "glossogen.launch._control",
    "stop_run": "glossogen.launch._control",
    "stop_run_folder": "glossogen.launch._control",
    "PREFECT_DEFAULTS": "glossogen.launch._process",
    "answer_ctrl_c": "glossogen.launch._process",
    "apply_prefect_defaults": "glossogen.launch._process",
    "prefect_api_configured": "glossogen.launch._process",
    "evaluate_planned": "glossogen.launch._evaluate",
    "CohortRequest": "glossogen.launch._cohort",
    "check_cohort": "glossogen.launch._cohort",
    "cohort_summary": "glossogen.launch._cohort",
    "evaluate_cohort": "glossogen.launch._cohort",
    "through_flow": "glossogen.launch._evaluate",
}
"""Each exported name and the module it lives in."""


__getattr__ = first_use(__name__, _HOME)


__all__ = [
    "answer_ctrl_c",
    "apply_dotenv",
    "apply_prefect_defaults",
    "ChannelInfo",
    "CHARS_PER_TOKEN",
    "check_agent_models",
    "check_credentials",
    "check_derived_spend_cap",
    "check_judge_cache",
    "check_limits",
    "check_launch",
    "check_model_settings",
    "check_runs_dir",
    "check_spend_cap",
    "claim_folder",
    "claim_run",
    "claim_run_async",
    "DEFAULT_MAX_AGENT_TURNS",
    "derived_run_check",
    "describe_scenario",
    "estimate_cost",
    "evaluate_planned",
    "CohortRequest",
    "check_cohort",
    "cohort_summary",
    "evaluate_cohort",
    "EXIT_CREDENTIALS",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "knobs_preset",
    "knobs_schema",
    "KnobsPreset",
    "KnobsSchema",
    "launch_new",
    "launch_resume",
    "LaunchError",
    "least_request",
    "LeastRequest",
    "list_scenarios",
    "load_environment",
    "measure_prompts",
    "notify",
    "observing",
    "open_session",
    "placeholder_keys",
    "plan_knobs",
    "plan_resume",
    "plan_run",
    "PREFECT_DEFAULTS",
    "prefect_api_configured",
    "price_spend",
    "ranked_winners",
    "recorded_config",
    "resume_point",
    "ResumeRequest",
    "round_table",
    "RunConfig",
    "RunCostEstimate",
    "RunLimits",
    "RunObserver",
    "RunRequest",
    "RunResult",
    "RunSession",
    "RunSpend",
    "ScenarioInfo",
    "ScenarioList",
    "ScenarioSummary",
    "SeatEstimate",
    "SeatInfo",
    "stop_folder",
    "stop_run",
    "stop_run_folder",
    "StopError",
    "StopRequest",
    "Stopping",
    "team_outcomes",
    "TeamOutcome",
    "through_flow",
    "turn_cap_warning",
    "TurnCapWarning",
    "uncosted_models",
    "VIRTUAL_CLOCK_SETTING",
]
