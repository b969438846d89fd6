"""drive_module_repair: three seats carry a heavy, structured payload from sheet to hands.

The field technician alone sees the symptoms (one fault at a time, tagged with its module) and
alone can act (``service_component``); the diagnostics engineer alone has each module's fault
tree (symptom to component) and access-depth order; the spec engineer alone has each module's
service sheet (component to a full ordered procedure: tool, fasteners and pattern, torque in
N·m, passes, calibration routine, hold). A module's tree and sheet reach the engineers only when
the technician reaches that module; nobody is told the workload. Every replacement is ruled by a
majority of ``judge_votes`` judge calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from glossogen.knobs import BaseKnobs
from glossogen.scenario import (
    ActionGuard,
    AgentSpec,
    ChannelSpec,
    CostProfile,
    RoundContext,
    ScriptedPolicies,
    StagedScenario,
    StageProgress,
    hidden_codes,
    judge_by_majority,
    render_prompt,
    scenario_tool,
)
from scenarios.drive_module_repair import scripted
from scenarios.drive_module_repair.catalogue import (
    CLASSES,
    CRAWLER,
    DriveCase,
    ModuleCase,
    Stage,
    draw_case,
)
from scenarios.drive_module_repair.events import (
    DriveModuleRepairCaseStarted,
    DriveModuleRepairReplacementJudged,
)
from scenarios.drive_module_repair.judging import Requirement, check_action
from scenarios.drive_module_repair.knobs import DriveModuleRepairKnobs

if TYPE_CHECKING:
    from pydantic_ai import Tool

    from glossogen.scenario import ToolContext

TECHNICIAN, DIAGNOSTICS, SPEC = scripted.TECHNICIAN, scripted.DIAGNOSTICS, scripted.SPEC
SEATS = (TECHNICIAN, DIAGNOSTICS, SPEC)
TEAM = "bay_crew"
DISPLAY = {
    TECHNICIAN: "Field Technician",
    DIAGNOSTICS: "Diagnostics Engineer",
    SPEC: "Spec Engineer",
}


def render(name: str, **values: Any) -> str:
    """Render ``prompts/<name>.j2`` with ``values`` (a missing value is an error)."""
    return render_prompt(DriveModuleRepair, name, **values)


def fault_of(stage: Stage) -> dict[str, Any]:
    """What the technician sees of one fault: its module and symptom."""
    return {
        "step": stage.number,
        "module": stage.module.module,
        "symptom": stage.module.symptom(stage.component),
    }


def tree_of(module: ModuleCase) -> dict[str, Any]:
    """What the diagnostics engineer gets of a module: its fault tree and depth order."""
    return {
        "module": module.module,
        "tree": dict(module.tree),
        "depth_order": list(module.depth_order),
    }


def sheet_of(module: ModuleCase) -> dict[str, Any]:
    """What the spec engineer gets of a module: its service sheet."""
    return {"module": module.module, "sheet": [r.model_dump() for r in module.sheet]}


def tree_text(module: ModuleCase) -> str:
    """A module's fault tree and depth order, in words."""
    rows = "\n".join(f"- {s} -> {c}" for s, c in module.tree.items())
    depth = ", ".join(module.depth_order)
    return (
        f"Drive module {module.module}, fault tree (symptom -> component):\n{rows}\n"
        f"Access depth, shallowest first: {depth}."
    )


def sheet_text(module: ModuleCase) -> str:
    """A module's service sheet, in words."""
    rows = "\n".join(
        f"- {r.component} (part {r.part_code}): " + "; ".join(r.step_texts()) for r in module.sheet
    )
    return f"Drive module {module.module}, service sheet (steps in order):\n{rows}"


class DriveModuleRepair(StagedScenario):
    """Three seats, a count-blind multi-module repair per round, a metered bay channel."""

    name = "drive_module_repair"
    description = (
        "A field technician who alone sees symptoms and can service components, a diagnostics "
        "engineer with each module's fault tree and a spec engineer with each module's service "
        "sheet repair a crawler's drive modules fault by fault over one metered channel. Each "
        "replacement is judged by a majority of judge calls."
    )
    knobs_model = DriveModuleRepairKnobs
    events = (DriveModuleRepairCaseStarted, DriveModuleRepairReplacementJudged)
    case_event = DriveModuleRepairCaseStarted
    uses_judge = True
    probe_questions = {
        "component_naming": (
            "The repairs are over. How does your bay crew refer to a module and a component on "
            "the channel: full names, numbers or shorthand of your own?"
        ),
        "sheet_order": (
            "When a replacement is read out from the spec sheet, in what order do its values "
            "come, and which ones are left out because everyone knows them?"
        ),
        "fault_report": (
            "What does a diagnostics report of a fault look like on the channel, from first "
            "word to last?"
        ),
        "hand_off": (
            "How does the technician say that a step is done and the next module can start?"
        ),
    }
    knobs: DriveModuleRepairKnobs
    team = TEAM
    outcome = "faults fixed"
    guard = ActionGuard(
        actor=TECHNICIAN,
        not_actor="only the field technician is in the bay",
        settled="the bay takes no more work this round",
        busy="the previous replacement is still being checked",
        empty="say what you do, step by step",
        lost_meanwhile="the round was lost before the work was checked",
    )
    scripted_policies = ScriptedPolicies(
        seats={
            TECHNICIAN: scripted.technician_move,
            DIAGNOSTICS: lambda view, _seed: scripted.diagnostics_move(view),
            SPEC: scripted.spec_move,
        },
        debrief=scripted.debrief_move,
    )

    def __init__(self, knobs: BaseKnobs) -> None:
        """Start with no case drawn."""
        super().__init__(knobs)
        self.case: DriveCase | None = None
        self.stages: list[Stage] = []
        self.injected: DriveCase | None = None

    # -- declaration ------------------------------------------------------------------------

    def agents(self) -> list[AgentSpec]:
        """Return the technician (who has ``service_component``) and the two engineers."""
        return [
            AgentSpec(
                TECHNICIAN, "field_technician", DISPLAY[TECHNICIAN], TEAM, ("service_component",)
            ),
            AgentSpec(DIAGNOSTICS, "diagnostics_engineer", DISPLAY[DIAGNOSTICS], TEAM),
            AgentSpec(SPEC, "spec_engineer", DISPLAY[SPEC], TEAM),
        ]

    def channels(self) -> list[ChannelSpec]:
        """Return the metered ``bay`` and the free ``postmortem`` channel."""
        return [
            ChannelSpec("bay", metered=True),
            ChannelSpec("postmortem", metered=False, phase="postmortem"),
        ]

    def budget_chars(self) -> int:
        """Return ``round_budget_chars``: characters the three seats may send on ``bay``."""
        return self.knobs.round_budget_chars

    def system_prompt(self, agent: AgentSpec) -> str:
        """Return the standing instructions of ``agent``."""
        k = self.knobs
        return render(
            agent.agent_id,
            display_name=agent.display_name,
            crawler=CRAWLER,
            technician=DISPLAY[TECHNICIAN],
            diagnostics=DISPLAY[DIAGNOSTICS],
            spec=DISPLAY[SPEC],
            round_count=k.round_count,
            budget_chars=k.round_budget_chars,
            postmortem_enabled=k.postmortem_enabled,
            classes=CLASSES,
        )

    # -- the round ----------------------------------------------------------------------------

    def on_scheduled_case(self, payload: dict[str, Any]) -> None:
        """Play ``payload`` (a :class:`DriveCase` as JSON, checked by the knobs) next round."""
        self.injected = DriveCase.model_validate(payload)

    def cost_profile(self) -> CostProfile:
        """Per replacement a request of each seat, ruled by ``judge_votes`` judge calls."""
        stages = len(self.stages) or 1
        action = "replace the component: tool, fasteners and pattern, torque, passes, routine"
        instructions = self.judge_instructions(self.stages[0]) if self.stages else ""
        return CostProfile(
            main_requests=1 + 4.5 * stages,
            postmortem_requests=3.0,
            output_tokens=90,
            added_tokens=60,
            judge_calls=stages * self.knobs.judge_votes,
            judge_prompt_chars=len(instructions) + len(action),
            reason=f"round 1's case of {stages} replacements: at each the technician reports, "
            "services and waits (a failed service is retried), the engineers wait, look up and "
            f"answer; every service is ruled by {self.knobs.judge_votes} judge votes",
            postmortem_reason="a seat sends a line and stops; the others' lines may wake it",
        )

    def start_round(self, ctx: RoundContext) -> None:
        """Draw (or take the injected) case, log it, brief the seats on the first module."""
        k = self.knobs
        injected, self.injected = self.injected, None
        self.case = case = injected or draw_case(
            ctx.rng("drive_module_repair", "case"),
            module_count_weights=k.module_count_weights,
            fault_count_weights=k.fault_count_weights,
        )
        self.stages = case.stages()
        self.progress = StageProgress(total=len(self.stages))
        self.lost_reason = None
        self.judging = False
        ctx.emit(
            DriveModuleRepairCaseStarted(
                modules=case.model_dump(mode="json")["modules"],
                stages=[
                    {
                        "stage": s.number,
                        "module": s.module.module,
                        "component": s.component,
                        "symptom": s.module.symptom(s.component),
                        "expected": Requirement.of(s).expected(),
                    }
                    for s in self.stages
                ],
                budget_chars=k.round_budget_chars,
                judge_votes=k.judge_votes,
                injected=injected is not None,
            )
        )
        first = self.stages[0]
        opening = f"Round {ctx.round_number} of {k.round_count} opens."
        common = {"round": ctx.round_number, "budget_chars": k.round_budget_chars}
        fault = fault_of(first)
        ctx.brief(
            TECHNICIAN,
            f"{opening} Drive module {fault['module']} shows: {fault['symptom']}.",
            {**common, **fault},
        )
        self._push_module(ctx, first.module, opening, brief=True)

    def _push_module(
        self, ctx: RoundContext, module: ModuleCase, lead: str, *, brief: bool
    ) -> None:
        """Give the two engineers ``module``'s tree and sheet privately."""
        common = {"budget_chars": self.knobs.round_budget_chars}
        if brief:
            ctx.brief(DIAGNOSTICS, f"{lead} {tree_text(module)}", {**common, **tree_of(module)})
            ctx.brief(SPEC, f"{lead} {sheet_text(module)}", {**common, **sheet_of(module)})
            return
        ctx.notify(DIAGNOSTICS, "module_opened", f"{lead} {tree_text(module)}", tree_of(module))
        ctx.notify(SPEC, "module_opened", f"{lead} {sheet_text(module)}", sheet_of(module))

    def judge_instructions(self, stage: Stage) -> str:
        """Return the judge's instructions for ``stage``: the filled replacement, no code."""
        return render("judge", expected=Requirement.of(stage).expected())

    def tools(self) -> list[Tool[Any]]:
        """Return ``service_component`` (the technician's alone)."""

        async def service_component(ctx: ToolContext, action: str) -> dict[str, Any]:
            """Carry out one replacement on a drive module; it acts at once.

            Returns whether the fault is fixed and, if another fault follows, its symptom.

            Args:
                ctx: The run context (the caller's identity and the round); not a model input.
                action: What you do, in plain words: the module, the component, and every step
                    in order with its tool, fasteners, pattern, torque, passes, routine, hold.
            """
            return await self._service(ctx, action)

        return [scenario_tool(service_component)]

    async def _service(self, ctx: ToolContext, action: str) -> dict[str, Any]:
        refused = self.refusal(ctx.deps.agent_id, action)
        if refused is not None:
            return refused
        assert self.case is not None  # refusal() refuses every action before a case is drawn
        stage = self.stages[self.progress.stage - 1]
        need = Requirement.of(stage)
        round_ctx = ctx.deps.round
        ruling = await self.rule(
            judge_by_majority(
                round_ctx,
                action,
                self.judge_instructions(stage),
                lambda: check_action(action, need),
                votes=self.knobs.judge_votes,
                codes=hidden_codes(self.case),
            )
        )
        if ruling is None:  # the round was lost while the replacement was being ruled on
            return self.guard.refused(self.guard.lost_meanwhile)
        attempt = self.progress.attempt()
        round_ctx.emit(
            DriveModuleRepairReplacementJudged(
                step=stage.number,
                attempt=attempt,
                expected=need.expected(),
                action=action,
                votes=[{"success": v.success, "reason": v.reason} for v in ruling.votes],
                match=ruling.success,
                reason=ruling.reason,
            )
        )
        if not ruling.success:
            return {"status": "rejected", "note": "the fault is still there; check with the team"}
        if not self.progress.accept():
            for agent_id in SEATS:
                round_ctx.notify(
                    agent_id, "all_fixed", "Every fault is fixed; the crawler can walk."
                )
            return {"status": "fixed", "all_fixed": True}
        nxt = self.stages[self.progress.stage - 1]
        if nxt.module is not stage.module:
            self._push_module(
                round_ctx, nxt.module, "The technician has reached a new module.", brief=False
            )
        fault = fault_of(nxt)
        return {
            "status": "fixed",
            "next_fault": fault,
            "note": f"Drive module {fault['module']} shows: {fault['symptom']}.",
        }

    def on_budget_exceeded(self, ctx: RoundContext, channel_id: str, used_chars: int) -> None:
        """Lose the round on budget exhaustion; every seat is told."""
        if self.is_settled():
            return
        p = self.progress
        self.lost_reason = f"budget exceeded with {p.accepted} of {p.total} faults fixed"
        budget = self.knobs.round_budget_chars
        for agent_id in SEATS:
            ctx.notify(
                agent_id,
                "round_lost",
                f"The bay carried {used_chars} characters, over its {budget}. The round is lost.",
                {"used_chars": used_chars, "budget_chars": budget, "channel_id": channel_id},
            )
