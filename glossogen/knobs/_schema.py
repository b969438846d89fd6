"""What a scenario publishes about its knobs, and what a run records of them."""

from __future__ import annotations

from typing import Any

from glossogen.knobs._base import BaseKnobs


def knobs_json_schema(knobs_model: type[BaseKnobs]) -> dict[str, Any]:
    """Return the JSON Schema of a scenario's knobs, as the web UI and MCP tools read it.

    Args:
        knobs_model: The scenario's knobs model, a :class:`BaseKnobs` subclass.

    Returns:
        pydantic's validation-mode JSON Schema, whose ``title`` is the model's title (its class
        name unless its config names another) and whose fields carry their bounds, choices,
        defaults and descriptions.
    """
    schema = knobs_model.model_json_schema()
    schema["title"] = knobs_model.model_config.get("title") or knobs_model.__name__
    return schema


def knobs_to_config(knobs: BaseKnobs) -> dict[str, Any]:
    """Return resolved knobs as a JSON-able dict, every knob included, defaults too.

    This is what ``config.json`` and ``simulation_started.scenario_config`` record; validating
    it with the same knobs model gives the same knobs back.

    Args:
        knobs: The resolved knobs.

    Returns:
        The knobs dumped in pydantic's ``json`` mode.
    """
    return knobs.model_dump(mode="json")
