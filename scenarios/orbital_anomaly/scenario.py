"""orbital_anomaly: three seats fuse three partial views of a failing spacecraft into one action.

The astronaut alone sees the panel (an alarm shared by a whole subsystem, the unit that tripped
and its configuration) and alone can act (``actuate_panel``); the telemetry officer alone sees
the exact fault, its setting and its hold time; the systems engineer alone holds the handbook
and the round's configuration table (which of three procedure variants clears each fault this
round). Every part of the right action is held by exactly one seat. They talk on one metered
link; a case chains 1..5 faults, revealed one at a time and privately; every actuation is ruled
by the judge, which reads the action cold against the stage's filled procedure, never a code.
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
from scenarios.orbital_anomaly import scripted
from scenarios.orbital_anomaly.catalogue import (
    FAULTS,
    SUBSYSTEM_BY_KEY,
    SUBSYSTEMS,
    VEHICLE,
    FaultStage,
    OrbitalCase,
    draw_case,
)
from scenarios.orbital_anomaly.events import (
    OrbitalAnomalyActuationJudged,
    OrbitalAnomalyCaseStarted,
)
from scenarios.orbital_anomaly.judging import Requirement, check_action
from scenarios.orbital_anomaly.knobs import OrbitalAnomalyKnobs

if TYPE_CHECKING:
    from pydantic_ai import Tool

    from glossogen.scenario import ToolContext

ASTRONAUT, TELEMETRY, ENGINEER = scripted.ASTRONAUT, scripted.TELEMETRY, scripted.ENGINEER
SEATS = (ASTRONAUT, TELEMETRY, ENGINEER)
TEAM = "crew"
DISPLAY = {
    ASTRONAUT: "Astronaut",
    TELEMETRY: "Telemetry Officer",
    ENGINEER: "Systems Engineer",
}


def render(name: str, **values: Any) -> str:
    """Render ``prompts/<name>.j2`` with ``values`` (a missing value is an error)."""
    return render_prompt(OrbitalAnomaly, name, **values)


def panel_of(stage_number: int, stage: FaultStage) -> dict[str, Any]:
    """What the astronaut's panel shows for one stage (the alarm is the subsystem's)."""
    return {
        "stage": stage_number,
        "alarm": SUBSYSTEM_BY_KEY[stage.fault.subsystem].alarm,
        "unit": stage.unit,
        "configuration": stage.configuration,
    }


def telemetry_of(stage_number: int, stage: FaultStage) -> dict[str, Any]:
    """What the telemetry officer reads for one stage."""
    return {
        "stage": stage_number,
        "name": stage.fault.name,
        "signature": stage.fault.signature,
        "setting": stage.setting_text(),
        "setting_name": stage.fault.setting_name,
        "hold_seconds": stage.hold_seconds,
    }


def panel_text(panel: dict[str, Any]) -> str:
    """The astronaut's view of a stage, in words."""
    return (
        f"Panel: alarm {panel['alarm']}. Tripped unit: the {panel['unit']}, configured "
        f"{panel['configuration']}."
    )


def telemetry_text(reading: dict[str, Any]) -> str:
    """The telemetry officer's view of a stage, in words."""
    return (
        f"Telemetry: {reading['name']} ({reading['signature']}). Corrective setting: "
        f"{reading['setting_name']} {reading['setting']}. Hold: {reading['hold_seconds']} seconds."
    )


def table_text(case: OrbitalCase) -> str:
    """The systems engineer's round briefing: the configuration table, one fault a line."""
    rows = "\n".join(f"- {fault_id}: variant {v}" for fault_id, v in case.table.items())
    return f"This round's configuration table (fault: variant that clears it):\n{rows}"


class OrbitalAnomaly(StagedScenario):
    """Three seats, a staged fault case per round, a metered link and a judged panel tool."""

    name = "orbital_anomaly"
    description = (
        "An astronaut who alone sees the panel and can act, a telemetry officer who alone reads "
        "the exact fault, setting and hold, and a systems engineer who alone holds the handbook "
        "and the round's variant table clear a chain of spacecraft faults over one metered link. "
        "Each actuation is judged."
    )
    knobs_model = OrbitalAnomalyKnobs
    events = (OrbitalAnomalyCaseStarted, OrbitalAnomalyActuationJudged)
    case_event = OrbitalAnomalyCaseStarted
    uses_judge = True
    probe_questions = {
        "fault_naming": (
            "The rounds are over. How does your crew name a fault on the link: which words, "
            "codes or numbers stand for the subsystem, the unit and the signature?"
        ),
        "action_order": (
            "When the panel action is agreed, in what order do its parts reach the astronaut, "
            "and who says each part?"
        ),
        "variant": (
            "How does your crew tell which procedure variant applies this round, and how is it "
            "said on the link?"
        ),
        "confirmation": (
            "How does a crewmate confirm that a setting or hold time was heard right before the "
            "panel is touched?"
        ),
    }
    knobs: OrbitalAnomalyKnobs
    team = TEAM
    outcome = "stages cleared"
    guard = ActionGuard(
        actor=ASTRONAUT,
        not_actor="only the astronaut can reach the panel",
        settled="the panel takes no more actions this round",
        busy="the previous action is still being carried out",
        empty="say what you do at the panel",
        lost_meanwhile="the vehicle was lost before the action took",
    )
    scripted_policies = ScriptedPolicies(
        seats={
            ASTRONAUT: scripted.astronaut_move,
            TELEMETRY: lambda view, _seed: scripted.telemetry_move(view),
            ENGINEER: scripted.engineer_move,
        },
        debrief=scripted.debrief_move,
    )

    def __init__(self, knobs: BaseKnobs) -> None:
        """Start with no case drawn."""
        super().__init__(knobs)
        self.case: OrbitalCase | None = None
        self.injected: OrbitalCase | None = None

    # -- declaration ------------------------------------------------------------------------

    def agents(self) -> list[AgentSpec]:
        """Return the astronaut (who has ``actuate_panel``), the telemetry officer, the engineer."""
        return [
            AgentSpec(ASTRONAUT, "astronaut", DISPLAY[ASTRONAUT], TEAM, ("actuate_panel",)),
            AgentSpec(TELEMETRY, "telemetry_officer", DISPLAY[TELEMETRY], TEAM),
            AgentSpec(ENGINEER, "systems_engineer", DISPLAY[ENGINEER], TEAM),
        ]

    def channels(self) -> list[ChannelSpec]:
        """Return the metered ``link`` and the free ``postmortem`` channel."""
        return [
            ChannelSpec("link", metered=True),
            ChannelSpec("postmortem", metered=False, phase="postmortem"),
        ]

    def budget_chars(self) -> int:
        """Return ``round_budget_chars``: characters the three seats may send on ``link``."""
        return self.knobs.round_budget_chars

    def budget_warning_shares(self) -> tuple[float, ...]:
        """Warn every seat once at ``budget_notice_share`` of the budget, and when it is spent."""
        return (self.knobs.budget_notice_share, 1.0)

    def system_prompt(self, agent: AgentSpec) -> str:
        """Return the standing instructions; the engineer's hold the whole handbook."""
        k = self.knobs
        return render(
            agent.agent_id,
            display_name=agent.display_name,
            vehicle=VEHICLE,
            astronaut=DISPLAY[ASTRONAUT],
            telemetry=DISPLAY[TELEMETRY],
            engineer=DISPLAY[ENGINEER],
            round_count=k.round_count,
            budget_chars=k.round_budget_chars,
            notice_percent=round(k.budget_notice_share * 100),
            postmortem_enabled=k.postmortem_enabled,
            subsystems=SUBSYSTEMS,
            faults=FAULTS,
        )

    # -- the round ----------------------------------------------------------------------------

    def on_scheduled_case(self, payload: dict[str, Any]) -> None:
        """Play ``payload`` (an :class:`OrbitalCase` as JSON, checked by the knobs) next round."""
        self.injected = OrbitalCase.model_validate(payload)

    def cost_profile(self) -> CostProfile:
        """Per stage an actuation (judged once) and the officers' readings and answers."""
        stages = self.progress.total if self.case is not None else 1
        action = "set the named switch on the named panel, in order, and hold"
        return CostProfile(
            main_requests=1 + 4 * stages,
            postmortem_requests=3.0,
            output_tokens=80,
            added_tokens=50,
            judge_calls=stages,
            judge_prompt_chars=len(self.judge_instructions(1)) + len(action) if self.case else 0,
            reason=f"round 1's case of {stages} stages: at each the astronaut reports, actuates "
            "and waits, the officers wait, read and answer; one judge call per actuation",
            postmortem_reason="a seat sends a line and stops; the others' lines may wake it",
        )

    def start_round(self, ctx: RoundContext) -> None:
        """Draw (or take the injected) case, log its answer key, brief each seat on stage 1."""
        k = self.knobs
        injected, self.injected = self.injected, None
        self.case = case = injected or draw_case(
            ctx.rng("orbital_anomaly", "case"),
            fault_count_weights=k.fault_count_weights,
            hold_seconds=(k.min_hold_seconds, k.max_hold_seconds),
            easy=ctx.round_number in k.easy_round_numbers,
            cipher=k.cipher_enabled,
        )
        self.progress = StageProgress(total=len(case.stages))
        self.lost_reason = None
        self.judging = False
        ctx.emit(
            OrbitalAnomalyCaseStarted(
                stages=[
                    {
                        "stage": n,
                        "fault_id": s.fault_id,
                        "fault_name": s.fault.name,
                        "subsystem": s.fault.subsystem,
                        "alarm": SUBSYSTEM_BY_KEY[s.fault.subsystem].alarm,
                        "unit": s.unit,
                        "configuration": s.configuration,
                        "hold_seconds": s.hold_seconds,
                        "setting": s.setting_text(),
                        "variant": case.table[s.fault_id],
                        "expected": Requirement.of(case, n).expected(),
                    }
                    for n, s in enumerate(case.stages, start=1)
                ],
                variant_index=case.variant_index,
                table=case.table,
                budget_chars=k.round_budget_chars,
                injected=injected is not None,
            )
        )
        common = {"round": ctx.round_number, "budget_chars": k.round_budget_chars}
        panel = panel_of(1, case.stages[0])
        opening = f"Round {ctx.round_number} of {k.round_count} opens."
        ctx.brief(ASTRONAUT, f"{opening} {panel_text(panel)}", {**common, **panel})
        reading = telemetry_of(1, case.stages[0])
        ctx.brief(TELEMETRY, f"{opening} {telemetry_text(reading)}", {**common, **reading})
        ctx.brief(ENGINEER, f"{opening} {table_text(case)}", {**common, "table": dict(case.table)})

    def requirement(self, stage: int) -> Requirement:
        """Return what the actuation of ``stage`` (1-based) must be this round."""
        assert self.case is not None
        return Requirement.of(self.case, stage)

    def judge_instructions(self, stage: int) -> str:
        """Return the judge's instructions for ``stage``: the filled procedure, no code."""
        need = self.requirement(stage)
        return render(
            "judge",
            expected=need.expected(),
            unit=need.stage.unit,
            configuration=need.stage.configuration,
            setting=need.stage.setting_text(),
            hold_seconds=need.stage.hold_seconds,
        )

    def tools(self) -> list[Tool[Any]]:
        """Return ``actuate_panel`` (the astronaut's alone)."""

        async def actuate_panel(ctx: ToolContext, action: str) -> dict[str, Any]:
            """Carry out one action at the control panel; it acts at once.

            Returns whether the fault cleared and, if another fault follows, its panel.

            Args:
                ctx: The run context (the caller's identity and the round); not a model input.
                action: What you do, in plain words: the procedure, the unit and its
                    configuration, the setting and the hold in seconds.
            """
            return await self._actuate(ctx, action)

        return [scenario_tool(actuate_panel)]

    async def _actuate(self, ctx: ToolContext, action: str) -> dict[str, Any]:
        refused = self.refusal(ctx.deps.agent_id, action)
        if refused is not None:
            return refused
        assert self.case is not None  # refusal() refuses every action before a case is drawn
        case, stage = self.case, self.progress.stage
        need = self.requirement(stage)
        round_ctx = ctx.deps.round
        ruling = await self.rule(
            judge_by_majority(
                round_ctx,
                action,
                self.judge_instructions(stage),
                lambda: check_action(action, need),
                codes=hidden_codes(case) | case.table.keys(),
            )
        )
        if ruling is None:  # the vehicle was lost while the action was being ruled on
            return self.guard.refused(self.guard.lost_meanwhile)
        attempt = self.progress.attempt()
        round_ctx.emit(
            OrbitalAnomalyActuationJudged(
                stage=stage,
                attempt=attempt,
                expected=need.expected(),
                action=action,
                match=ruling.success,
                reason=ruling.reason,
            )
        )
        if not ruling.success:
            return {
                "status": "rejected",
                "note": "the fault did not clear; check with the team and try again",
            }
        if not self.progress.accept():
            for agent_id in SEATS:
                round_ctx.notify(agent_id, "all_clear", "All faults cleared; the vehicle is safe.")
            return {"status": "accepted", "all_clear": True}
        nxt = stage + 1
        reading = telemetry_of(nxt, case.stages[nxt - 1])
        round_ctx.notify(
            TELEMETRY,
            "stage_resolved",
            f"Stage resolved. New fault. {telemetry_text(reading)}",
            {"telemetry": reading},
        )
        round_ctx.notify(ENGINEER, "stage_resolved", "Stage resolved.")
        panel = panel_of(nxt, case.stages[nxt - 1])
        return {"status": "accepted", "next_panel": panel, "panel": panel_text(panel)}

    def on_budget_exceeded(self, ctx: RoundContext, channel_id: str, used_chars: int) -> None:
        """Lose the vehicle: the round is lost and every seat is told."""
        if self.is_settled():
            return
        self.lost_reason = (
            f"budget exceeded at stage {self.progress.stage} of {self.progress.total}"
        )
        budget = self.knobs.round_budget_chars
        for agent_id in SEATS:
            ctx.notify(
                agent_id,
                "vehicle_lost",
                f"The link carried {used_chars} characters, over its {budget}; the vehicle is "
                "lost. The round is over.",
                {"used_chars": used_chars, "budget_chars": budget, "channel_id": channel_id},
            )
