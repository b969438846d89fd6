"""The launching tools: estimate and start a run, derive one from a run, resume and stop one.

Planned by ``plan_run``/``plan_resume``, derived by ``prepare_fork``; nothing is claimed or
written before every check has passed. No result carries a credential's value, only its
variable name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import StrictFloat, StrictInt

from glossogen import launch
from glossogen.catalog import PROVIDER_SPECS, Provider
from glossogen.mcp._base import (
    ToolBase,
    refuse,
    scenario_class,
)
from glossogen.mcp._results import (
    Credential,
    Estimate,
    Launched,
    SeatPlan,
    Stopped,
)
from glossogen.storage import RunBusyError, RunFolder, StorageError

if TYPE_CHECKING:
    from glossogen.derive import ForkRequest, ResumePoint

RESUME_ARGUMENTS = {"fork": "fork_run (source_run_id, after_round)"}
"""``resume_run``'s words for the tool a refused resume points to (a run that ended)."""


class Launching(ToolBase):
    """Starting, deriving, resuming and stopping runs."""

    def _plan(
        self,
        scenario: str,
        model: str,
        provider: str,
        config: str,
        overrides: list[str] | None,
        max_agent_turns: StrictInt | None,
        spend_cap_usd: StrictFloat | None = None,
        run_timeout_seconds: StrictFloat | None = None,
        group_slug: str = "local",
        judge_cache: str | None = None,
    ) -> launch.RunConfig:
        try:
            launch.check_limits(
                max_agent_turns,
                run_timeout_seconds=run_timeout_seconds,
                spend_cap_usd=spend_cap_usd,
            )
            plan = launch.plan_run(
                launch.RunRequest(
                    scenario=scenario,
                    model=model,
                    provider=provider,
                    runs_dir=self.runs_dir,
                    config=config,
                    overrides=list(overrides or []),
                    max_agent_turns=max_agent_turns or launch.DEFAULT_MAX_AGENT_TURNS,
                    spend_cap_usd=spend_cap_usd,
                    run_timeout_seconds=run_timeout_seconds,
                    group_slug=group_slug,
                    judge_cache=judge_cache,
                )
            )
        except launch.LaunchError as exc:
            raise refuse(exc) from None
        return plan

    @staticmethod
    def _check(plan: launch.RunConfig) -> None:
        """Refuse a launch without credentials, then one whose model settings do not build.

        In this order, as ``glossogen run``: building a model needs its key.
        """
        try:
            launch.check_credentials(plan)
            launch.check_model_settings(plan)
        except launch.LaunchError as exc:
            raise refuse(exc) from None

    def _estimate(self, plan: launch.RunConfig, rounds_done: int = 0) -> Estimate:
        cost = launch.estimate_cost(plan, rounds_done)
        by_seat = {e.agent_id: e for e in cost.seats}
        env = launch.load_environment()
        credentials: list[Credential] = []
        needed = {s.provider: f"agent {s.agent_id}" for s in reversed(plan.seats)}
        for swap in plan.future_providers:
            needed.setdefault(swap, "a scheduled swap")
        for name, who in needed.items():
            for var in PROVIDER_SPECS[Provider(name)].env_vars:
                group = var if isinstance(var, tuple) else (var,)
                credentials.append(
                    Credential(
                        variable="|".join(group),
                        needed_by=who,
                        present=any(env.get(v) for v in group),
                    )
                )
        if plan.judge and plan.judge.provider != "scripted":
            from glossogen.launch._credentials import JUDGE_ENV_VARS

            var = JUDGE_ENV_VARS[plan.judge.provider]
            credentials.append(
                Credential(variable=var, needed_by="judge", present=bool(env.get(var)))
            )
        rounds = cost.rounds
        return Estimate(
            scenario=plan.scenario,
            config_source=plan.config_source,
            rounds=rounds,
            max_agent_turns=plan.limits.max_agent_turns,
            run_timeout_seconds=plan.limits.run_timeout_seconds,
            spend_cap_usd=plan.limits.spend_cap_usd,
            seats=[
                SeatPlan(
                    agent_id=s.agent_id,
                    model=s.model,
                    provider=s.provider,
                    model_settings=s.model_settings,
                    cost_per_round_usd=(
                        None
                        if by_seat[s.agent_id].usd is None
                        else (by_seat[s.agent_id].usd or 0.0) / max(1, rounds)
                    ),
                    requests=by_seat[s.agent_id].requests,
                    cost_usd=by_seat[s.agent_id].usd,
                )
                for s in plan.seats
            ],
            judge=f"{plan.judge.provider}:{plan.judge.model}" if plan.judge else None,
            credentials=credentials,
            cost_per_round_usd=cost.per_round_usd,
            total_cost_usd=cost.total_usd,
            judge_calls=cost.judge_calls,
            judge_cost_usd=cost.judge_usd,
            assumptions=cost.assumptions,
            uncosted_models=launch.uncosted_models(plan),
            warnings=[w.worded() for w in [launch.turn_cap_warning(plan)] if w is not None],
        )

    def estimate_run(
        self,
        scenario: str | None = None,
        model: str | None = None,
        provider: str | None = None,
        config: str | None = None,
        overrides: list[str] | None = None,
        max_agent_turns: StrictInt | None = None,
        spend_cap_usd: StrictFloat | None = None,
        run_timeout_seconds: StrictFloat | None = None,
        group_slug: str | None = None,
        judge_cache: str | None = None,
        run_id: str | None = None,
        allow_config_change: bool = False,
    ) -> Estimate:
        """The dry run: resolved seats and settings, credentials by name, cost per round.

        As ``glossogen run --dry-run``, it claims nothing. Takes what ``start_run`` takes and
        checks it as the dry run does: the limits' bounds, the plan, the model settings once
        the keys are there, and ``spend_cap_usd`` against the estimate (refused when the
        estimate passes it). With ``run_id``: the dry run of ``resume_run`` with the same
        arguments (``run --resume --dry-run``), the rounds still to play estimated.
        """
        if run_id is not None:
            _, _, plan, point = self._plan_resume(
                run_id, model, provider, config, overrides, allow_config_change,
                max_agent_turns, run_timeout_seconds, spend_cap_usd, group_slug, judge_cache,
            )  # fmt: skip
            done = point.state.after_round
        elif scenario and model and provider:
            plan = self._plan(
                scenario, model, provider, config or "knobs_default", overrides,
                max_agent_turns, spend_cap_usd, run_timeout_seconds, group_slug or "local",
                judge_cache,
            )  # fmt: skip
            done = 0
        else:
            raise ToolError(
                "estimate a new run with scenario, model and provider, or a resume with run_id"
            )
        estimate = self._estimate(plan, done)
        if all(c.present for c in estimate.credentials):
            self._check(plan)  # the settings are checked once the keys are there
        try:
            launch.check_spend_cap(plan, max(0, plan.knobs.round_count - done))
        except launch.LaunchError as exc:
            raise refuse(exc, RESUME_ARGUMENTS) from None
        return estimate

    async def start_run(
        self,
        scenario: str,
        model: str,
        provider: str,
        config: str = "knobs_default",
        overrides: list[str] | None = None,
        max_agent_turns: StrictInt | None = None,
        spend_cap_usd: StrictFloat | None = None,
        run_timeout_seconds: StrictFloat | None = None,
        group_slug: str = "local",
        judge_cache: str | None = None,
    ) -> Launched:
        """Check, claim the run's folder, launch it, and return its run id at once.

        ``spend_cap_usd`` is the run's own cap, as ``glossogen run``'s: refused
        when the dry-run estimate passes it, recorded in ``simulation_started`` and enforced
        while the run plays. ``run_timeout_seconds``: the run's wall-clock limit, as
        ``glossogen run``'s (None: none). ``group_slug`` and ``judge_cache`` as ``glossogen
        run``'s ``--group-slug`` and ``--judge-cache``.
        """
        plan = self._plan(
            scenario, model, provider, config, overrides, max_agent_turns, spend_cap_usd,
            run_timeout_seconds, group_slug, judge_cache,
        )  # fmt: skip
        try:
            launch.check_launch(plan, 0, self.runs_dir)  # the one order, as glossogen run's
        except launch.LaunchError as exc:
            raise refuse(exc) from None
        try:
            folder, via = await launch.launch_new(plan, self.runs_dir)
        except StorageError as exc:
            raise refuse(exc) from None
        return Launched(run_id=folder.run_id, launched_via=via)

    def _plan_resume(
        self,
        run_id: str,
        model: str | None,
        provider: str | None,
        config: str | None,
        overrides: list[str] | None,
        allow_config_change: bool,
        max_agent_turns: StrictInt | None,
        run_timeout_seconds: StrictFloat | None,
        spend_cap_usd: StrictFloat | None,
        group_slug: str | None,
        judge_cache: str | None,
    ) -> tuple[RunFolder, launch.ResumeRequest, launch.RunConfig, ResumePoint]:
        """The folder, request, plan and resume point of ``resume_run`` (and its dry run).

        Checked as ``glossogen run --resume`` checks: the limits' bounds, then the plan (a
        change refused unless ``allow_config_change``).
        """
        from glossogen.derive import DeriveError  # the engine's state reader: not at start-up

        folder = self._folder(run_id)
        try:
            launch.check_limits(max_agent_turns, run_timeout_seconds, spend_cap_usd)
            request = launch.ResumeRequest(
                run_dir=folder.url, scenario=folder.scenario, model=model, provider=provider,
                config=config, overrides=list(overrides or []), group_slug=group_slug,
                allow_config_change=allow_config_change, judge_cache=judge_cache,
            ).model_copy(  # the bounds are check_limits' (its wording), not the model's
                update={"max_agent_turns": max_agent_turns, "spend_cap_usd": spend_cap_usd,
                        "run_timeout_seconds": run_timeout_seconds}
            )  # fmt: skip
            plan, point = launch.plan_resume(request)
        except (launch.LaunchError, DeriveError, StorageError, RunBusyError) as exc:
            raise refuse(exc, RESUME_ARGUMENTS, self.runs_dir) from None
        return folder, request, plan, point

    def resume_run(
        self,
        run_id: str,
        model: str | None = None,
        provider: str | None = None,
        config: str | None = None,
        overrides: list[str] | None = None,
        allow_config_change: bool = False,
        max_agent_turns: StrictInt | None = None,
        run_timeout_seconds: StrictFloat | None = None,
        spend_cap_usd: StrictFloat | None = None,
        group_slug: str | None = None,
        judge_cache: str | None = None,
    ) -> Launched:
        """Continue a stopped, interrupted or failed run in place, detached.

        Takes what ``glossogen run --resume`` takes (None: as the run recorded; ``judge_cache``,
        never recorded: none), checked as it checks them: the limits' bounds, the plan (a
        change refused unless ``allow_config_change``), credentials, model settings, the spend
        cap against the estimate of the rounds still to play.
        """
        folder, request, plan, point = self._plan_resume(
            run_id, model, provider, config, overrides, allow_config_change, max_agent_turns,
            run_timeout_seconds, spend_cap_usd, group_slug, judge_cache,
        )  # fmt: skip
        try:
            launch.check_launch(plan, point.state.after_round)
            folder.check_unlocked()
        except (launch.LaunchError, StorageError, RunBusyError) as exc:
            raise refuse(exc, RESUME_ARGUMENTS, self.runs_dir) from None
        launched = folder.pending_launch()
        if launched is not None:
            raise ToolError(f"run {run_id} was just launched (pid {launched}): it is starting")
        return Launched(
            run_id=folder.run_id,
            launched_via=launch.launch_resume(folder, folder.scenario, request),
        )

    def derive(self, request: ForkRequest) -> Launched:
        """Prepare a derived run's folder from its source, then play it on, detached."""
        from glossogen.derive import DeriveError, prepare_fork
        from glossogen.replay import replayed_rounds

        try:
            scenario_class(request.scenario)
            # The checks the derived-run commands make (keys, settings), before the claim.
            prepared = prepare_fork(
                request,
                check=launch.derived_run_check(request.scenario),
                replay_check=replayed_rounds,
            )
            launch.check_derived_spend_cap(prepared.folder)  # a refused folder is removed again
        except (DeriveError, launch.LaunchError, StorageError) as exc:
            raise refuse(exc, runs_dir=self.runs_dir) from None
        folder = prepared.folder
        plan, _ = launch.plan_resume(
            launch.ResumeRequest(run_dir=folder.url)
        )  # the copied rounds count too
        warned = launch.turn_cap_warning(plan)
        return Launched(
            run_id=folder.run_id,
            launched_via=launch.launch_resume(folder, request.scenario),
            replayed=None if prepared.replayed is None else prepared.replayed.said(),
            warnings=[] if warned is None else [warned.worded()],
        )

    def source(self, run_id: str, field: str = "source_run_id") -> RunFolder:
        """The folder of a source or donor run named by id (the tool's argument ``field``)."""
        return self._folder(run_id, field=field)

    def stop_run(self, run_id: str) -> Stopped:
        """Stop a run as ``glossogen stop`` does (``interrupted``, resumable; queued: cancelled)."""
        request = launch.StopRequest(runs_dir=self.runs_dir, run_id=run_id)
        try:  # the library's one check of the run id, as the CLI and REST
            stopping = launch.stop_run(request)
        except launch.StopError as exc:
            raise refuse(exc) from None
        return Stopped(
            run_id=stopping.run_id,
            pid=stopping.pid,
            flow_run_id=stopping.flow_run_id,
            message=stopping.said(f"resume_run (run_id {stopping.run_id!r})"),
        )
