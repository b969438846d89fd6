"""Events of spot_the_difference: the round's case, each judged answer, the round's ranking."""

from __future__ import annotations

from typing import Any, Literal

from glossogen.eventlog import Event


class SpotTheDifferenceCaseStarted(Event):
    """A round's case was drawn: both scenes and the planted differences (no seat sees this).

    Attributes:
        grid_size: Cells per side of the grid.
        scene_a: Scene A's objects (``size``, ``colour``, ``shape``, ``x``, ``y``), as the left
            viewers hold it.
        scene_b: Scene B's objects, as the right viewers hold it.
        differences: The K differences: ``kind``, ``before``, ``after``, ``attribute`` and
            ``description`` (written relationally, as the judge reads it).
        attempts: Draws the generator took to reach a uniquely decodable case.
        budget_chars: Each team's link budget this round, characters (-1: no cap).
    """

    event_type: Literal["spot_the_difference_case_started"] = "spot_the_difference_case_started"
    grid_size: int
    scene_a: list[dict[str, Any]]
    scene_b: list[dict[str, Any]]
    differences: list[dict[str, Any]]
    attempts: int
    budget_chars: int


class SpotTheDifferenceSubmissionJudged(Event):
    """The judge ruled on one member's ``submit_differences`` answer.

    Attributes:
        team_id: The member's team.
        agent_id: The member who submitted.
        items: The answer, one line per claimed difference, as submitted.
        matched: Numbers (1-based) of the planted differences the answer states.
        false_positives: Items that match no planted difference (or are ambiguous).
        complete: True when every difference was matched with no false positive.
        reason: The judge's one-line reason.
    """

    event_type: Literal["spot_the_difference_submission_judged"] = (
        "spot_the_difference_submission_judged"
    )
    team_id: str
    agent_id: str
    items: list[str]
    matched: list[int]
    false_positives: int
    complete: bool
    reason: str


class SpotTheDifferenceRoundRanked(Event):
    """The round's ranking: among eligible teams, the fewest characters on their link wins.

    Attributes:
        teams: One entry per team: ``team_id``, ``eligible``, ``chars`` (sent on its link,
            composed text) and ``rank`` (1 = won; ties share a rank; None when not eligible).
        winners: Teams ranked 1 (every tied team); empty when no team was eligible.
    """

    event_type: Literal["spot_the_difference_round_ranked"] = "spot_the_difference_round_ranked"
    teams: list[dict[str, Any]]
    winners: list[str]
