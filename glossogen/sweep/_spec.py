"""The sweep spec: a YAML file naming a scenario, a preset, a grid, trials and a spend cap.

A spec is a pydantic model that refuses unknown keys, so a typo never silently becomes a default.
Relative paths (``runs_dir``, a ``config`` that is a JSON file) resolve against the spec file's
folder, not the working directory.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationError,
    field_validator,
)

from glossogen import exit_codes
from glossogen.refusals import validator_line
from glossogen.strict_yaml import DuplicateKeyError, YamlError, load_yaml

SWEEP_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MODELS_KEY = "models"
"""The grid key whose values are ``{model, provider}`` pairs: each cell's default model."""


class SweepError(Exception):
    """A sweep refused before anything was launched or written.

    ``str()`` is one line; ``exit_code`` is one of ``glossogen.exit_codes`` (65 refused,
    66 unreadable).
    """

    def __init__(self, message: str, exit_code: int = int(exit_codes.REFUSED)) -> None:
        """Keep the one-line ``message`` and the process ``exit_code``."""
        super().__init__(message)
        self.exit_code = exit_code


class ModelChoice(BaseModel):
    """One value of the ``models`` grid axis: every agent's default model and provider."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1)
    provider: str = Field(min_length=1)


class SweepSpec(BaseModel):
    """A sweep: one scenario and preset, a grid of cells, ``trials`` runs per cell, a spend cap.

    Attributes:
        scenario: Installed scenario name.
        config: Preset name (``knobs_default``) or a JSON file (relative to the spec's folder).
        model: Default model of every agent (unless the grid has a ``models`` axis).
        provider: Default provider of every agent (unless the grid has a ``models`` axis).
        runs_dir: Runs directory (local path relative to the spec's folder, or fsspec URL).
        name: Sweep id; defaults to the spec file's name without ``.yaml``.
        knobs: Overrides every cell shares, as ``{dotted_key: value}`` (same keys as
            ``glossogen run``'s ``key=value``, e.g. ``idle_floor_seconds: 0.05``).
        grid: ``{dotted_key: [values]}``; the cells are the cartesian product, in the order
            written. ``models: [{model, provider}, ...]`` varies every agent's default model;
            ``agents.<id>.model: [...]`` (or ``agents.<id>: [{model, provider}, ...]``) varies one
            seat.
        trials: Runs per cell, 1-10.
        spend_cap_usd: Stop launching once spent plus in-flight estimates would pass it (USD).
        pass_threshold: A run passes when it completed and its ``round_success`` (share of
            round verdicts won) is at least this, 0-1 (1.0 = every round won).
        vary_seed: When true, trial ``t`` plays ``seed + t - 1`` (else every trial replays the
            cell's seed, and variation comes from the models alone).
        max_agent_turns: Model requests per agent per run (``--max-turns`` wins over it).
        group_slug: Tenant group that owns the runs.
    """

    model_config = ConfigDict(extra="forbid")

    scenario: str = Field(min_length=1)
    config: str = "knobs_default"
    model: str | None = None
    provider: str | None = None
    runs_dir: str = "./runs"
    name: str | None = None
    knobs: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    # Strict types: YAML's ``true``, ``"1"`` or ``2.0`` is refused rather than read as a number
    # or a flag, and a cap must be finite (``.inf`` would play every run, then fail to save).
    trials: StrictInt = Field(default=1, ge=1, le=10)
    spend_cap_usd: StrictFloat | None = Field(default=None, ge=0, allow_inf_nan=False)
    pass_threshold: StrictFloat = Field(default=1.0, ge=0.0, le=1.0)
    vary_seed: StrictBool = False
    max_agent_turns: StrictInt | None = Field(default=None, ge=1)
    group_slug: str = "local"

    @field_validator("grid")
    @classmethod
    def _axes_not_empty(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for key, values in grid.items():
            if not values:
                raise ValueError(f"grid axis {key!r} has no values")
            seen: list[str] = []
            for value in values:
                text = json.dumps(value, sort_keys=True)
                if text in seen:
                    raise ValueError(
                        f"grid axis {key!r} repeats the value {text}: each cell must be distinct"
                    )
                seen.append(text)
            if key == MODELS_KEY:
                for index, value in enumerate(values):
                    try:
                        ModelChoice.model_validate(value)
                    except ValidationError:
                        raise ValueError(
                            f"grid axis 'models' item {index + 1} must be {{model, provider}} "
                            f"and nothing else, got {value!r}"
                        ) from None
        return grid


def _one_line(exc: ValidationError) -> str:
    """Name every bad key of a spec in one line (unknown keys first, as a group)."""
    unknown = [".".join(map(str, e["loc"])) for e in exc.errors() if e["type"] == "extra_forbidden"]
    if unknown:
        return f"unknown key(s) {', '.join(unknown)}"
    parts = []
    for error in exc.errors():
        where = ".".join(map(str, error["loc"])) or "spec"
        got = "" if error["type"] == "value_error" else f" (got {json.dumps(error['input'])})"
        message = validator_line(error)  # our own text, as written
        parts.append(f"{where}: {message}{got}")
    return "; ".join(parts)


def _resolve(base: Path, value: str) -> str:
    """Resolve a relative local path against ``base``; URLs and absolute paths stay."""
    if "://" in value or os.path.isabs(value):
        return value
    return str((base / value).resolve())


def load_spec(path: str | os.PathLike[str]) -> tuple[SweepSpec, str]:
    """Read and validate a sweep spec; return it with paths resolved, and its sweep id.

    ``runs_dir`` and a ``config`` ending in ``.json`` are resolved against the spec file's
    folder. The sweep id is ``name``, else the file name without its extension.

    Args:
        path: The spec file (YAML).

    Returns:
        ``(spec, sweep_id)``.

    Raises:
        SweepError: 66 when the file cannot be read; 65 when it is not YAML, names a key
            twice in one mapping (the line of each), is not a mapping, names unknown keys (all
            named in one line), has a value out of bounds (``trials`` outside 1-10), lacks
            ``model``/``provider`` with no ``models`` axis, or gives an invalid ``name``.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise SweepError(
            f"sweep spec {str(path)!r} cannot be read: {reason}", int(exit_codes.UNREADABLE)
        ) from None
    try:
        raw = load_yaml(text)
    except DuplicateKeyError as exc:
        raise SweepError(f"sweep spec {str(path)!r}: {exc}") from None
    except YamlError as exc:
        raise SweepError(f"sweep spec {str(path)!r} is not YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise SweepError(f"sweep spec {str(path)!r} is not a mapping of keys to values")
    try:
        spec = SweepSpec.model_validate(raw)
    except ValidationError as exc:
        raise SweepError(f"sweep spec {str(path)!r}: {_one_line(exc)}") from None
    if MODELS_KEY not in spec.grid and not (spec.model and spec.provider):
        raise SweepError(
            f"sweep spec {str(path)!r}: give model and provider, or a grid axis "
            "'models: [{model, provider}, ...]'"
        )
    base = file.resolve().parent
    updates: dict[str, Any] = {"runs_dir": _resolve(base, spec.runs_dir)}
    if spec.config.endswith(".json"):
        updates["config"] = _resolve(base, spec.config)
    sweep_id = file.name.rsplit(".", 1)[0] if spec.name is None else spec.name  # '' is refused
    if not SWEEP_ID.fullmatch(sweep_id):
        raise SweepError(
            f"sweep spec {str(path)!r}: sweep name {sweep_id!r}: use 1-64 of letters, digits, "
            "'.', '-' and '_' (set 'name:')"
        )
    return spec.model_copy(update=updates), sweep_id
