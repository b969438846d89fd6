"""``glossogen schema <scenario>``: print a scenario's knobs as JSON Schema."""

from __future__ import annotations

import json
import sys

import typer

from glossogen.knobs import knobs_json_schema
from glossogen.scenario import UnknownScenarioError, load_scenario


def schema(scenario: str = typer.Argument(..., help="Installed scenario name.")) -> int:
    """Print the JSON Schema of SCENARIO's knobs (shared knobs included)."""
    try:
        cls = load_scenario(scenario)
    except UnknownScenarioError as exc:
        print(f"glossogen: error: {exc}", file=sys.stderr)
        return 64
    print(json.dumps(knobs_json_schema(cls.knobs_model), indent=2))
    return 0
