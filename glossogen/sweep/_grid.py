"""Grid expansion: a spec's cells, their stable ids, and the run request of each (cell, trial).

A cell is one point of the grid: a default model and provider plus ``key=value`` overrides. Its
id is a hash of exactly those, so adding an axis value later keeps the ids (and the runs) of the
cells that were already there. Every run a sweep launches carries labels (``sweep``, ``cell``,
``trial``, ``epoch``, ``part``) in its knobs, so ``labels.json`` and the event log say which
(cell, trial) it measures: the runs folder is the sweep's ledger.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from glossogen.sweep._spec import MODELS_KEY, SweepSpec

Part = Literal["main", "qualification", "stability"]
"""What a run is for: a trial of the census, a qualification probe, or a stability re-sample."""


@dataclass(frozen=True)
class Cell:
    """One point of the grid.

    Attributes:
        cell_id: ``c`` + 8 hex digits of the SHA-256 of the cell's model, provider and overrides.
        index: Position in the grid (0-based, axes in the order written, last axis fastest).
        params: The grid values that define the cell, ``{axis: value}``.
        model: Default model of every agent.
        provider: Default provider of every agent (the deployment the cell runs on).
        overrides: ``key=value`` overrides: the spec's ``knobs`` then the grid's values.
    """

    cell_id: str
    index: int
    params: dict[str, Any]
    model: str
    provider: str
    overrides: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class TrialKey:
    """One planned run: a cell's ``trial`` (1-based) of a ``part`` of the sweep."""

    cell_id: str
    trial: int
    part: Part = "main"

    def label(self) -> str:
        """``<cell>/<trial>`` (``<cell>/<trial>/<part>`` outside the census)."""
        base = f"{self.cell_id}/{self.trial}"
        return base if self.part == "main" else f"{base}/{self.part}"


def _override(key: str, value: Any) -> str:
    """Render ``key=value`` so that the knob parser reads ``value`` back exactly (JSON)."""
    return f"{key}={json.dumps(value, separators=(',', ':'), sort_keys=True)}"


def _axis_overrides(key: str, value: Any) -> list[str]:
    """The overrides one axis value stands for (``agents.<id>: {model, provider}`` expands)."""
    parts = key.split(".")
    if len(parts) == 2 and parts[0] == "agents" and isinstance(value, dict):
        return [_override(f"{key}.{name}", v) for name, v in sorted(value.items())]
    return [_override(key, value)]


def expand_grid(spec: SweepSpec) -> list[Cell]:
    """Return the cells of ``spec``: the cartesian product of its grid axes, in order.

    An empty grid is one cell. The ``models`` axis sets each cell's default model and provider;
    every other axis is a knob override (dotted keys as in ``glossogen run``).

    Returns:
        The cells, one per combination, ids unique.
    """
    axes = list(spec.grid.items())
    shared = [_override(k, v) for k, v in spec.knobs.items()]
    cells = []
    for index, combo in enumerate(itertools.product(*(values for _, values in axes))):
        params = {key: value for (key, _), value in zip(axes, combo, strict=True)}
        model, provider = spec.model or "", spec.provider or ""
        overrides = list(shared)
        for key, value in params.items():
            if key == MODELS_KEY:
                model, provider = value["model"], value["provider"]
            else:
                overrides += _axis_overrides(key, value)
        identity = json.dumps([model, provider, overrides], separators=(",", ":"))
        cell_id = "c" + hashlib.sha256(identity.encode()).hexdigest()[:8]
        cells.append(Cell(cell_id, index, params, model, provider, tuple(overrides)))
    return cells


def trial_labels(sweep_id: str, key: TrialKey, epoch: int) -> dict[str, str]:
    """The labels a run of ``key`` carries (all strings, as ``labels.json`` holds them)."""
    return {
        "sweep": sweep_id,
        "cell": key.cell_id,
        "trial": str(key.trial),
        "epoch": str(epoch),
        "part": key.part,
    }


def trial_overrides(
    cell: Cell, sweep_id: str, key: TrialKey, epoch: int, seed: int | None
) -> list[str]:
    """The cell's overrides, then ``seed`` (when trials vary it), then the sweep's labels."""
    overrides = list(cell.overrides)
    if seed is not None:
        overrides.append(_override("seed", seed))
    overrides += [
        _override(f"labels.{name}", value)
        for name, value in trial_labels(sweep_id, key, epoch).items()
    ]
    return overrides


def idempotency_key(
    sweep_id: str, key: TrialKey, epoch: int, relaunch: int = 0, nonce: str | None = None
) -> str:
    """The Prefect idempotency key of one launch: ``<sweep id>/<cell>/<trial>@<nonce>``.

    ``epoch`` (bumped by ``--replace``), the part and ``relaunch`` (runs of this trial that
    were interrupted before) are appended when not the first, so a replaced or interrupted
    trial gets a fresh flow run while a duplicate launch of the same one never does.
    ``nonce`` is the trial's claim's (``glossogen.sweep._claim``): without it, a spec of the
    same name in another runs folder, or the same spec after its runs folder was deleted, got
    the old flow run back and played nothing.
    """
    text = f"{sweep_id}/{key.cell_id}/{key.trial}"
    if key.part != "main":
        text += f"/{key.part}"
    if epoch > 1:
        text += f"/e{epoch}"
    if relaunch:
        text += f"/r{relaunch}"
    if nonce:
        text += f"@{nonce}"
    return text
