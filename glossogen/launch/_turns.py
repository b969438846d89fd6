"""Whether ``--max-agent-turns`` can cover a run's rounds: a warning said before it starts.

A seat that reaches the cap stops requesting; the round it is cut off in is void and the run
ends ``incomplete``. How many requests a seat takes in a round is the scenario's
``requests_per_round`` (about what its scripted players take): an assumption, said in the
warning, never a refusal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from glossogen.scenario import load_scenario

if TYPE_CHECKING:
    from glossogen.launch._plan import RunConfig


def turn_cap_warning(config: RunConfig) -> str | None:
    """One line when ``round_count`` rounds at the scenario's requests per round pass the cap.

    None when they fit, or the scenario states no ``requests_per_round``.
    """
    per_round = load_scenario(config.scenario).requests_per_round
    rounds = config.knobs.round_count
    cap = config.limits.max_agent_turns
    if not per_round or rounds * per_round <= cap:
        return None
    return (
        f"--max-agent-turns {cap} likely ends the run before its {rounds} rounds: a "
        f"{config.scenario} seat takes about {per_round} model requests a round (assumed from "
        f"its scripted players), so {cap} turns cover about {cap // per_round} rounds and the "
        f"run would end incomplete; --max-agent-turns {rounds * per_round} covers {rounds}"
    )
