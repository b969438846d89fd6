"""The CLI's wording of a library refusal: the flag that set the refused field."""

from __future__ import annotations

from glossogen.refusals import worded

FLAGS = {
    "max_agent_turns": "--max-agent-turns",
    "run_timeout_seconds": "--run-timeout",
    "spend_cap_usd": "--spend-cap-usd",
    "after_round": "--after-round",
    "rounds_after": "--rounds-after",
    "model": "--model",
    "provider": "--provider",
    "judge_replicas": "--judge-replicas",
    "probe_replicas": "--probe-replicas",
    "replaced_agent_id": "--replaced-agent-id",
    "donor_agent_id": "--donor-agent-id",
    "channel_visibility": "--channel-visibility",
    "knobs": "--knobs",
    "metrics": "--metrics",
    "judge_settings": "--judge-settings",
    "runs_dir": "--runs-dir",
    "group_slug": "--group-slug",
    "judge_cache": "--judge-cache",
    "judge_prompt_file": "--judge-prompt",
}
"""The commands' flag for each request field a library refusal names."""


def said(exc: BaseException) -> str:
    """Return the error's one line, its refused field named by the CLI's flag."""
    return worded(exc, FLAGS)
