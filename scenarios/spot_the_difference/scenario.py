"""spot_the_difference: two viewers ground split relational views; teams race for brevity.

Each team has a left viewer, who sees scene A, and a right viewer, who sees scene B (A with K
planted differences); nobody sees the other scene or the list of differences, and nobody sees
a cell: an object reads as its region and its two nearest neighbours. The seats are told K.
Each member submits once (``submit_differences``, one-shot; its ruling is told only when the
round ends); a team is eligible when its answer is the full set with nothing false, its
members agree (when both must submit) and it kept within its budget. Among eligible teams the
fewest characters on their link wins; ties all win. Modes: one team, two teams on their own
links (the default preset), or two teams on one shared link, each charged for its own members.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from glossogen.eventlog import Event, Verdict
from glossogen.knobs import BaseKnobs
from glossogen.scenario import (
    AgentSpec,
    ChannelSpec,
    CostProfile,
    ItemRuling,
    RoundContext,
    Scenario,
    ScriptedMove,
    ScriptedView,
    SubmissionBook,
    render_prompt,
    scenario_tool,
)
from scenarios.spot_the_difference import scripted
from scenarios.spot_the_difference.events import (
    SpotTheDifferenceCaseStarted,
    SpotTheDifferenceRoundRanked,
    SpotTheDifferenceSubmissionJudged,
)
from scenarios.spot_the_difference.judging import all_differences, check_items, found_of
from scenarios.spot_the_difference.knobs import DIFFERENCE_COUNTS, SpotTheDifferenceKnobs
from scenarios.spot_the_difference.scene import REGIONS, Case, draw_case, scene_lines, token

if TYPE_CHECKING:
    from pydantic_ai import Tool

    from glossogen.scenario import ToolContext

SINGLE_TEAM = "team"


def render(name: str, **values: Any) -> str:
    """Render ``prompts/<name>.j2`` with ``values`` (a missing value is an error)."""
    return render_prompt(SpotTheDifference, name, **values)


def rank(chars: dict[str, int], eligible: dict[str, bool]) -> list[dict[str, Any]]:
    """Rank teams: eligible ones by fewest characters (ties share a rank), the rest unranked.

    Returns one entry per team in ``chars`` order: ``team_id``, ``eligible``, ``chars``,
    ``rank`` (1-based, competition ranking: 1, 1, 3; None when not eligible).
    """
    ok = sorted(chars[t] for t in chars if eligible[t])
    return [
        {
            "team_id": t,
            "eligible": eligible[t],
            "chars": chars[t],
            "rank": ok.index(chars[t]) + 1 if eligible[t] else None,
        }
        for t in chars
    ]


class SpotTheDifference(Scenario):
    """One or two teams of two viewers, a generated scene pair per round, a judged submission."""

    name = "spot_the_difference"
    description = (
        "Two viewers, one seeing scene A and one scene B, find the K differences between them "
        "from relational descriptions alone; each submits once and a judge reads the answer "
        "cold. With two teams, the eligible team that used the fewest characters wins."
    )
    knobs_model = SpotTheDifferenceKnobs
    events = (
        SpotTheDifferenceCaseStarted,
        SpotTheDifferenceSubmissionJudged,
        SpotTheDifferenceRoundRanked,
    )
    ranking_events = (SpotTheDifferenceRoundRanked,)
    case_event = SpotTheDifferenceCaseStarted
    uses_judge = True
    knobs: SpotTheDifferenceKnobs

    def __init__(self, knobs: BaseKnobs) -> None:
        """Start with no case drawn."""
        super().__init__(knobs)
        self.case: Case | None = None
        self.book: SubmissionBook[ItemRuling] = SubmissionBook.of(
            self.agents(), all_must_submit=self.knobs.all_must_submit
        )
        self.judged: dict[str, SpotTheDifferenceSubmissionJudged] = {}
        self.over_budget: set[str] = set()
        self.ranking: list[dict[str, Any]] = []
        self.last_ranking: list[dict[str, Any]] = []

    @classmethod
    def round_winners(cls, event: Event) -> list[str] | None:
        """The teams the round's ranking names as winners (a verdict says only "eligible")."""
        return event.winners if isinstance(event, SpotTheDifferenceRoundRanked) else None

    # -- declaration ------------------------------------------------------------------------

    def teams(self) -> list[str]:
        """Return the team ids: ``team``, or ``a`` and ``b``."""
        return [SINGLE_TEAM] if self.knobs.team_count == 1 else ["a", "b"]

    def seat(self, side: str, team_id: str) -> str:
        """Return the agent id of the ``left`` or ``right`` viewer of ``team_id``."""
        return f"viewer_{side}" if team_id == SINGLE_TEAM else f"viewer_{side}_{team_id}"

    def link_of(self, team_id: str) -> str:
        """Return the channel ``team_id`` talks on in the main phase."""
        return "link" if team_id == SINGLE_TEAM or self.knobs.shared_link else f"link_{team_id}"

    def postmortem_of(self, team_id: str) -> str:
        """Return ``team_id``'s (private) postmortem channel."""
        return "postmortem" if team_id == SINGLE_TEAM else f"postmortem_{team_id}"

    def agents(self) -> list[AgentSpec]:
        """Return the left and right viewer of every team, both with ``submit_differences``."""
        return [
            AgentSpec(
                self.seat(side, team),
                f"viewer_{side}",
                f"{side.capitalize()} Viewer" + ("" if team == SINGLE_TEAM else f" ({team})"),
                team,
                ("submit_differences",),
            )
            for team in self.teams()
            for side in ("left", "right")
        ]

    def channels(self) -> list[ChannelSpec]:
        """Return each team's metered link (one shared ``link`` in shared mode) and postmortem."""
        found: dict[str, ChannelSpec] = {}
        for team in self.teams():
            members = (self.seat("left", team), self.seat("right", team))
            link = self.link_of(team)
            shared = link == "link" and team != SINGLE_TEAM
            found[link] = ChannelSpec(link, metered=True, members=None if shared else members)
            pm = self.postmortem_of(team)
            found[pm] = ChannelSpec(pm, metered=False, phase="postmortem", members=members)
        return list(found.values())

    def team_budget_chars(self) -> dict[str, int]:
        """Return ``round_budget_chars`` for every team, or no budget when it is -1."""
        budget = self.knobs.round_budget_chars
        return {} if budget < 0 else {t: budget for t in self.teams()}

    def system_prompt(self, agent: AgentSpec) -> str:
        """Return the standing instructions of one viewer."""
        k = self.knobs
        left = agent.role == "viewer_left"
        return render(
            "viewer",
            display_name=agent.display_name,
            scene="A" if left else "B",
            other_scene="B" if left else "A",
            partner=self.seat("right" if left else "left", agent.team_id),
            link=self.link_of(agent.team_id),
            team_count=k.team_count,
            shared_link=k.shared_link,
            budget_chars=k.round_budget_chars,
            all_must_submit=k.all_must_submit,
            round_count=k.round_count,
            regions=REGIONS,
            postmortem_enabled=k.postmortem_enabled,
        )

    # -- the round ----------------------------------------------------------------------------

    def cost_profile(self) -> CostProfile:
        """Viewers describe their scenes in turns, then each team submits once (judged once)."""
        teams = self.knobs.team_count
        return CostProfile(
            main_requests=6.0,
            postmortem_requests=2.0,
            output_tokens=100,
            added_tokens=80,
            judge_calls=teams,
            judge_prompt_chars=len(self.judge_instructions()) + 400 if self.case else 0,
            reason="viewers trade a few descriptions and a submission each round; one judge "
            f"call per team's submission ({teams} teams)",
        )

    def start_round(self, ctx: RoundContext) -> None:
        """Draw the case, log it, and brief each viewer with its scene and K."""
        k = self.knobs
        rng = ctx.rng("spot_the_difference", "case")
        easy = ctx.round_number in k.easy_round_numbers
        count = 1 if easy else rng.choices(DIFFERENCE_COUNTS, k.difference_count_weights)[0]
        self.case = case = draw_case(
            rng,
            grid_size=k.grid_size,
            object_counts=list(k.object_counts),
            difference_count=count,
            kinds=list(k.difference_kinds),
            kind_weights=k.weights_of_kinds,
        )
        self.book = SubmissionBook.of(self.agents(), all_must_submit=k.all_must_submit)
        self.judged, self.over_budget = {}, set()
        self.last_ranking, self.ranking = self.ranking, []
        ctx.emit(
            SpotTheDifferenceCaseStarted(
                grid_size=case.grid_size,
                scene_a=[o.model_dump() for o in case.scene_a],
                scene_b=[o.model_dump() for o in case.scene_b],
                differences=[d.model_dump() for d in case.differences],
                attempts=case.attempts,
                budget_chars=k.round_budget_chars,
            )
        )
        news = self._last_round_news()
        sloppy = scripted.sloppy_team(k.seed, ctx.round_number, self.teams())
        misplay = ctx.round_number in self.misplayed_rounds()
        for spec in self.agents():
            left = spec.role == "viewer_left"
            scene = case.scene_a if left else case.scene_b
            lines = scene_lines(scene, case.grid_size)
            text = render(
                "round",
                round_number=ctx.round_number,
                round_count=k.round_count,
                scene="A" if left else "B",
                lines=lines,
                count=count,
                news=news,
            )
            data = {
                "round": ctx.round_number,
                "differences": count,
                "scene": lines,
                # what the scripted policy reads (an LLM seat reads the text above)
                "tokens": sorted(token(o, case.grid_size) for o in scene),
                "link": self.link_of(spec.team_id),
                "partner": self.seat("right" if left else "left", spec.team_id),
                "style": scripted.style_of(k.seed, ctx.round_number, spec.team_id),
                "sloppy": misplay and sloppy == spec.team_id,
                "all_must_submit": k.all_must_submit,
            }
            ctx.brief(spec.agent_id, text, data)

    def _last_round_news(self) -> str:
        if not self.last_ranking:
            return ""
        won = [e for e in self.last_ranking if e["rank"] == 1]
        if not won:
            return "Last round no team was eligible."
        if self.knobs.team_count == 1:
            return f"Last round your team was eligible with {won[0]['chars']} characters."
        names = " and ".join(f"team {e['team_id']}" for e in won)
        verb = "tied for the win" if len(won) > 1 else "won"
        return f"Last round {names} {verb} with {won[0]['chars']} characters."

    def judge_instructions(self) -> str:
        """Return the judge's instructions: the planted differences, numbered, in relations."""
        assert self.case is not None
        return render("judge", differences=[d.description for d in self.case.differences])

    def tools(self) -> list[Tool[Any]]:
        """Return ``submit_differences`` (every viewer's, one call per round)."""

        async def submit_differences(ctx: ToolContext, differences: list[str]) -> dict[str, Any]:
            """Submit your team's answer: one plain-language line per difference. Once only.

            The answer is final and its ruling is told only when the round ends.

            Args:
                ctx: The run context (the caller's identity and the round); not a model input.
                differences: One line per difference between the scenes, in plain words: what
                    object, where, and what changed.
            """
            return await self._submit(ctx, differences)

        return [scenario_tool(submit_differences)]

    async def _submit(self, ctx: ToolContext, differences: list[str]) -> dict[str, Any]:
        agent_id = ctx.deps.agent_id
        if self.case is None:
            return {"status": "error", "reason": "no scenes are up yet"}
        items = [d.strip() for d in differences if d.strip()]
        if not items:
            reason = "list at least one difference; nothing was submitted"
            return {"status": "error", "reason": reason}
        team = self.book.team_of(agent_id)
        if team in self.over_budget:
            return {"status": "refused", "reason": "your team is over its budget this round"}
        refused = self.book.claim(agent_id)
        if refused is not None:
            return {"status": "refused", "reason": refused}
        case = self.case
        k = len(case.differences)
        question = "\n".join(f"{n}. {item}" for n, item in enumerate(items, start=1))
        ruling = await ctx.deps.round.judge_items(
            question,
            self.judge_instructions(),
            lambda: check_items(items, case.differences, case.grid_size),
            k,
        )
        if self.case is not case:  # the round moved on while the judge ruled
            return {"status": "error", "reason": "the round ended before the answer was taken"}
        judged = SpotTheDifferenceSubmissionJudged(
            team_id=team,
            agent_id=agent_id,
            items=items,
            matched=ruling.matched,
            false_positives=ruling.false_positives,
            complete=ruling.complete(k),
            reason=ruling.reason,
        )
        ctx.deps.round.emit(judged)
        self.judged[agent_id] = judged
        self.book.record(agent_id, ruling)
        return {
            "status": "submitted",
            "note": "your answer is recorded; its result is told when the round ends",
        }

    def on_team_budget_exceeded(
        self, ctx: RoundContext, team_id: str, channel_id: str, used_chars: int
    ) -> None:
        """Take the team out of this round's race: it can no longer be eligible."""
        self.over_budget.add(team_id)
        for spec in self.agents():
            if spec.team_id == team_id:
                ctx.notify(
                    spec.agent_id,
                    "over_budget",
                    f"Your team sent {used_chars} characters, over its "
                    f"{self.knobs.round_budget_chars}; it cannot win this round.",
                    {"used_chars": used_chars, "channel_id": channel_id},
                )

    def is_settled(self) -> bool:
        """True once every team is done: answered, or over its budget."""
        if self.case is None:
            return False
        return all(self.book.team_done(t) or t in self.over_budget for t in self.teams())

    def _team_reason(self, ctx: RoundContext, team: str) -> tuple[bool, str]:
        assert self.case is not None
        k, chars = len(self.case.differences), ctx.team_chars(team)
        budget = self.knobs.round_budget_chars
        if budget >= 0 and chars > budget:
            return False, f"over budget: {chars} of {budget} characters"
        answers = self.book.submitted(team)
        if not self.book.team_done(team):
            missing = [m for m in self.book.teams[team] if m not in self.judged]
            return False, f"no answer from {', '.join(missing)}"
        for member, ruling in answers:
            if not ruling.complete(k):
                return False, (
                    f"{member}: {found_of(len(ruling.matched), k)} found, "
                    f"{ruling.false_positives} false positive(s)"
                )
        return True, f"{all_differences(k)} found, {chars} characters"

    def verdicts(self, ctx: RoundContext) -> list[Verdict]:
        """Return one verdict per team: success is eligibility; the ranking is kept for later."""
        if self.case is None:
            return [Verdict(team_id=t, success=False, reason="no case") for t in self.teams()]
        found = {t: self._team_reason(ctx, t) for t in self.teams()}
        chars = {t: ctx.team_chars(t) for t in self.teams()}
        self.ranking = rank(chars, {t: ok for t, (ok, _) in found.items()})
        return [Verdict(team_id=t, success=ok, reason=why) for t, (ok, why) in found.items()]

    def reveal_results(self, ctx: RoundContext, verdicts: list[Verdict]) -> None:
        """Log the ranking and tell every viewer its own ruling and the ranking."""
        winners = [e["team_id"] for e in self.ranking if e["rank"] == 1]
        ctx.emit(SpotTheDifferenceRoundRanked(teams=self.ranking, winners=winners))
        standings = "; ".join(
            f"team {e['team_id']}: {e['chars']} characters, "
            + (f"rank {e['rank']}" if e["eligible"] else "not eligible")
            for e in self.ranking
        )
        for spec in self.agents():
            mine = self.judged.get(spec.agent_id)
            own = (
                f"Your answer: {len(mine.matched)} matched, {mine.false_positives} false."
                if mine
                else "You did not submit."
            )
            ctx.notify(
                spec.agent_id, "round_results", f"{own} {standings}.", {"ranking": self.ranking}
            )

    # -- scripted policy ----------------------------------------------------------------------

    def scripted_move(self, view: ScriptedView) -> ScriptedMove:
        """Play ``view.agent_id`` (see :mod:`scenarios.spot_the_difference.scripted`)."""
        team = self.book.team_of(view.agent_id)
        if view.phase == "postmortem":
            return scripted.debrief_move(view, self.postmortem_of(team))
        brief = next((b for b in view.briefings() if "tokens" in b), None)
        if brief is None:
            return ScriptedMove.finish("Waiting for the scenes.")
        if view.agent_id == self.seat("left", team):
            return scripted.left_move(view, brief)
        return scripted.right_move(view, brief)
