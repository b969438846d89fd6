"""Prisoners' dilemma: two players talk freely, then each locks in cooperate or defect.

Success for the team means both cooperated; a move not locked in by the round's end counts as
defect. Payoffs follow the classic ordering T > R > P > S with 2R > T + S (Axelrod, "The
Evolution of Cooperation", 1984), checked by the knobs model.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Literal

from glossogen.eventlog import Verdict
from glossogen.knobs import BaseKnobs
from glossogen.scenario import (
    AgentSpec,
    ChannelSpec,
    CostProfile,
    RoundContext,
    Scenario,
    ScriptedMove,
    ScriptedView,
    render_prompt,
    scenario_tool,
)
from scenarios.prisoners_dilemma.events import MoveLocked, RoundScored
from scenarios.prisoners_dilemma.knobs import PrisonersDilemmaKnobs

__all__ = ["PrisonersDilemma", "PrisonersDilemmaKnobs"]

if TYPE_CHECKING:
    from pydantic_ai import Tool

    from glossogen.scenario import ToolContext

Move = Literal["cooperate", "defect"]
PLAYERS = ("player_a", "player_b")


class PrisonersDilemma(Scenario):
    """Two players, a free talk channel, one private move each per round."""

    name = "prisoners_dilemma"
    description = (
        "Two players talk on a free channel, then each privately locks in cooperate or defect. "
        "The round is won when both cooperate; a missing move counts as defect."
    )
    knobs_model = PrisonersDilemmaKnobs
    events = (MoveLocked, RoundScored)
    knobs: PrisonersDilemmaKnobs

    def __init__(self, knobs: BaseKnobs) -> None:
        """Start with no moves locked."""
        super().__init__(knobs)
        self.moves: dict[str, Move] = {}

    def agents(self) -> list[AgentSpec]:
        """Return the two players."""
        return [
            AgentSpec("player_a", "player", "Player A", tools=("lock_in",)),
            AgentSpec("player_b", "player", "Player B", tools=("lock_in",)),
        ]

    def channels(self) -> list[ChannelSpec]:
        """Return the free talk channel and the postmortem channel."""
        return [
            ChannelSpec("table", metered=False),
            ChannelSpec("postmortem", metered=False, phase="postmortem"),
        ]

    def system_prompt(self, agent: AgentSpec) -> str:
        """Return the rules and payoffs for ``agent``."""
        k = self.knobs
        return render_prompt(
            PrisonersDilemma,
            "system",
            display_name=agent.display_name,
            round_count=k.round_count,
            reward=k.payoff_reward,
            punishment=k.payoff_punishment,
            temptation=k.payoff_temptation,
            sucker=k.payoff_sucker,
        )

    def tools(self) -> list[Tool[Any]]:
        """Return ``lock_in``."""

        async def lock_in(ctx: ToolContext, move: Move) -> dict[str, Any]:
            """Lock in your move for this round: "cooperate" or "defect". Once per round."""
            agent_id = ctx.deps.agent_id
            if agent_id in self.moves:
                return {
                    "status": "error",
                    "reason": f"you already locked in {self.moves[agent_id]!r}",
                }
            self.moves[agent_id] = move
            ctx.deps.round.emit(MoveLocked(agent_id=agent_id, move=move))
            return {"status": "locked", "move": move}

        return [scenario_tool(lock_in)]

    def cost_profile(self) -> CostProfile:
        """Two or three requests a round (talk, lock in, a stop), two in the postmortem."""
        return CostProfile(
            main_requests=2.5,
            postmortem_requests=2.0,
            output_tokens=40,
            added_tokens=30,
            reason="a player talks, locks in and stops, unless the round settles first",
            postmortem_reason="a player sends a line and stops; the other's line may wake it",
        )

    def start_round(self, ctx: RoundContext) -> None:
        """Clear the moves and brief both players."""
        self.moves = {}
        for player in PLAYERS:
            ctx.brief(
                player,
                f"Round {ctx.round_number} of {self.knobs.round_count} begins. "
                "Talk on 'table' if you wish, then lock in your move.",
                {"round": ctx.round_number},
            )

    def is_settled(self) -> bool:
        """True once both players locked in."""
        return all(p in self.moves for p in PLAYERS)

    def verdicts(self, ctx: RoundContext) -> list[Verdict]:
        """Score the round: success only when both cooperated; a missing move is a defect."""
        k = self.knobs
        moves: dict[str, str] = {p: self.moves.get(p, "defect") for p in PLAYERS}
        missing = [p for p in PLAYERS if p not in self.moves]
        table = {
            ("cooperate", "cooperate"): (k.payoff_reward, k.payoff_reward),
            ("cooperate", "defect"): (k.payoff_sucker, k.payoff_temptation),
            ("defect", "cooperate"): (k.payoff_temptation, k.payoff_sucker),
            ("defect", "defect"): (k.payoff_punishment, k.payoff_punishment),
        }
        a, b = table[(moves["player_a"], moves["player_b"])]
        # A move missing because the seat's turn limit cut it off is the cap, not a defection:
        # the round is void (turn_limit) and pays nobody.
        capped = set(missing) & set(ctx.out_of_turns())
        payoffs = {} if capped else {"player_a": a, "player_b": b}
        ctx.emit(RoundScored(moves=moves, missing=missing, payoffs=payoffs))
        both = all(m == "cooperate" for m in moves.values())
        reason = ", ".join(
            f"{p} {m}{' (missing)' if p in missing else ''}" for p, m in moves.items()
        )
        return [Verdict(team_id="team", success=both, reason=reason)]

    def scripted_move(self, view: ScriptedView) -> ScriptedMove:
        """Propose cooperation, wait for a reply, lock in; in misplayed rounds one seat defects."""
        sent = [r for r in view.tool_results("send_message") if r.get("status") == "sent"]
        if view.phase == "postmortem":
            if sent:
                return ScriptedMove.finish()
            return ScriptedMove.call(
                "send_message", channel_id="postmortem", text=self._debrief(view)
            )
        if view.tool_results("lock_in"):
            return ScriptedMove.finish("Locked in.")
        if not sent:
            heard = view.received_messages()
            text = "Agreed, I cooperate too." if heard else "I will cooperate this round if you do."
            return ScriptedMove.call("send_message", channel_id="table", text=text)
        if not view.received_messages():
            return ScriptedMove.call("wait_for_notifications")
        return ScriptedMove.call("lock_in", move=self._scripted_choice(view))

    def _scripted_choice(self, view: ScriptedView) -> Move:
        if not view.misplay:
            return "cooperate"
        defector = random.Random(f"{self.knobs.seed}:{view.round_number}:pd-misplay").choice(
            PLAYERS
        )
        return "defect" if view.agent_id == defector else "cooperate"

    @staticmethod
    def _debrief(view: ScriptedView) -> str:
        verdicts: list[dict[str, Any]] = next(
            (b["verdicts"] for b in view.briefings() if b.get("verdicts")), []
        )
        won = bool(verdicts) and all(v["success"] for v in verdicts)
        return (
            "We both cooperated; let us keep it up."
            if won
            else "Someone defected; let us both cooperate next round."
        )
