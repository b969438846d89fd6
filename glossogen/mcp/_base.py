"""What every MCP tool shares: the runs directory, the refusal rule, paging, run folders.

A refusal raises ``ToolError`` with the message ``glossogen`` would print after
``glossogen: error:``. Runs are opened through ``RunStore``/``RunFolder`` and read through
``RunView`` (never a new parse of the log).
"""

from __future__ import annotations

from collections.abc import Mapping

from mcp.server.mcpserver.exceptions import ToolError

from glossogen.eventlog import (
    RunView,
)
from glossogen.export import SERVED_RUNS_DIR
from glossogen.refusals import worded
from glossogen.scenario import UnknownScenarioError, load_scenario
from glossogen.scenario._contract import Scenario
from glossogen.storage import CONFIG, RunFolder, RunStore, StorageError

PAGE_SIZE = 50
"""Rows per page of ``list_runs`` and ``read_run_events`` when the caller names none."""

MAX_PAGE_SIZE = 500
"""The most rows one page returns."""

TEXT_CHARS = 200
"""Characters of one text an event row keeps (nested ones too) unless the caller asks otherwise."""

LIST_ITEMS = 10
"""Items of one list an event row keeps (a history's messages, a message's parts)."""

PAGE_CHARS = 16_000
"""Characters of JSON one ``read_run_events`` page holds at most (about 4,000 tokens): a page
ends before the row that would pass it (a page holds at least one row)."""


def refuse(exc: BaseException, arguments: Mapping[str, str] | None = None) -> ToolError:
    """The tool error of a library refusal: its first line.

    A refused request value is named as the tool argument that set it, never a CLI flag: each
    tool's argument bears the request field's name (``spend_cap_usd``, ``after_round``) unless
    ``arguments`` names it otherwise (``evaluate_run``'s ``judge_model`` for ``model``).
    """
    text = worded(exc, arguments) or type(exc).__name__
    return ToolError(text.splitlines()[0])


def scenario_class(name: str) -> type[Scenario]:
    """The installed scenario ``name``; an unknown one is refused in the CLI's line."""
    try:
        return load_scenario(name)
    except UnknownScenarioError as exc:
        raise refuse(exc) from None


def cursor_offset(cursor: str | None, what: str) -> int:
    """The row a page starts at: 0 without a cursor, else the cursor this server returned.

    Raises:
        ToolError: a cursor that is not a row number (one line naming it and the tool).
    """
    if not cursor:
        return 0
    if not cursor.isdigit():
        raise ToolError(f"cursor {cursor!r} is not one this server returned for {what}")
    return int(cursor)


def checked_page_size(size: int | None) -> int:
    """Rows per page: :data:`PAGE_SIZE` when not given.

    Raises:
        ToolError: a size outside 1..:data:`MAX_PAGE_SIZE`.
    """
    size = PAGE_SIZE if size is None else size
    if not 1 <= size <= MAX_PAGE_SIZE:
        raise ToolError(f"page_size must be 1..{MAX_PAGE_SIZE}, got {size}")
    return size


class ToolBase:
    """The runs directory (local folder or ``s3://`` URL) the tools serve, and its folders."""

    def __init__(self, runs_dir: str) -> None:
        """Serve ``runs_dir``."""
        self.runs_dir = runs_dir
        self.store = RunStore(runs_dir)

    def _folder(self, run_id: str, unstarted: bool = False) -> RunFolder:
        """The folder of ``run_id``, refused when it has no log.

        With ``unstarted``, a claimed folder (its ``config.json`` written) whose log has not
        begun is returned too.
        """
        try:
            folder = self.store.open_run(run_id)
        except ValueError as exc:
            raise refuse(exc) from None
        if unstarted and not folder.has_log() and folder.exists(CONFIG):
            return folder
        if not folder.has_log():
            raise ToolError(f"run {run_id!r} has no event log in {SERVED_RUNS_DIR}")
        return folder

    def _view(self, folder: RunFolder) -> RunView:
        try:
            return RunView.load(folder.log_url, live=folder.is_locked())
        except (FileNotFoundError, StorageError) as exc:
            raise refuse(exc) from None
