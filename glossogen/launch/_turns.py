"""Whether ``max_agent_turns`` can cover a run's rounds: a warning said before it starts.

A seat that reaches the cap stops requesting; the round it is cut off in is void and the run
ends ``incomplete``. How many requests a seat takes in a round is the estimate's own figure
(:func:`glossogen.launch._estimate.round_requests`, from the scenario's ``cost_profile()``: its
main phase, and its postmortem in the rounds that hold one): an assumption, said in the
warning, never a refusal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from glossogen.launch._estimate import measure_prompts

if TYPE_CHECKING:
    from glossogen.launch._plan import RunConfig


class TurnCapWarning(BaseModel):
    """A turn cap a seat's requests over the run's rounds pass, as data.

    Each surface words it with its own name for ``max_agent_turns`` (:meth:`worded`): the CLI
    its flag, MCP the tool argument.

    Attributes:
        cap: The run's ``max_agent_turns``.
        needed: The turns a seat takes over the rounds, which would cover them.
        rounds: The rounds the run plays.
        why: What the figure rests on and how far the cap reaches, one line.
    """

    model_config = ConfigDict(frozen=True)

    cap: int
    needed: int
    rounds: int
    why: str

    def worded(self, name: str = "max_agent_turns") -> str:
        """Return the one-line warning naming the limit as ``name``."""
        return (
            f"{name} {self.cap} likely ends the run before its {self.rounds} rounds: "
            f"{self.why}; {name} {self.needed} covers {self.rounds}"
        )


def turn_cap_warning(config: RunConfig) -> TurnCapWarning | None:
    """The warning when a seat's requests over ``round_count`` rounds pass the cap, else None."""
    measured = measure_prompts(config)
    rounds = measured.rounds
    needed = sum(r.total for r in rounds)
    cap = config.limits.max_agent_turns
    if needed <= cap:
        return None
    # The rounds the cap covers, as the estimate counts them (its ``rounds_played``): whole
    # rounds while they fit, then the share of the next round's main phase the turns left reach.
    covered, used = 0.0, 0
    for r in rounds:
        if used + r.total > cap:
            covered += min(cap - used, r.main) / r.main if r.main else float(cap > used)
            break
        covered, used = covered + 1, used + r.total
    p = measured.profile
    postmortem = (
        f" and {p.postmortem_requests:g} in a postmortem" if any(measured.postmortems) else ""
    )
    reach = (
        f"cover the {len(rounds)} rounds' main phases but not every postmortem"
        if covered >= len(rounds)
        else f"cover about {covered:.1f} of them"
    )
    return TurnCapWarning(
        cap=cap,
        needed=needed,
        rounds=len(rounds),
        why=f"a {config.scenario} seat takes about {needed} model requests over them (about "
        f"{p.main_requests:g} in a round's main phase{postmortem}, the scenario's cost profile, "
        f"as the estimate assumes), so {cap} turns {reach} and the run would end incomplete",
    )
