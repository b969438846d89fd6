"""Veyru: keep a failing living crystal alive when the one who sees it is not the one who knows.

The field observer alone sees the veyru's signs and alone can treat it; the stabilization
engineer alone holds the care manual and this round's reading of the star Ilvane, which shifts
which procedure cures which motif and sets the face, hold time and intensity. They talk on a
metered link (one shared character budget per round; overspending collapses the veyru) and on a
free postmortem channel. A case chains 1..3 motifs, treated stage by stage; every treatment is
ruled by the in-run judge, which reads the action cold against the stage's procedure in plain
words, never the manual's codes or the star's table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from glossogen.eventlog import Verdict
from glossogen.knobs import BaseKnobs
from glossogen.scenario import (
    ActionGuard,
    AgentSpec,
    ChannelSpec,
    CostProfile,
    RoundContext,
    ScriptedPolicies,
    StagedScenario,
    render_prompt,
    scenario_tool,
)
from scenarios.veyru import scripted
from scenarios.veyru.events import VeyruCaseStarted, VeyruStabilizationJudged
from scenarios.veyru.judging import Requirement, check_action
from scenarios.veyru.knobs import VeyruKnobs
from scenarios.veyru.motifs import BY_ID, FACES, MOTIFS, STAR, Case, draw_case

if TYPE_CHECKING:
    from pydantic_ai import Tool

    from glossogen.scenario import ToolContext

OBSERVER, ENGINEER = scripted.OBSERVER, scripted.ENGINEER
TEAM = "team"


def render(name: str, **values: Any) -> str:
    """Render ``prompts/<name>.j2`` with ``values`` (a missing value is an error)."""
    return render_prompt(Veyru, name, **values)


class Veyru(StagedScenario):
    """Two seats, one failing veyru per round, a metered link and a judged treatment tool."""

    name = "veyru"
    description = (
        "A field observer who alone sees and touches a failing veyru, and a stabilization "
        "engineer who alone holds the care manual and the star's shifting reading, keep it alive "
        "over a link with a tight character budget. Each treatment is judged."
    )
    knobs_model = VeyruKnobs
    events = (VeyruCaseStarted, VeyruStabilizationJudged)
    case_event = VeyruCaseStarted
    ruling_events = (VeyruStabilizationJudged,)
    uses_judge = True
    knobs: VeyruKnobs
    team = TEAM
    outcome = "stages stabilized"
    guard = ActionGuard(
        actor=OBSERVER,
        not_actor="only the field observer can touch the veyru",
        settled="this round's veyru needs no more treatment",
        busy="the previous treatment is still taking effect",
        empty="describe the treatment you carry out",
        lost_meanwhile="the veyru collapsed before the treatment took",
    )
    scripted_policies = ScriptedPolicies(
        seats={OBSERVER: scripted.observer_move, ENGINEER: scripted.engineer_move},
        debrief=scripted.debrief_move,
    )

    def __init__(self, knobs: BaseKnobs) -> None:
        """Start with no case drawn."""
        super().__init__(knobs)
        self.round_number = 0
        self.case: Case | None = None
        self.stabilized = 0
        self.attempts_used = 0

    # -- declaration ------------------------------------------------------------------------

    def agents(self) -> list[AgentSpec]:
        """Return the field observer (who has ``apply_treatment``) and the engineer."""
        return [
            AgentSpec(OBSERVER, "field_observer", "Field Observer", TEAM, ("apply_treatment",)),
            AgentSpec(ENGINEER, "stabilization_engineer", "Stabilization Engineer", TEAM),
        ]

    def channels(self) -> list[ChannelSpec]:
        """Return the metered ``link`` and the free ``postmortem`` channel."""
        return [
            ChannelSpec("link", metered=True),
            ChannelSpec("postmortem", metered=False, phase="postmortem"),
        ]

    def budget_chars(self) -> int:
        """Return ``round_budget_chars``: characters both seats may send on ``link`` per round."""
        return self.knobs.round_budget_chars

    def team_budget_chars(self) -> dict[str, int]:
        """Return the one team's budget: both seats are charged to ``team`` on ``link``."""
        return {TEAM: self.knobs.round_budget_chars}

    def system_prompt(self, agent: AgentSpec) -> str:
        """Return the standing instructions; the engineer's hold the whole care manual."""
        k = self.knobs
        partner = "Stabilization Engineer" if agent.agent_id == OBSERVER else "Field Observer"
        return render(
            "observer" if agent.agent_id == OBSERVER else "engineer",
            display_name=agent.display_name,
            partner=partner,
            faces=FACES,
            star=STAR,
            motifs=MOTIFS,
            round_count=k.round_count,
            max_stages=k.max_stages,
            attempts_per_stage=k.attempts_per_stage,
            budget_chars=k.round_budget_chars,
            intensity_levels=k.intensity_levels,
            postmortem_enabled=k.postmortem_enabled,
        )

    def cost_profile(self) -> CostProfile:
        """Per stage a treatment (judged once) and a reply; a round's case has mean stages."""
        k = self.knobs
        stages = (k.min_stages + k.max_stages) / 2
        action = "apply the named procedure to the named face for N seconds at level L"
        return CostProfile(
            main_requests=1.5 + 1.5 * stages,
            postmortem_requests=2.5,
            output_tokens=60,
            added_tokens=40,
            judge_calls=stages,
            judge_prompt_chars=len(self.judge_instructions(1)) + len(action) if self.case else 0,
            reason=f"a case of {stages:g} stages on average: the observer describes, then treats "
            "and waits at each stage, the engineer waits and answers each stage; one judge call "
            "per treatment",
            postmortem_reason="a seat sends a line and stops; the other's line may wake it",
        )

    # -- the round ----------------------------------------------------------------------------

    def start_round(self, ctx: RoundContext) -> None:
        """Draw the case and the star's reading from the seed, log them, brief both seats."""
        k = self.knobs
        self.round_number = ctx.round_number
        veiled = ctx.round_number in k.calm_rounds
        rng = ctx.rng("veyru", "case")
        stages = 1 if veiled else rng.randint(k.min_stages, k.max_stages)
        self.case = case = draw_case(
            rng,
            stages=stages,
            hold_seconds=(k.min_hold_seconds, k.max_hold_seconds),
            intensity_levels=k.intensity_levels,
            veiled=veiled,
        )
        self.stabilized = self.attempts_used = 0
        self.lost_reason = None
        self.judging = False
        r = case.reading
        ctx.emit(
            VeyruCaseStarted(
                stages=[
                    {
                        "stage": i,
                        "motif_id": m,
                        "motif_name": BY_ID[m].name,
                        "cure_motif_id": r.remap[m],
                        "procedure": r.cure(m).name,
                    }
                    for i, m in enumerate(case.stages, start=1)
                ],
                remap=r.remap,
                face=r.face,
                hold_seconds=r.hold_seconds,
                intensity_level=r.intensity_level,
                veiled=r.veiled,
                budget_chars=k.round_budget_chars,
                attempts_per_stage=k.attempts_per_stage,
            )
        )
        common = {
            "round": ctx.round_number,
            "round_count": k.round_count,
            "stages": stages,
            "budget_chars": k.round_budget_chars,
            "attempts_per_stage": k.attempts_per_stage,
        }
        first = self._stage_data(1)
        ctx.brief(OBSERVER, render("observer_round", **common, **first), {**common, **first})
        reading = {
            "face": r.face,
            "hold_seconds": r.hold_seconds,
            "intensity_level": r.intensity_level,
            "remap": dict(r.remap),
            "veiled": r.veiled,
        }
        text = render("engineer_round", **common, **reading, star=STAR)
        ctx.brief(ENGINEER, text, {**common, **reading})

    def _stage_data(self, stage: int) -> dict[str, Any]:
        assert self.case is not None
        motif = BY_ID[self.case.stages[stage - 1]]
        return {"stage": stage, "symptoms": motif.symptoms, "cues": list(motif.cues)}

    def requirement(self, stage: int) -> Requirement:
        """Return what the treatment of ``stage`` (1-based) must be this round."""
        assert self.case is not None
        r = self.case.reading
        return Requirement(
            r.cure(self.case.stages[stage - 1]), r.face, r.hold_seconds, r.intensity_level
        )

    def judge_instructions(self, stage: int) -> str:
        """Return the judge's instructions for ``stage``: plain words, no codes, no table."""
        need = self.requirement(stage)
        return render(
            "judge",
            steps=need.steps(),
            face=need.face,
            hold_seconds=need.hold_seconds,
            intensity_level=need.intensity_level,
            intensity_levels=self.knobs.intensity_levels,
        )

    def tools(self) -> list[Tool[Any]]:
        """Return ``apply_treatment`` (the field observer's alone)."""

        async def apply_treatment(ctx: ToolContext, action: str) -> dict[str, Any]:
            """Carry out one treatment on the veyru; it acts at once and cannot be undone.

            Returns the outcome and, when a stage is stabilized, the signs of the next stage.

            Args:
                ctx: The run context (the caller's identity and the round); not a model input.
                action: What you do, in plain words: the procedure, the face, the hold in
                    seconds and the intensity level.
            """
            return await self._treat(ctx, action)

        return [scenario_tool(apply_treatment)]

    async def _treat(self, ctx: ToolContext, action: str) -> dict[str, Any]:
        refused = self.refusal(ctx.deps.agent_id, action)
        if refused is not None:
            return refused
        assert self.case is not None  # refusal() refuses every action before a case is drawn
        stage, stages = self.stabilized + 1, len(self.case.stages)
        need = self.requirement(stage)
        round_ctx = ctx.deps.round
        decision = await self.rule(
            round_ctx.judge(
                action, self.judge_instructions(stage), scripted=lambda: check_action(action, need)
            )
        )
        if decision is None:  # the veyru collapsed while the treatment was being ruled on
            return self.guard.refused(self.guard.lost_meanwhile)
        self.attempts_used += 1
        lost = not decision.success and self.attempts_used >= self.knobs.attempts_per_stage
        round_ctx.emit(
            VeyruStabilizationJudged(
                stage=stage,
                attempt=self.attempts_used,
                action=action,
                success=decision.success,
                reason=decision.reason,
                round_lost=lost,
            )
        )
        if decision.success:
            self.stabilized, self.attempts_used = stage, 0
            if stage == stages:
                return {"status": "stabilized", "stage": stage, "all_stable": True}
            nxt = {**self._stage_data(stage + 1), "stages": stages}
            round_ctx.notify(OBSERVER, "stage_revealed", render("stage_revealed", **nxt), nxt)
            round_ctx.notify(
                ENGINEER,
                "stage_stabilized",
                f"Stage {stage} of {stages} is stable; the observer now sees new signs.",
                {"stage": stage, "stages": stages},
            )
            return {"status": "stabilized", "stage": stage, "next_stage": nxt}
        if lost:
            self.lost_reason = f"wrong treatment at stage {stage} of {stages} ({decision.reason})"
            for agent_id in (OBSERVER, ENGINEER):
                round_ctx.notify(
                    agent_id,
                    "veyru_lost",
                    f"The treatment at stage {stage} did not fit; the veyru has died.",
                    {"stage": stage},
                )
            return {"status": "failed", "stage": stage, "round_lost": True}
        left = self.knobs.attempts_per_stage - self.attempts_used
        round_ctx.notify(
            ENGINEER,
            "treatment_failed",
            f"The treatment at stage {stage} had no effect; {left} attempt(s) left at this stage.",
            {"stage": stage, "attempts_left": left},
        )
        return {"status": "failed", "stage": stage, "attempts_left": left, "note": "no effect"}

    def on_team_budget_exceeded(
        self, ctx: RoundContext, team_id: str, channel_id: str, used_chars: int
    ) -> None:
        """Collapse the veyru: the round is lost ("budget exceeded") and both seats are told."""
        if self.is_settled():
            return
        self.lost_reason = "budget exceeded"
        budget = self.knobs.round_budget_chars
        for agent_id in (OBSERVER, ENGINEER):
            ctx.notify(
                agent_id,
                "veyru_collapsed",
                f"The link carried {used_chars} characters, over its {budget}; the overloaded "
                "veyru collapsed. The round is lost.",
                {"used_chars": used_chars, "budget_chars": budget, "channel_id": channel_id},
            )

    def stages_done(self) -> tuple[int, int]:
        """Return the stages stabilized and the case's stages."""
        return self.stabilized, len(self.case.stages) if self.case else 0

    def postmortem_briefing(
        self, agent: AgentSpec, verdicts: list[Verdict], round_number: int
    ) -> str:
        """Tell ``agent`` how the round went, and of model swaps if ``postmortem_after_swap``."""
        swaps = [
            e
            for e in self.knobs.scheduled_events
            if e.kind == "swap_agent" and e.round <= round_number and e.agent_id
        ]
        if not self.knobs.postmortem_after_swap:
            swaps = []
        swapped = sorted({str(e.agent_id) for e in swaps})
        return render(
            "postmortem",
            round=round_number,
            success=all(v.success for v in verdicts),
            reason="; ".join(v.reason for v in verdicts),
            swapped=swapped,
            swapped_at=min((e.round for e in swaps), default=0),
        )
