"""Whether ``--max-agent-turns`` can cover a run's rounds: a warning said before it starts.

A seat that reaches the cap stops requesting; the round it is cut off in is void and the run
ends ``incomplete``. How many requests a seat takes in a round is the estimate's own figure
(:func:`glossogen.launch._estimate.round_requests`, from the scenario's ``cost_profile()``: its
main phase, and its postmortem in the rounds that hold one): an assumption, said in the
warning, never a refusal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from glossogen.launch._estimate import measure_prompts

if TYPE_CHECKING:
    from glossogen.launch._plan import RunConfig


def turn_cap_warning(config: RunConfig) -> str | None:
    """One line when a seat's requests over ``round_count`` rounds pass the cap, else None."""
    measured = measure_prompts(config)
    rounds = measured.rounds
    needed = sum(r.total for r in rounds)
    cap = config.limits.max_agent_turns
    if needed <= cap:
        return None
    covered, used = 0, 0
    for r in rounds:
        if used + r.total > cap:
            break
        covered, used = covered + 1, used + r.total
    p = measured.profile
    per_round = needed / len(rounds)
    postmortem = (
        f" and {p.postmortem_requests:g} in a postmortem" if any(measured.postmortems) else ""
    )
    return (
        f"--max-agent-turns {cap} likely ends the run before its {len(rounds)} rounds: a "
        f"{config.scenario} seat takes about {per_round:.3g} model requests a round "
        f"({p.main_requests:g} in the main phase{postmortem}, the scenario's cost profile, as "
        f"the estimate assumes), so {cap} turns cover about {covered} rounds and the run would "
        f"end incomplete; --max-agent-turns {needed} covers {len(rounds)}"
    )
