"""The ``glossogen`` command line: a typer app, one command per module, no business logic.

Exit codes follow ``glossogen.exit_codes``; typer's usage errors (click's exit 2) become 64.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from typing import Any

import typer
from typer import _click  # typer's vendored click: the types TyperGroup's methods take
from typer.core import TyperGroup
from typer.exceptions import TyperException

from glossogen import exit_codes
from glossogen.cli._refusals import FLAGS, error
from glossogen.cli._startup import loading_modules
from glossogen.launch import answer_ctrl_c


@dataclass(frozen=True)
class _Command:
    """Where a command lives, and its one-line help for ``glossogen --help``."""

    module: str
    attribute: str
    help: str
    group: bool = False
    context_settings: dict[str, Any] = field(default_factory=dict)


# Commands are imported only when invoked (DESIGN §11: heavy imports inside the factory), so
# `glossogen export` never pays for pydantic-ai or Prefect and `glossogen --help` stays fast.
_COMMANDS: dict[str, _Command] = {
    "run": _Command("run", "run", "Play a scenario for its rounds (or --resume one in place).",
                    context_settings={"allow_interspersed_args": True}),
    "schema": _Command("schema", "schema", "Print a scenario's knobs as JSON Schema."),
    "scenarios": _Command("scenarios", "scenarios", "List installed scenarios and presets."),
    "new-scenario": _Command("authoring", "new_scenario",
                             "Write a scenario package of your own that plays offline."),
    "check-scenario": _Command("authoring", "check_scenario",
                               "Check a scenario before a run spends money."),
    "fork-at-round": _Command("derived", "fork_at_round",
                              "Copy rounds 1..N of a run into a new run and play on."),
    "replace-agent": _Command("derived", "replace_agent",
                              "Fork a run with another model in one seat."),
    "cross-run-replace-agent": _Command(
        "derived", "cross_run_replace_agent",
        "Fork a run with one seat taken over by an agent from a donor run."),
    "evaluate": _Command("evaluate", "evaluate", "Score a finished run into its report."),
    "export": _Command("export", "export", "Export runs as CSV tables and/or a raw zip."),
    "analyze": _Command("analyze", "analyze",
                        "Answer a grouped question over runs, with n, missing and intervals."),
    "verify": _Command("verify", "verify", "Check that runs' books balance (exit 1 if not)."),
    "replay": _Command("replay", "replay",
                       "Play a run again from its log, no provider; exit 1 if it diverges."),
    "rejudge": _Command("rejudge", "rejudge",
                        "Re-judge a cohort's rulings with a new judge; report the flips."),
    "serve": _Command("serve", "serve",
                      "Serve the run browser (/), the REST export endpoints and MCP at /mcp."),
    "mcp": _Command("mcp", "mcp", "Serve the MCP tools over stdio."),
    "stop": _Command("stop", "stop", "End a live run 'interrupted' (resumable)."),
    "sweep": _Command("sweep", "sweep", "Launch the runs of a sweep spec (cells x trials)."),
    "deploy": _Command("deploy", "deploy", "Register the Prefect deployments of prefect.yaml."),
    "pools": _Command("pools", "pools", "Create work pools and concurrency limits.", group=True),
}  # fmt: skip


class _LazyGroup(TyperGroup):
    """A click group that imports a command's module only when that command is used."""

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return list(_COMMANDS)

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        spec = _COMMANDS.get(cmd_name)
        if spec is None:
            return None
        with loading_modules():
            module = importlib.import_module(f"glossogen.cli.{spec.module}")
        target = getattr(module, spec.attribute)
        command: _click.Command
        if spec.group:
            command = typer.main.get_group(target)
        else:
            single = typer.Typer(
                add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
            )
            single.command(cmd_name, context_settings=spec.context_settings)(target)
            command = typer.main.get_command(single)
        command.name = cmd_name
        return command

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        rows = [(name, spec.help) for name, spec in _COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


app = typer.Typer(
    name="glossogen",
    cls=_LazyGroup,
    rich_markup_mode=None,  # click formatting: rich help would import every command
    help="Study how LLM agents communicate when they must: play scenarios, read their event logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(asked: bool) -> None:
    """Print ``glossogen <version>`` (the installed distribution's) and exit 0."""
    if asked:
        from importlib.metadata import version

        print(f"glossogen {version('glossogen')}")
        raise typer.Exit(0)


@app.callback()
def _root(
    _: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Study how LLM agents communicate when they must: play scenarios, read their event logs."""


EXIT_USAGE = int(exit_codes.USAGE)
EXIT_INTERRUPTED = int(exit_codes.INTERRUPTED)


def _typed_value(exc: BaseException, argv: list[str]) -> tuple[str, str] | None:
    """The option a usage error is about and the value the user typed for it, if it names one."""
    options = getattr(getattr(exc, "param", None), "opts", None) or []
    for index, token in enumerate(argv):
        for option in options:
            if token == option and index + 1 < len(argv):
                return option, argv[index + 1]
            if token.startswith(f"{option}="):
                return option, token[len(option) + 1 :]
    return None


def _taken_as_value(exc: BaseException, argv: list[str]) -> str | None:
    """The line for an option click calls missing although the user typed it.

    The option before it took it as its value (``--source-run-dir --after-round 2``): that one
    is named, as the flag left without a value.
    """
    options = getattr(getattr(exc, "param", None), "opts", None) or []
    for index, token in enumerate(argv[1:], start=1):
        if token in options and argv[index - 1].startswith("-"):
            before = argv[index - 1]
            return f"{before} has no value: it took the flag {token!r} as its value"
    return None


def _usage_line(exc: TyperException, argv: list[str]) -> str:
    r"""Click's usage error in one line: the value typed named, or the flag left without one.

    A value holding a byte that is not UTF-8 (``--limit $'\xff'``) is named as the options
    that take text refuse it (``--limit '\xff': not UTF-8 text``), not by the parser's
    wording of a string it could not read; typer's type errors omit the value typed.
    """
    from typer._click.exceptions import MissingParameter

    from glossogen.refusals import shown

    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    if isinstance(exc, MissingParameter):  # nothing was typed for it: no value to name
        return _taken_as_value(exc, argv) or message
    found = _typed_value(exc, argv)
    if found is None:
        return message
    option, typed = found
    try:
        typed.encode("utf-8")
    except UnicodeEncodeError:
        return f"{option} {shown(typed)}: not UTF-8 text"
    return message if repr(typed) in message else f"{message}: got {typed!r}"


PATH_OPTIONS = {
    "--runs-dir": "runs_dir",
    "--run-dir": "run_dir",
    "--judge-cache": "judge_cache",
    "--source-run-dir": "source_run_dir",
    "--donor-run-dir": "donor_run_dir",
}
"""The path options every command refuses up front when not UTF-8 text, and their fields
(``evaluate --run-dir`` as ``--runs-dir``: no report is written under a name no answer holds;
a derived run's ``--source-run-dir`` and ``--donor-run-dir`` alike, before any folder is
claimed)."""


def _path_not_text(args: list[str]) -> str | None:
    """Refuse a path option (:data:`PATH_OPTIONS`) not UTF-8 text, before any command starts.

    The check is the library's (:func:`glossogen.refusals.path_not_text`, which replay asks
    too of its runs folder), worded with the flag; here only each value is found in ``args``.
    """
    from glossogen.refusals import path_not_text

    for index, arg in enumerate(args):
        for option, name in PATH_OPTIONS.items():
            value = args[index + 1] if arg == option and index + 1 < len(args) else None
            if arg.startswith(f"{option}="):
                value = arg.removeprefix(f"{option}=")
            refusal = None if value is None else path_not_text(name, value)
            if refusal is not None:
                return refusal.worded(FLAGS)
    return None


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with a DESIGN §9 code (never click's 2)."""
    answer_ctrl_c()
    refused = _path_not_text(sys.argv[1:] if argv is None else argv)
    if refused is not None:  # before any command reads or writes
        error(refused)
        sys.exit(EXIT_USAGE)
    try:
        code = app(args=argv, standalone_mode=False, prog_name="glossogen")
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(EXIT_INTERRUPTED)
    except TyperException as exc:  # typer's vendored click usage errors (its exit 2)
        error(_usage_line(exc, sys.argv[1:] if argv is None else argv))
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(code if isinstance(code, int) else 0)
