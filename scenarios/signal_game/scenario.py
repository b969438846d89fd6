"""signal_game: a Lewis signalling game between two seats, one message per target.

Each round one seat is the sender and the other the receiver (the roles swap every
``role_swap_every`` rounds). A round plays ``targets_per_round`` targets one at a time: the
sender sees the target's attributes, the receiver sees ``candidate_count`` candidates in its own
shuffled order under its own labels, the sender sends exactly one message on the metered
``link`` and the receiver calls ``choose(label)``; the next target is revealed only then. The
round is won when at least ``pass_share`` of its targets were chosen correctly; passing the
link budget (``chars_per_target`` times the targets) ends it lost. No judge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from scenarios.signal_game import scripted
from scenarios.signal_game.events import (
    SignalGameChoiceMade,
    SignalGameRolesAssigned,
    SignalGameTargetRevealed,
)
from scenarios.signal_game.knobs import SignalGameKnobs
from scenarios.signal_game.space import ATTRIBUTES, Target, draw_target, words

if TYPE_CHECKING:
    from pydantic_ai import Tool

    from glossogen.scenario import ToolContext

AGENT_A, AGENT_B = "agent_a", "agent_b"
TEAM = "pair"
LINK = "link"


def render(name: str, **values: Any) -> str:
    """Render ``prompts/<name>.j2`` with ``values`` (a missing value is an error)."""
    return render_prompt(SignalGame, name, **values)


def sender_of(round_number: int, swap_every: int) -> str:
    """Return who sends in ``round_number``: agent_a first, swapping every ``swap_every`` rounds."""
    if swap_every == 0:
        return AGENT_A
    return AGENT_A if ((round_number - 1) // swap_every) % 2 == 0 else AGENT_B


class SignalGame(Scenario):
    """Two seats, a sender and a receiver, a referential game of one message per target."""

    name = "signal_game"
    description = (
        "A Lewis signalling game: the sender sees a target object's attributes and sends one "
        "short message; the receiver picks the target among distractors shown in its own order "
        "under its own labels. Roles swap between rounds."
    )
    knobs_model = SignalGameKnobs
    events = (SignalGameRolesAssigned, SignalGameTargetRevealed, SignalGameChoiceMade)
    knobs: SignalGameKnobs

    def __init__(self, knobs: BaseKnobs) -> None:
        """Start with no round open."""
        super().__init__(knobs)
        self.sender = AGENT_A
        self.receiver = AGENT_B
        self.targets: list[Target] = []
        self.current = 0
        """1-based number of the target in play (0 before the round)."""
        self.messages: dict[int, str] = {}
        self.correct = 0
        self.lost_reason: str | None = None

    def agents(self) -> list[AgentSpec]:
        """Return ``agent_a`` and ``agent_b``: either may send or receive, both have ``choose``.

        Each seat's ``role`` is its first round's role (``agent_a`` sends first), so the
        export's ``agent_role.<id>`` says who opened as sender; later rounds' roles are logged
        as ``signal_game_roles_assigned``.
        """
        return [
            AgentSpec(AGENT_A, "sender", "Agent A", TEAM, ("choose",)),
            AgentSpec(AGENT_B, "receiver", "Agent B", TEAM, ("choose",)),
        ]

    def channels(self) -> list[ChannelSpec]:
        """Return the metered ``link`` and the free ``postmortem``."""
        return [
            ChannelSpec(LINK, metered=True),
            ChannelSpec("postmortem", metered=False, phase="postmortem"),
        ]

    def budget_chars(self) -> int:
        """Return the round's link budget (``chars_per_target * targets_per_round``)."""
        return self.knobs.round_budget_chars

    def launch_warnings(self) -> list[str]:
        """Warn when the agents may call tools in parallel (the presets turn that off)."""
        if self.knobs.agent_model_settings.parallel_tool_calls is False:
            return []
        return [
            "signal_game: agent_model_settings.parallel_tool_calls is not false, so a model "
            "may send and choose in one response; the presets set it to false"
        ]

    def system_prompt(self, agent: AgentSpec) -> str:
        """Return the standing rules (the same for both seats: roles change by round)."""
        k = self.knobs
        return render(
            "player",
            display_name=agent.display_name,
            round_count=k.round_count,
            targets=k.targets_per_round,
            candidates=k.candidate_count,
            attributes=[
                (name, values[: k.values_per_attribute])
                for name, values in ATTRIBUTES[: k.attributes]
            ],  # fmt: skip
            budget_chars=k.round_budget_chars,
            pass_share_percent=round(k.pass_share * 100),
            postmortem_enabled=k.postmortem_enabled,
        )

    # -- the round ----------------------------------------------------------------------------

    def cost_profile(self) -> CostProfile:
        """Per target the sender sends one message and the receiver chooses once."""
        targets = self.knobs.targets_per_round
        return CostProfile(
            main_requests=1 + 2 * targets,
            postmortem_requests=2.0,
            output_tokens=40,
            added_tokens=60,
            reason=f"{targets} targets a round: per target the sender sends and waits, the "
            "receiver waits and chooses",
        )

    def start_round(self, ctx: RoundContext) -> None:
        """Assign roles, draw the round's targets, reveal the first."""
        k = self.knobs
        self.sender = sender_of(ctx.round_number, k.role_swap_every)
        self.receiver = AGENT_B if self.sender == AGENT_A else AGENT_A
        rng = ctx.rng("signal_game", "targets")
        self.targets = [
            draw_target(
                rng,
                attributes=k.attributes,
                values=k.values_per_attribute,
                candidates=k.candidate_count,
                overlap=k.distractor_overlap,
            )
            for _ in range(k.targets_per_round)
        ]
        self.current, self.messages, self.correct, self.lost_reason = 1, {}, 0, None
        ctx.emit(SignalGameRolesAssigned(sender_id=self.sender, receiver_id=self.receiver))
        self._log_target(ctx)
        opening = f"Round {ctx.round_number} of {k.round_count}."
        common = {"round": ctx.round_number, "budget_chars": k.round_budget_chars}
        sender = self._sender_view()
        ctx.brief(
            self.sender,
            f"{opening} You are the sender. {sender['text']}",
            {**common, "role": "sender", **sender},
        )
        receiver = self._receiver_view()
        ctx.brief(
            self.receiver,
            f"{opening} You are the receiver. {receiver['text']}",
            {**common, "role": "receiver", **receiver},
        )

    def _target(self) -> Target:
        return self.targets[self.current - 1]

    def _sender_view(self) -> dict[str, Any]:
        attrs = words(tuple(self._target().target))
        said = ", ".join(f"{name} {value}" for name, value in attrs.items())
        text = f"Target {self.current} of {len(self.targets)}: {said}. Send one message on link."
        return {"target": self.current, "target_attributes": attrs, "text": text}

    def _receiver_view(self) -> dict[str, Any]:
        t = self._target()
        pairs = [(label, words(tuple(c))) for label, c in zip(t.labels, t.candidates, strict=True)]
        shown = [{"label": label, "attributes": attrs} for label, attrs in pairs]
        lines = "; ".join(f"{label}: {' '.join(attrs.values())}" for label, attrs in pairs)
        text = (
            f"Target {self.current} of {len(self.targets)}. Candidates: {lines}. Wait for the "
            "sender's message, then choose(label)."
        )
        return {"target": self.current, "candidates": shown, "text": text}

    def _log_target(self, ctx: RoundContext) -> None:
        t = self._target()
        ctx.emit(
            SignalGameTargetRevealed(
                target=self.current,
                attributes=words(tuple(t.target)),
                candidates=[
                    {"label": label, "attributes": words(tuple(c))}
                    for label, c in zip(t.labels, t.candidates, strict=True)
                ],
                answer=t.answer,
            )
        )

    def refuse_message(
        self, ctx: RoundContext, agent_id: str, channel_id: str, text: str
    ) -> str | None:
        """Allow the sender one message per target on ``link``; the receiver only chooses.

        A message let through is the target's message (nobody else writes on ``link``, so the
        send that follows cannot meet a conflict).
        """
        if channel_id != LINK or ctx.phase != "main":
            return None
        if self.is_settled():
            return "the round is over; nothing was sent"
        if agent_id != self.sender:
            return "you are the receiver this round: you do not speak on link, choose(label)"
        if self.current in self.messages:
            return (
                f"you already sent your one message for target {self.current}; wait for the "
                "receiver's choice"
            )
        self.messages[self.current] = text
        return None

    def tools(self) -> list[Tool[Any]]:
        """Return ``choose`` (the receiver's, each target once)."""

        async def choose(ctx: ToolContext, label: str) -> dict[str, Any]:
            """Choose the candidate you think the sender means, by its label. Once per target.

            Args:
                ctx: The run context (the caller's identity and the round); not a model input.
                label: The label of the candidate you choose.
            """
            return self._choose(ctx, label)

        return [scenario_tool(choose)]

    def _choose(self, ctx: ToolContext, label: str) -> dict[str, Any]:
        round_ctx = ctx.deps.round
        if ctx.deps.agent_id != self.receiver:
            return {"status": "refused", "reason": "you are the sender this round; send on link"}
        if self.is_settled():
            return {"status": "refused", "reason": "the round is over", "round_over": True}
        if self.current not in self.messages:
            return {
                "status": "refused",
                "reason": f"no message for target {self.current} yet; wait for the sender",
            }
        t = self._target()
        if label not in t.labels:
            return {"status": "error", "reason": f"no candidate is labelled {label!r}"}
        correct = label == t.answer
        self.correct += correct
        message = self.messages[self.current]
        round_ctx.emit(
            SignalGameChoiceMade(
                target=self.current,
                chosen=label,
                correct=correct,
                chars_used=len(message),
                message=message,
                attributes=words(tuple(t.target)),
            )
        )
        outcome = "right" if correct else "wrong"
        reply: dict[str, Any] = {"status": "chosen", "correct": correct}
        if self.current == len(self.targets):
            self.current += 1
            reply["round_over"] = True
            round_ctx.notify(self.sender, "round_over", f"The choice was {outcome}. Round over.")
            return reply
        self.current += 1
        self._log_target(round_ctx)
        nxt = self._sender_view()
        round_ctx.notify(
            self.sender,
            "next_target",
            f"The choice was {outcome}. {nxt['text']}",
            {"target_attributes": nxt["target_attributes"], "target": self.current},
        )
        reply["next"] = self._receiver_view()
        return reply

    def on_budget_exceeded(self, ctx: RoundContext, channel_id: str, used_chars: int) -> None:
        """End the round lost; both seats are told."""
        if self.is_settled():
            return
        budget = self.knobs.round_budget_chars
        self.lost_reason = f"budget exceeded: {used_chars} of {budget} characters"
        for agent_id in (AGENT_A, AGENT_B):
            ctx.notify(agent_id, "round_over", f"The link passed its {budget} characters.")

    def is_settled(self) -> bool:
        """True once every target was chosen for, or the budget was passed."""
        return self.lost_reason is not None or (
            bool(self.targets) and self.current > len(self.targets)
        )

    def verdicts(self, ctx: RoundContext) -> list[Verdict]:
        """Won when at least ``pass_share`` of the targets were chosen correctly."""
        n = len(self.targets)
        if self.lost_reason is not None:
            return [Verdict(team_id=TEAM, success=False, reason=self.lost_reason)]
        won = n > 0 and self.correct >= self.knobs.pass_share * n
        played = min(self.current - 1, n)
        reason = f"{self.correct} of {n} targets chosen correctly"
        if played < n:
            reason += f" ({n - played} not played)"
        return [Verdict(team_id=TEAM, success=won, reason=reason)]

    def scripted_move(self, view: ScriptedView) -> ScriptedMove:
        """Play ``view.agent_id`` (see :mod:`scenarios.signal_game.scripted`)."""
        if view.phase == "postmortem":
            return scripted.debrief_move(view)
        role = next((b["role"] for b in view.briefings() if "role" in b), None)
        if role == "sender":
            return scripted.sender_move(view)
        if role == "receiver":
            return scripted.receiver_move(view)
        return ScriptedMove.finish("Waiting.")
