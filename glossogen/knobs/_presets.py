"""The base config of a run: a preset the scenario ships, or a JSON file of the user's own.

A scenario's presets are the ``knobs_*.json`` files in its folder; ``--config`` names one by
its file name without ``.json`` (``knobs_default``), which works from a checkout and from an
installed package alike. A path wins when the argument is an existing file.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

from glossogen.knobs._errors import EXIT_UNREADABLE, ConfigError

PRESET_GLOB = "knobs_*.json"
"""File names a scenario's presets match."""


def list_presets(presets_dir: Path) -> list[str]:
    """List the preset names a scenario ships, sorted.

    Args:
        presets_dir: The scenario's folder holding its ``knobs_*.json`` files.

    Returns:
        Preset names, each a file name without ``.json`` (``["knobs_default", ...]``); empty
        when the folder does not exist.
    """
    if not presets_dir.is_dir():
        return []
    return sorted(path.stem for path in presets_dir.glob(PRESET_GLOB) if path.is_file())


def _looks_like_path(config: str) -> bool:
    separators = [sep for sep in ("/", os.sep, os.altsep) if sep]
    return config.endswith(".json") or any(sep in config for sep in separators)


def _read_object(path: Path, described: str) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{described} is not UTF-8 text: {exc.reason}") from exc
    except OSError as exc:
        raise ConfigError(
            f"{described} cannot be read: {exc.strerror or exc}", exit_code=EXIT_UNREADABLE
        ) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{described} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{described} must hold a JSON object, not {type(data).__name__}")
    return data


def _unknown_preset(config: str, presets: list[str]) -> ConfigError:
    close = difflib.get_close_matches(config, presets, n=1)
    hint = f", did you mean '{close[0]}'?" if close else ""
    available = ", ".join(presets) or "none"
    return ConfigError(f"unknown preset '{config}'{hint} (available: {available})")


def load_config(config: str, presets_dir: Path) -> tuple[dict[str, Any], str]:
    """Read the base config ``--config`` names: an existing JSON file, else a preset.

    An argument that is an existing file is read as a path, even when a preset has the same
    name. Otherwise an argument that looks like a path (holds a path separator or ends in
    ``.json``) must exist, and anything else is a preset name.

    Args:
        config: The ``--config`` argument: a preset name without ``.json`` (``knobs_default``)
            or a path to a JSON file.
        presets_dir: The scenario's folder holding its ``knobs_*.json`` presets.

    Returns:
        The config as a dict, and a description for the launch log: ``preset 'knobs_default'``
        or ``file '/abs/path.json'``.

    Raises:
        ConfigError: (66) the argument looks like a path and no file is there, or the file
            cannot be read; (65) no preset has that name (the message lists those available),
            the file is not UTF-8 or not valid JSON (the message gives line and column), or its
            JSON is not an object.
    """
    path = Path(config).expanduser()
    if path.is_file():
        described = f"file '{path.resolve()}'"
        return _read_object(path, f"config {described}"), described
    if _looks_like_path(config):
        reason = "is not a file" if path.exists() else "does not exist"
        raise ConfigError(f"config file '{path.absolute()}' {reason}", exit_code=EXIT_UNREADABLE)
    presets = list_presets(presets_dir)
    if config not in presets:
        raise _unknown_preset(config, presets)
    preset_path = presets_dir / f"{config}.json"
    data = _read_object(preset_path, f"preset '{config}' ({preset_path})")
    return data, f"preset '{config}'"
