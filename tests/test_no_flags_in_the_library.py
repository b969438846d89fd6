"""The library never spells a command-line flag: each surface words a refusal its own way.

Read from the source (``ast``): every string in ``glossogen/`` outside ``glossogen/cli/``, and
in ``flows/``, ``tasks/``, ``orchestration/`` and ``scenarios/``, docstrings aside, is searched
for ``--flag``. A command line told to the user (``glossogen run ... --resume``, ``uv sync
--extra local``) is a command, not a flag naming a request value: each is listed in
``COMMAND_LINES`` with why, never let through unseen.
What is left is listed below as known debt (issue 32): the list may only shrink; a flag spelled
on purpose (a command's argv, a page saying a command's line) is listed apart with why.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
RUN_COMMANDS = {"--max-agent-turns", "--spend-cap-usd", "--run-timeout", "--after-round",
                "--rounds-after"}  # fmt: skip
"""The run commands' flags issue 32 names: never outside the CLI, without exception."""

NOT_YET_WORDED: set[tuple[str, str]] = set()
"""Flags still spelled in library strings, each to become a typed refusal the CLI words."""

COMMAND_LINES = {
    ("glossogen/launch/_control.py", "--resume"):
        "the argv of a detached `glossogen run <scenario> --resume <folder>`: the library starts "
        "the CLI's own command (the same in every surface), it words no refusal",
    ("glossogen/server/_live_routes.py", "--resume"):
        "the page's Stop says how to resume as `glossogen stop` says it: the command its reader "
        "types in a shell (MCP's stop_run names its resume_run tool instead)",
    ("glossogen/server/_pages.py", "--knob"):
        "the run list page says a refused filter in the line `glossogen export` prints for the "
        "same filters (its filters are the export's; tests/server/test_browser_ui.py)",
    ("glossogen/server/_pages.py", "--status"):
        "the same: the run list's `status` filter, said as the export's line",
    ("glossogen/server/_pages.py", "--scenario"):
        "the same: a run list filter whose address holds a byte that is not UTF-8 is refused in "
        "the export's line for the same filter (`--scenario '\\xff': not UTF-8 text`)",
    ("glossogen/server/_pages.py", "--label"): "the same, the list's `label` filter",
    ("glossogen/server/_pages.py", "--run-id-contains"): "the same, the list's `run_id` filter",
    ("glossogen/server/_export_routes.py", "--max-runs"):
        "REST's run ceiling is the server's own (no request field to name), so its refusal points "
        "to the command with no such ceiling: `glossogen export --max-runs`, typed in a shell",
    ("glossogen/mcp/_server.py", "--resume"):
        "resume_run's tool description says it takes what `glossogen run --resume` takes: the "
        "command it mirrors, named for a reader who knows the CLI; its arguments are the tool's",
    ("glossogen/local_llm.py", "--extra"):
        "the install hint `uv sync --extra local`: uv's flag, typed to install the `local` extra "
        "(no glossogen flag, no request value)",
}  # fmt: skip
"""Flags a string spells on purpose, not a refusal to word: each with why (a surface's own
wording of a command, or the argv of one), the same whichever surface asked."""


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of every docstring node (module, class, function and attribute docstrings)."""
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            found.add(id(node.value))
    return found


def flags_spelled(every_string: bool = False) -> set[tuple[str, str]]:
    """(file, flag) for each flag a non-docstring string of the library spells (``glossogen/``
    outside ``cli/``, and the flows, tasks, orchestration and scenarios beside it).

    ``every_string``: docstrings too (a string that names a flag at all).
    """
    found = set()
    folders = ("glossogen", "flows", "tasks", "orchestration", "scenarios")
    for path in sorted(p for folder in folders for p in (REPO / folder).rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("glossogen/cli/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = set() if every_string else _docstrings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            if id(node) in docs:
                continue
            found.update((rel, flag) for flag in FLAG.findall(node.value))
    return found


def test_no_library_string_spells_a_run_command_flag() -> None:
    """Without exception (issue 32's "Done when"): no docstring, no command line either."""
    spelled = flags_spelled(every_string=True)
    assert {(f, flag) for f, flag in spelled if flag in RUN_COMMANDS} == set()


def test_the_library_spells_no_flag_beyond_the_known_ones() -> None:
    """A flag added to a library message fails here; one worded away must leave the list."""
    assert flags_spelled() == NOT_YET_WORDED | set(COMMAND_LINES)
