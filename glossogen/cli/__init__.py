"""The ``glossogen`` command line: a typer app, one command per module, no business logic.

Exit codes follow DESIGN.md §9; typer's usage errors (click's exit 2) become 64.
"""

from __future__ import annotations

import sys

import typer
from typer.exceptions import TyperException

from glossogen import exit_codes
from glossogen.cli import deploy, derived, pools, run, scenarios, schema, serve, sweep
from glossogen.cli import evaluate as evaluate_command
from glossogen.cli import export as export_command

app = typer.Typer(
    name="glossogen",
    help="Study how LLM agents communicate when they must: play scenarios, read their event logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("run", context_settings={"allow_interspersed_args": True})(run.run)
app.command("schema")(schema.schema)
app.command("scenarios")(scenarios.scenarios)
app.command("fork-at-round")(derived.fork_at_round)
app.command("replace-agent")(derived.replace_agent)
app.command("cross-run-replace-agent")(derived.cross_run_replace_agent)
app.command("sweep")(sweep.sweep)
app.command("deploy")(deploy.deploy)
app.add_typer(pools.pools, name="pools")
app.command("serve")(serve.serve)
app.command("export")(export_command.export)
app.command("evaluate")(evaluate_command.evaluate)

EXIT_USAGE = int(exit_codes.USAGE)
EXIT_INTERRUPTED = int(exit_codes.INTERRUPTED)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with a DESIGN §9 code (never click's 2)."""
    try:
        code = app(args=argv, standalone_mode=False, prog_name="glossogen")
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(EXIT_INTERRUPTED)
    except TyperException as exc:  # typer's vendored click usage errors (its exit 2)
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        print(f"glossogen: error: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(code if isinstance(code, int) else 0)
