"""The selection flags of the commands that read a cohort under ``--runs-dir``, spelled once.

``evaluate`` and ``verify`` take the export's selection (``glossogen.export.selection_of``
reads them); these are their typer options, shared so each flag reads the same everywhere.
"""

from __future__ import annotations

import typer

SCENARIO = typer.Option(
    [], "--scenario", metavar="NAME", help="--runs-dir: only these scenarios (repeatable)."
)
LABEL = typer.Option([], "--label", metavar="LABEL", help="--runs-dir: only runs with every label.")
KNOB = typer.Option(
    [], "--knob", metavar="COND", help="--runs-dir: condition <knob><op><value> (repeatable)."
)
STATUS = typer.Option(
    None, "--status", metavar="STATE", help="--runs-dir: only runs in this state."
)
RUN_ID = typer.Option(  # None when not given: an empty list would be refused
    None, "--run-id", metavar="ID", help="--runs-dir: exactly these runs (repeatable)."
)
RUN_ID_CONTAINS = typer.Option(
    None, "--run-id-contains", metavar="SUB", help="--runs-dir: substring of the run id."
)
CONTAINS_AGENT_ID = typer.Option(
    None, "--contains-agent-id", metavar="ID", help="--runs-dir: runs with this agent."
)
