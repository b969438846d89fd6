"""The CLI's wording of a library refusal: the flag that set the refused field."""

from __future__ import annotations

from glossogen.refusals import refusal_of

FLAGS = {
    "max_agent_turns": "--max-agent-turns",
    "run_timeout_seconds": "--run-timeout",
    "spend_cap_usd": "--spend-cap-usd",
    "after_round": "--after-round",
    "rounds_after": "--rounds-after",
}
"""The run commands' flag for each request field a library refusal names."""


def said(exc: BaseException) -> str:
    """Return the error's one line, its refused field named by the CLI's flag."""
    refusal = refusal_of(exc)
    if refusal is None:
        return str(exc)
    return refusal.worded(FLAGS.get(refusal.field, refusal.field))
