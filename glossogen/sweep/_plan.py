"""A sweep plan: the spec's cells validated as runs, their estimates, and each trial's request.

A sweep is asked for once, as a :class:`SweepRequest` (the spec file and the launch options),
and planned once, by :func:`prepare_sweep`, into a :class:`SweepPlan` the sweep flow takes
whole; each trial takes its part of it (:meth:`SweepPlan.request`, planned as a run once, by
the trial's :class:`~glossogen.sweep.Launch`). Planning runs every check ``glossogen run``
makes, for every cell, before anything is claimed, launched or written: a bad cell refuses the
whole sweep with one line naming it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from glossogen import exit_codes
from glossogen.launch import (
    LaunchError,
    LeastRequest,
    RunConfig,
    RunRequest,
    check_credentials,
    check_model_settings,
    check_runs_dir,
    least_request,
    plan_run,
)
from glossogen.storage import lease_seconds
from glossogen.sweep._grid import Cell, TrialKey, expand_grid, trial_overrides
from glossogen.sweep._spec import SweepError, SweepSpec, load_spec
from glossogen.sweep._spend import RunEstimate, estimate_run

QUALIFICATION_ROUNDS = 1
"""Rounds of a qualification run, unless the spec sets ``round_count`` (knobs or grid)."""
QUALIFICATION_TURNS = 20
"""Model requests per agent in a qualification run, unless ``--max-turns`` or the spec sets it."""
QUALIFICATION_TIMEOUT_SECONDS = 300.0
"""Wall-clock limit of a qualification run, unless the launch's ``run_timeout_seconds`` sets one."""
DEFAULT_MAX_AGENT_TURNS = 200
"""``glossogen run``'s default ``max_agent_turns``."""

StabilityRetry = Literal["judge_replay", "agent_rerun"]


class SweepOptions(BaseModel):
    """The command-line options of one sweep launch (the ``sweep`` flow's parameters).

    Attributes:
        replace: Start a new epoch: relaunch every trial, ignoring earlier runs of the sweep.
        concurrency: Runs in flight at once (in-process), or launches outstanding (deployments).
        run_timeout_seconds: Wall-clock limit per run; a run out of time ends between rounds,
            ``incomplete``.
        max_turns: ``max_agent_turns`` of every run (wins over the spec's).
        qualification: Play one short run per distinct model set first; stop on a failure.
        stability_retry: Second sample of each failed trial (``judge_replay`` or
            ``agent_rerun``), or None.
    """

    replace: bool = False
    concurrency: int = Field(default=4, ge=1)
    run_timeout_seconds: float | None = Field(default=None, gt=0)
    max_turns: int | None = Field(default=None, ge=1)
    qualification: bool = False
    stability_retry: StabilityRetry | None = None


class SweepRequest(SweepOptions):
    """One launch of a sweep: the spec file and the options (``glossogen sweep``'s flags).

    Attributes:
        spec_path: The sweep spec (YAML), as given.
    """

    spec_path: str


@dataclass(frozen=True)
class CellPlan:
    """A cell with its validated run plan (trial 1) and its estimate per run.

    ``least`` is the least worst case one of its runs' requests reserves against a hard cap
    (:func:`glossogen.launch.least_request`; None without a sweep cap, or nothing billed): a
    trial whose share of the sweep's cap is below it is not launched.
    """

    cell: Cell
    plan: RunConfig
    estimate: RunEstimate
    least: LeastRequest | None = None


@dataclass
class SweepPlan:
    """Everything a sweep will launch, checked.

    Attributes:
        sweep_id: The sweep's id (spec ``name`` or file stem).
        spec: The spec, paths resolved.
        spec_path: The spec file as given.
        options: The launch options.
        cells: The cells in grid order.
    """

    sweep_id: str
    spec: SweepSpec
    spec_path: str
    options: SweepOptions
    cells: list[CellPlan] = field(default_factory=list)

    def cell(self, cell_id: str) -> CellPlan:
        """Return the cell plan of ``cell_id``.

        Raises:
            KeyError: no such cell.
        """
        return next(c for c in self.cells if c.cell.cell_id == cell_id)

    def main_keys(self) -> list[TrialKey]:
        """Every (cell, trial) of the census, trial-major (all cells' trial 1 first)."""
        return [
            TrialKey(c.cell.cell_id, t) for t in range(1, self.spec.trials + 1) for c in self.cells
        ]

    def qualification_keys(self) -> list[TrialKey]:
        """One qualification run per distinct set of seats (first cell in grid order)."""
        seen: set[str] = set()
        keys = []
        for c in self.cells:
            seats = json.dumps(sorted((s.agent_id, s.provider, s.model) for s in c.plan.seats))
            if seats not in seen:
                seen.add(seats)
                keys.append(TrialKey(c.cell.cell_id, 1, "qualification"))
        return keys

    def request(self, key: TrialKey, epoch: int) -> RunRequest:
        """The run request of ``key``: the cell's overrides, its seed, the sweep's labels.

        Qualification runs get short budgets (:data:`QUALIFICATION_ROUNDS`,
        :data:`QUALIFICATION_TURNS`, :data:`QUALIFICATION_TIMEOUT_SECONDS`) except where the
        user set that budget: the spec's ``round_count`` (knobs or grid), ``--max-turns`` or
        the spec's ``max_agent_turns``, ``run_timeout_seconds``.
        """
        cell_plan = self.cell(key.cell_id)
        cell, spec, options = cell_plan.cell, self.spec, self.options
        seed = int(cell_plan.plan.knobs.seed) + key.trial - 1 if spec.vary_seed else None
        overrides = trial_overrides(cell, self.sweep_id, key, epoch, seed)
        max_turns = options.max_turns or spec.max_agent_turns
        timeout = options.run_timeout_seconds
        if key.part == "qualification":
            user_rounds = "round_count" in spec.knobs or "round_count" in spec.grid
            if not user_rounds and not cell_plan.plan.knobs.scheduled_events:
                overrides.append(f"round_count={QUALIFICATION_ROUNDS}")
            max_turns = max_turns or QUALIFICATION_TURNS
            timeout = timeout or QUALIFICATION_TIMEOUT_SECONDS
        return RunRequest(
            scenario=spec.scenario,
            model=cell.model,
            provider=cell.provider,
            runs_dir=spec.runs_dir,
            config=spec.config,
            overrides=overrides,
            max_agent_turns=max_turns or DEFAULT_MAX_AGENT_TURNS,
            group_slug=spec.group_slug,
            run_timeout_seconds=timeout,
        )


def _probe_runs_dir(runs_dir: str) -> None:
    """Create a missing local runs folder (parents too) and remove it again, or refuse.

    ``check_runs_dir`` only asks whether the nearest existing parent is writable, which a
    pseudo file system such as ``/proc`` answers yes to; creating it is the real test. What
    the probe created is removed, so a refusal later in planning leaves nothing behind.
    Remote folders need no creating.

    Raises:
        SweepError: 66, ``cannot create runs dir <path>: <reason>``.
    """
    from glossogen.storage import RunStore

    store = RunStore(runs_dir)
    if not store.local:
        return
    path = os.path.abspath(store.runs_dir)
    missing = []
    probe = path
    while not os.path.exists(probe):
        missing.append(probe)
        probe = os.path.dirname(probe)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise SweepError(
            f"cannot create runs dir {path}: {exc.strerror or type(exc).__name__}",
            int(exit_codes.UNREADABLE),
        ) from None
    for created in missing:  # deepest first
        os.rmdir(created)


def _describe(cell: Cell) -> str:
    params = ", ".join(f"{k}={json.dumps(v)}" for k, v in cell.params.items())
    return f"cell {cell.cell_id}" + (f" ({params})" if params else "")


def prepare_sweep(request: SweepRequest) -> SweepPlan:
    """Plan the sweep ``request`` asks for, once: every check before anything is written.

    The writer lease setting every run's lock reads, then the spec (:func:`load_spec`), then
    every cell (:func:`plan_sweep`).

    Raises:
        LeaseSettingError: ``GLOSSOGEN_LEASE_SECONDS`` is not a usable number of seconds.
        SweepError: the spec or a cell is refused (see :func:`load_spec`, :func:`plan_sweep`).
    """
    lease_seconds()  # read by every run's writer lease: bad input, before anything is written
    spec, sweep_id = load_spec(request.spec_path)
    options = SweepOptions.model_validate(request.model_dump(exclude={"spec_path"}))
    return plan_sweep(spec, sweep_id, request.spec_path, options)


def plan_sweep(spec: SweepSpec, sweep_id: str, spec_path: str, options: SweepOptions) -> SweepPlan:
    """Expand and check every cell as ``glossogen run`` would, and estimate each run's spend.

    Returns:
        The plan; nothing is claimed or written.

    Raises:
        SweepError: one line naming the cell and what is wrong: unknown scenario, provider or
            knob, a bad value (65; 66 for a preset file that does not exist); a missing
            credential (77); an unusable runs folder (66 local, 69 remote); a spend cap with a
            model the price catalogue lacks (65).
    """
    sweep = SweepPlan(sweep_id, spec, spec_path, options)
    for cell in expand_grid(spec):
        request = RunRequest(
            scenario=spec.scenario,
            model=cell.model,
            provider=cell.provider,
            runs_dir=spec.runs_dir,
            config=spec.config,
            overrides=list(cell.overrides),
            max_agent_turns=options.max_turns or spec.max_agent_turns or DEFAULT_MAX_AGENT_TURNS,
            group_slug=spec.group_slug,
        )
        try:
            plan = plan_run(request)
            check_credentials(plan)
            check_model_settings(plan)
            if not sweep.cells:
                check_runs_dir(spec.runs_dir)
                _probe_runs_dir(spec.runs_dir)
        except LaunchError as exc:
            code = exc.exit_code
            if code == int(exit_codes.USAGE):  # a bad value in a file is refused, not misused
                code = int(exit_codes.REFUSED)
            # A spec has keys, not flags: the refusal's own line names the request field.
            raise SweepError(f"{_describe(cell)}: {exc}", code) from None
        estimate = estimate_run(plan, spec.runs_dir)
        if spec.spend_cap_usd is not None and estimate.usd is None:
            raise SweepError(
                f"{_describe(cell)}: spend_cap_usd is set but {estimate.source}, so its spend "
                "cannot be capped"
            )
        least = least_request(plan) if spec.spend_cap_usd is not None else None
        sweep.cells.append(CellPlan(cell, plan, estimate, least))
    return sweep
