"""What staged, judged scenarios share: stage progress, hidden codes, and a judge with votes.

- :class:`StageProgress` walks a case stage by stage (1-based), counting the attempts at the
  current stage; a scenario reveals the next stage privately when :meth:`StageProgress.accept`
  says there is one.
- :class:`Code` marks a field of a case model (a pydantic model) as an answer-key code: a fault
  id, a table key, a variant index. :func:`hidden_codes` collects how those codes read in text,
  and :func:`judge_by_majority` refuses to send a judge prompt that contains one, so the judge
  can only read an action as plain language.
- :func:`judge_by_majority` asks the run's judge ``votes`` times (each call logged as
  ``judge_called`` with its cost, the scripted judge's too) and rules by majority.
- :class:`StagedScenario` is the base of a scenario whose one team works a case stage by stage
  with one judged action tool: when the round is settled, the team's verdict, the tool's
  refusals (:class:`ActionGuard`) and the scripted seats' dispatch (:class:`ScriptedPolicies`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel

from glossogen.eventlog import Verdict
from glossogen.knobs import BaseKnobs
from glossogen.scenario._contract import (
    JudgeDecision,
    RoundContext,
    Scenario,
    ScriptedMove,
    ScriptedView,
)

T = TypeVar("T")


@dataclass(frozen=True)
class Code:
    """Marks a case field as a hidden code (``Annotated[str, Code()]``).

    Attributes:
        template: How the value reads in text, ``{}`` standing for the value (``"variant {}"``
            for an index, so a bare digit in a prompt is not taken for the code).
    """

    template: str = "{}"


def hidden_codes(model: BaseModel) -> frozenset[str]:
    """Return every code of ``model`` as it reads in text, looking into nested models and lists.

    A field is a code when its annotation carries :class:`Code`; the value (each item of a list,
    each key of a dict) is rendered through the marker's ``template``.
    """
    return frozenset().union(*hidden_fields(model).values())


def hidden_fields(model: BaseModel) -> dict[str, frozenset[str]]:
    """Return each :class:`Code` field of ``model`` by its dotted name, with its codes as text.

    Nested models (alone, in lists, as dict values) are looked into: ``stages.fault_id`` is
    the ``fault_id`` code of every stage. A field with no value to show is left out.
    """
    found: dict[str, set[str]] = {}
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        marker = next((m for m in info.metadata if isinstance(m, Code)), None)
        if marker is not None:
            found.setdefault(name, set()).update(marker.template.format(v) for v in _leaves(value))
        for nested in _models(value):
            for inner, codes in hidden_fields(nested).items():
                found.setdefault(f"{name}.{inner}", set()).update(codes)
    return {name: frozenset(codes) for name, codes in found.items() if codes}


def _leaves(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        return list(value)
    if isinstance(value, list | tuple | set | frozenset):
        return list(value)
    return [value]


def _models(value: Any) -> Iterable[BaseModel]:
    if isinstance(value, BaseModel):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, BaseModel)]
    return []


class CodeLeakError(ValueError):
    """A judge prompt contained a hidden code of the case (a scenario bug, never sent)."""


def codes_in(text: str, codes: Iterable[str]) -> list[str]:
    """Return the codes of ``codes`` that ``text`` contains as whole words (case-insensitive)."""
    return sorted(
        c for c in codes if re.search(r"(?<!\w)" + re.escape(c) + r"(?!\w)", text, re.IGNORECASE)
    )


@dataclass
class StageProgress:
    """Where a staged case stands: the current stage (1-based), of ``total``, and its attempts.

    Attributes:
        total: Stages in the case; the agents are not told it.
        accepted: Stages already accepted.
        attempts: Attempts made at the current stage.
    """

    total: int
    accepted: int = 0
    attempts: int = 0

    @property
    def stage(self) -> int:
        """The stage being worked on (``total`` once every stage is accepted)."""
        return min(self.accepted + 1, self.total)

    @property
    def finished(self) -> bool:
        """True once every stage is accepted."""
        return self.accepted >= self.total

    def attempt(self) -> int:
        """Count one attempt at the current stage and return its number (1-based)."""
        self.attempts += 1
        return self.attempts

    def accept(self) -> bool:
        """Accept the current stage; return True when a next stage opens."""
        self.accepted += 1
        self.attempts = 0
        return not self.finished


@dataclass(frozen=True)
class MajorityRuling:
    """The outcome of several judge calls on one action.

    Attributes:
        success: The majority's ruling.
        reason: The reason of the first call on the majority side.
        votes: Every call's decision, in the order they were made.
    """

    success: bool
    reason: str
    votes: tuple[JudgeDecision, ...]


async def judge_by_majority(
    ctx: RoundContext,
    question: str,
    instructions: str,
    scripted: Callable[[], JudgeDecision],
    *,
    votes: int = 1,
    codes: Iterable[str] = (),
) -> MajorityRuling:
    """Ask the run's judge ``votes`` times (concurrently) and rule by majority.

    Args:
        ctx: The round's context; each call goes through ``ctx.judge`` and is logged there.
        question: The literal action.
        instructions: What the action must be, in plain words.
        scripted: The deterministic check the scripted judge applies (once per vote).
        votes: How many calls; odd, so there is always a majority.
        codes: The case's hidden codes; none may appear in ``instructions``.

    Raises:
        ValueError: ``votes`` is not a positive odd number.
        CodeLeakError: ``instructions`` contains one of ``codes``; no call is made.
    """
    if votes < 1 or votes % 2 == 0:
        raise ValueError(f"votes must be a positive odd number, got {votes}")
    leaked = codes_in(instructions, codes)
    if leaked:
        raise CodeLeakError(f"judge instructions contain hidden codes: {', '.join(leaked)}")
    decisions = tuple(
        await asyncio.gather(*(ctx.judge(question, instructions, scripted) for _ in range(votes)))
    )
    yes = sum(d.success for d in decisions)
    success = yes * 2 > votes
    reason = next(d.reason for d in decisions if d.success is success)
    return MajorityRuling(success, reason, decisions)


@dataclass(frozen=True)
class ActionGuard:
    """The refusals of a staged scenario's one action tool, in its own words.

    The tool acts once at a time: an action is refused (``{"status": "error", "reason": ...}``)
    when another seat calls it, when no case is drawn or the round is settled, while the
    previous action is still being ruled on, when the action is empty, and when the round was
    lost while the action was being ruled on (checked in that order).

    Attributes:
        actor: The one seat that may act.
        not_actor: Why another seat is refused.
        settled: Why an action is refused once the round is settled (or before a case).
        busy: Why an action is refused while the previous one is being ruled on.
        empty: Why an empty action is refused.
        lost_meanwhile: Why an action is refused when the round was lost during its ruling.
    """

    actor: str
    not_actor: str
    settled: str
    busy: str
    empty: str
    lost_meanwhile: str

    @staticmethod
    def refused(reason: str) -> dict[str, Any]:
        """The tool's answer to a refused action."""
        return {"status": "error", "reason": reason}


@dataclass(frozen=True)
class ScriptedPolicies:
    """The scripted policy of each seat of a staged scenario, and the postmortem's.

    Attributes:
        seats: Seat id -> its main-phase policy, called with the view and the knobs' seed.
        debrief: Every seat's postmortem policy.
    """

    seats: Mapping[str, Callable[[ScriptedView, int], ScriptedMove]]
    debrief: Callable[[ScriptedView], ScriptedMove]


class StagedScenario(Scenario):
    """A scenario whose one team works through a case stage by stage with one judged action.

    What the staged scenarios share is written here once: the round is settled when every
    stage is done or the round is lost (:attr:`lost_reason`), the team's verdict says how many
    of how many stages (:meth:`stages_done`) were done (``"<n> of <n> <outcome>"``, else
    ``"unfinished: <done> of <n> <outcome>"``, else the reason it was lost), the action tool's
    refusals (:attr:`guard`, :meth:`refusal`, :meth:`rule`), and the scripted seats' dispatch
    (:attr:`scripted_policies`).

    Attributes:
        team: The one team's id.
        outcome: The words after a verdict's count (``"stages cleared"``).
        guard: The action tool's refusals.
        scripted_policies: The scripted seats' policies.
        case: The round's case, None before the first round starts.
        progress: Where the case stands (a scenario that counts its own way overrides
            :meth:`stages_done`).
        lost_reason: Why the round was lost, None while it is not.
        judging: True while an action is being ruled on.
    """

    team: ClassVar[str]
    outcome: ClassVar[str]
    guard: ClassVar[ActionGuard]
    scripted_policies: ClassVar[ScriptedPolicies]

    def __init__(self, knobs: BaseKnobs) -> None:
        """Start with no case drawn, nothing lost, nothing being ruled on."""
        super().__init__(knobs)
        self.case: object | None = None
        self.progress = StageProgress(total=0)
        self.lost_reason: str | None = None
        self.judging = False

    def stages_done(self) -> tuple[int, int]:
        """Return the stages done and the case's stages: :attr:`progress`'s, by default."""
        return self.progress.accepted, self.progress.total

    def is_settled(self) -> bool:
        """True once every stage is done or the round is lost."""
        if self.lost_reason is not None:
            return True
        done, total = self.stages_done()
        return self.case is not None and done >= total

    def verdicts(self, ctx: RoundContext) -> list[Verdict]:
        """Return the team's verdict: success only when every stage was done."""
        done, total = self.stages_done()
        if self.lost_reason is not None:
            return [Verdict(team_id=self.team, success=False, reason=self.lost_reason)]
        if self.case is not None and done >= total:
            reason = f"{total} of {total} {self.outcome}"
            return [Verdict(team_id=self.team, success=True, reason=reason)]
        reason = f"unfinished: {done} of {total} {self.outcome}"
        return [Verdict(team_id=self.team, success=False, reason=reason)]

    def refusal(self, agent_id: str, action: str) -> dict[str, Any] | None:
        """Return the tool's answer refusing ``agent_id``'s ``action``, or None to rule on it."""
        guard = self.guard
        if agent_id != guard.actor:
            return guard.refused(guard.not_actor)
        if self.case is None or self.is_settled():
            return guard.refused(guard.settled)
        if self.judging:
            return guard.refused(guard.busy)
        if not action.strip():
            return guard.refused(guard.empty)
        return None

    async def rule(self, ruling: Awaitable[T]) -> T | None:
        """Await the ruling on the one action in flight; None if the round was settled meanwhile.

        While it is awaited, the tool refuses every other action (:attr:`ActionGuard.busy`).
        """
        self.judging = True
        try:
            result = await ruling
        finally:
            self.judging = False
        return None if self.is_settled() else result

    def scripted_move(self, view: ScriptedView) -> ScriptedMove:
        """Play ``view.agent_id``: its seat's policy, or the debrief in the postmortem."""
        if view.phase == "postmortem":
            return self.scripted_policies.debrief(view)
        return self.scripted_policies.seats[view.agent_id](view, self.knobs.seed)
