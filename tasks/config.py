"""Tasks that resolve a launch: the config and the credentials it needs."""

from __future__ import annotations

import json

from prefect import get_run_logger, task
from prefect.cache_policies import NONE

from glossogen.launch import RunPlan, RunRequest, check_model_settings, plan_run
from glossogen.launch import check_credentials as check


@task(name="resolve_config", cache_policy=NONE)
async def resolve_config(request: RunRequest) -> RunPlan:
    """Resolve preset, overrides and knobs into a plan, and log what it resolved to."""
    plan = plan_run(request)
    get_run_logger().info(
        "resolved %s with %d override(s): %s",
        plan.config_source,
        len(request.overrides),
        json.dumps(plan.knobs, sort_keys=True),
    )
    return plan


@task(name="check_credentials", cache_policy=NONE)
async def check_credentials(plan: RunPlan) -> list[str]:
    """Refuse the run when a provider has no key (77) or a model would drop a setting (65)."""
    providers = check(plan)
    check_model_settings(plan)
    return providers
