"""What every MCP tool shares: the runs directory, the refusal rule, paging, run folders.

Tools that take the same arguments share one typed value of them, listed flat in each tool's
schema (:func:`flat_arguments`).

A refusal raises ``ToolError`` with the message ``glossogen`` would print after
``glossogen: error:``. Runs are opened through ``RunStore``/``RunFolder`` and read through
``RunView`` (never a new parse of the log).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from mcp.server.mcpserver.exceptions import ToolError

from glossogen.eventlog import (
    RunView,
)
from glossogen.export import log_refused, not_begun_line
from glossogen.refusals import worded
from glossogen.scenario import UnknownScenarioError, load_scenario
from glossogen.scenario._contract import Scenario
from glossogen.storage import CONFIG, RunFolder, RunIdRefused, RunStore, StorageError

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


def refuse(
    exc: BaseException, arguments: Mapping[str, str] | None = None, runs_dir: str = ""
) -> ToolError:
    """The tool error of a library refusal: its first line.

    A refused request value is named as the tool argument that set it, never a CLI flag: each
    tool's argument bears the request field's name (``spend_cap_usd``, ``after_round``) unless
    ``arguments`` names it otherwise (``evaluate_run``'s ``judge_model`` for ``model``).
    ``runs_dir``: the server's runs directory, which the line never names by its path (a run
    folder under it by its run id, ``veyru/1796433857 is a veyru run, not ...``), as the
    reading, scoring and analysis tools' lines (``export.served_line``).
    """
    from glossogen.export._select import served_refusal_line

    if runs_dir.strip():  # a run id the client sent is quoted as sent, never cut
        return ToolError(served_refusal_line(exc, runs_dir, arguments))
    return ToolError((worded(exc, arguments) or type(exc).__name__).splitlines()[0])


F = TypeVar("F", bound=Callable[..., Any])


def _fields(kind: type[Any]) -> list[inspect.Parameter]:
    """The fields of the dataclass ``kind`` as a tool's parameters, each typed, with its default."""
    hints = typing.get_type_hints(kind, include_extras=True)  # Annotated constraints kept
    return [
        inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=f.default,
                          annotation=hints[f.name])
        for f in dataclasses.fields(kind)
    ]  # fmt: skip


def flat_arguments(**values: type[Any]) -> Callable[[F], F]:
    """Let a tool take typed values (dataclasses of tool arguments) whose fields it lists flat.

    Each keyword names a parameter of the tool and the dataclass it takes. The tool's
    signature, which the MCP SDK reads for its schema, lists the dataclass's fields in that
    parameter's place, each with its type and default, so the schema is the one those fields
    written out would give; a call's values of them are gathered into the one value the tool
    gets under the parameter's name. Two tools taking the same arguments share one dataclass.
    """

    def declare(tool: F) -> F:
        spread = {name: _fields(kind) for name, kind in values.items()}
        own = inspect.signature(tool, eval_str=True)
        flat = own.replace(parameters=[
            q for p in own.parameters.values() for q in spread.get(p.name, [p])
        ])  # fmt: skip

        def gathered(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            """The call's arguments bound as the flat signature takes them, the values made."""
            arguments = flat.bind(*args, **kwargs).arguments  # a bad call: Python's TypeError
            for name, kind in values.items():
                given = {p.name: arguments.pop(p.name) for p in spread[name] if p.name in arguments}
                arguments[name] = kind(**given)
            return arguments

        @functools.wraps(tool)
        async def awaited(*args: Any, **kwargs: Any) -> Any:
            return await tool(**gathered(args, kwargs))

        @functools.wraps(tool)
        def called(*args: Any, **kwargs: Any) -> Any:
            return tool(**gathered(args, kwargs))

        flattened: Any = awaited if inspect.iscoroutinefunction(tool) else called
        flattened.__signature__ = flat  # what inspect.signature gives, and the SDK reads
        return cast(F, flattened)

    return declare


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

    def _folder(self, run_id: str, unstarted: bool = False, field: str = "run_id") -> RunFolder:
        """The folder of ``run_id`` (the tool's argument ``field``), refused when it has no log.

        The id is read by the one resolver (:func:`~glossogen.storage.resolve_run_id`): a
        malformed id and a well-shaped one that names no run folder are refused in the words
        of ``stop_run`` and the export (``run_id 'x': not a run id (...)``, ``run ids that no
        longer resolve: ...``). A folder whose log is empty and which no process holds is no
        run's, as a log that is no run's, refused in the listings' words
        (:func:`~glossogen.export.log_refused`). With
        ``unstarted``, a claimed folder (its ``config.json`` written) whose log has not begun
        (:meth:`RunFolder.unbegun`) is returned too.
        """
        try:
            folder = self.store.open_run(run_id, field)
            refused = log_refused(folder)
            if refused is not None:
                raise ToolError(refused)
            if not folder.has_log() and not folder.exists(CONFIG):  # as stop_run says it
                raise RunIdRefused.no_run(run_id)
        except RunIdRefused as exc:
            raise ToolError(str(exc)) from None
        if unstarted and not folder.has_log():
            return folder
        if not folder.has_log():
            raise ToolError(not_begun_line(run_id))
        return folder

    def _view(self, folder: RunFolder) -> RunView:
        try:
            return RunView.load(folder.log_url, live=folder.is_locked())
        except (FileNotFoundError, StorageError) as exc:
            raise refuse(exc) from None
