"""Tasks that check a planned run before it starts: the credentials and settings it needs."""

from __future__ import annotations

import json

from prefect import get_run_logger

from glossogen.launch import RunConfig, check_model_settings
from glossogen.launch import check_credentials as check
from orchestration import glossogen_task


@glossogen_task(name="check_credentials")
async def check_credentials(config: RunConfig) -> list[str]:
    """Refuse the run when a provider has no key (77) or a model would drop a setting (65).

    Logs what the run resolved to (the plan itself was made once, before the flow started).
    """
    get_run_logger().info(
        "resolved %s: %s; limits %s",
        config.config_source,
        json.dumps(config.recorded_knobs, sort_keys=True),
        config.limits.model_dump_json(),
    )
    providers = check(config)
    check_model_settings(config)
    return providers
