"""The CLI's wording of a library refusal: the flag that set the refused field."""

from __future__ import annotations

import re
import sys

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
    "run_dir": "--run-dir",
    "source_run_dir": "--source-run-dir",
    "donor_run_dir": "--donor-run-dir",
    "group_slug": "--group-slug",
    "judge_cache": "--judge-cache",
    "judge_prompt_file": "--judge-prompt",
    "run_ids": "--run-id",
    "scenario": "--scenario",
    "labels": "--label",
    "run_id_contains": "--run-id-contains",
    "status": "--status",
    "contains_agent_id": "--contains-agent-id",
    "knob": "--knob",
    "max_runs": "--max-runs",
    "dir": "--dir",
    "allow_config_change": "--allow-config-change",
    "allow_incomplete": "--allow-incomplete",
    "replace": "--replace",
    "raw": "--raw",
    "include_logs": "--include-logs",
    "include_atif": "--include-atif",
}
"""The commands' flag for each request field a library refusal names."""

SELECTION_FLAGS = {**FLAGS, "max_runs": "it with --max-runs"}
"""The cohort commands' words for a refused selection (``raise it with --max-runs``)."""


def said(exc: BaseException) -> str:
    """Return the error's one line, its refused field named by the CLI's flag."""
    return worded(exc, FLAGS)


def said_of_selection(exc: BaseException) -> str:
    """Return a refused selection's one line (``SelectionError``), in the flags' words."""
    return worded(exc, SELECTION_FLAGS)


def selection_refused(exc: BaseException, code: int) -> int:
    """Print every value of a refused selection (``SelectionError.every``), a line each.

    Returns:
        ``code``, the exit code of the first.
    """
    for each in getattr(exc, "every", (exc,)):
        error(said_of_selection(each))
    return int(code)


_ESCAPED_BYTE = re.compile(r"(?<!\\)((?:\\\\)*)\\udc([89a-f][0-9a-f])")
"""``repr``'s escape of a lone surrogate U+DC80..U+DCFF (``\\udcff``) after an even number of
backslashes (after an odd one it is a backslash the text holds, escaped)."""


def bytes_shown(line: str, escapes: bool = True) -> str:
    r"""``line`` with each byte of a command-line value that was not UTF-8 shown as ``\xNN``.

    An argument or file name that is not UTF-8 reaches Python with each such byte as a lone
    surrogate (``surrogateescape``: byte 0xff is U+DCFF), printed ``\udcff`` both raw and
    through ``repr``; every error line goes through this, so the user reads the byte typed
    (``--channel-visibility 'r\xffn': ...``). REST and MCP do not: their JSON text can hold
    U+DCFF itself. ``escapes=False``: a ``\udcff`` the line spells is kept, for a line that
    quotes a file's own escape rather than a typed value's ``repr`` (:func:`error`).
    """
    raw = "".join(f"\\x{ord(c) - 0xDC00:02x}" if "\udc80" <= c <= "\udcff" else c for c in line)
    return _ESCAPED_BYTE.sub(r"\1\\x\2", raw) if escapes else raw


def error(message: str, quotes_a_file: bool = False) -> None:
    r"""Print ``glossogen: error: <message>`` on stderr, a byte not UTF-8 shown ``\xNN``.

    ``quotes_a_file``: the line gives why a run's file cannot be read (``labels.json is not
    UTF-8 text (it escapes the lone surrogate \udcff)``): that escape is the file's, printed
    as the export's and analysis's notes, REST and MCP print it, never as a byte typed.
    """
    line = bytes_shown(message, escapes=not quotes_a_file)
    print(f"glossogen: error: {line}", file=sys.stderr, flush=True)


def refused(message: str, code: int) -> int:
    """Print ``message`` as the command's one error line (:func:`error`) and return ``code``."""
    error(message)
    return int(code)
