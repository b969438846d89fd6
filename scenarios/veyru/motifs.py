"""The veyru's domain: its faces, its failure motifs, the reference star and one round's case.

A veyru is a lantern-sized, six-faced living crystal that keepers raise in tide caves. It stores
warmth as light and hums while it is well. When it fails, it fails in motifs: recognisable
clusters of signs, each cured by one hands-on procedure. Which procedure cures which motif is not
fixed: it follows the reading of the reference star Ilvane, which also sets the round's starting
face, hold time and intensity. All of it is invented for this scenario.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

STAR = "Ilvane"
"""The reference star whose reading remaps the manual every round."""

FACES: tuple[str, ...] = ("amber", "cobalt", "ivory", "jade", "russet", "slate")
"""The six faces of a veyru's shell, named after the tint of their grain."""


@dataclass(frozen=True)
class Procedure:
    """A hands-on treatment.

    Attributes:
        name: Short name (``Thaw``); the scripted engineer sends its ``verb``.
        verb: The one word the scripted engineer uses for it on the link.
        keywords: Regex fragments, any of which names this procedure in an action (lenient
            wording); matched case-insensitively on word boundaries.
        steps: What to do, in plain words, with ``{face}`` for the round's starting face.
    """

    name: str
    verb: str
    keywords: tuple[str, ...]
    steps: str

    def pattern(self) -> re.Pattern[str]:
        """Return the regex that finds any of this procedure's keywords in a text."""
        return re.compile(r"\b(?:" + "|".join(self.keywords) + r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class Motif:
    """One failure motif of the manual.

    Attributes:
        motif_id: The manual's code (``KESH``); never shown to the judge.
        name: Short name (``Rime Creep``).
        symptoms: What the observer sees, in plain words.
        cues: The observer's terse notes on those symptoms (the scripted observer sends these;
            the scripted engineer recognises the motif by them).
        procedure: The treatment that cures this motif when the star maps it onto itself.
    """

    motif_id: str
    name: str
    symptoms: str
    cues: tuple[str, ...]
    procedure: Procedure


MOTIFS: tuple[Motif, ...] = (
    Motif(
        "KESH",
        "Rime Creep",
        "A thin rime of frost is creeping inward from the edges of the shell, and the hum has "
        "sunk to a low, dragging drone.",
        ("frost at edges", "low drone"),
        Procedure(
            "Thaw",
            "thaw",
            (r"thaw\w*", r"warm(?:ed)? stone"),
            "thaw it: press a warmed river stone flat against the {face} face",
        ),
    ),
    Motif(
        "ORRA",
        "Glow Stutter",
        "The inner glow keeps cutting out in uneven bursts; each dark gap lasts about a heartbeat.",
        ("glow cuts out", "uneven"),
        Procedure(
            "Tap",
            "tap",
            (r"tap(?:s|ped|ping)?",),
            "tap the {face} face with one fingertip in a slow, even rhythm",
        ),
    ),
    Motif(
        "VAEL",
        "Seam Weep",
        "Clear fluid beads along a hairline seam and drips off; the seam feels tacky to a finger.",
        ("seam weeps", "tacky"),
        Procedure(
            "Seal",
            "seal",
            (r"seal\w*", r"resin"),
            "seal it: smooth a bead of resin along the seam, working from the {face} face",
        ),
    ),
    Motif(
        "TUMO",
        "Hollow Chime",
        "It rings hollow inside whenever it is touched, and it feels lighter to lift than it "
        "should.",
        ("rings hollow", "too light"),
        Procedure(
            "Salt feed",
            "salt",
            (r"salt\w*", r"feed\w*"),
            "feed it: sprinkle a pinch of tide salt over the {face} face",
        ),
    ),
    Motif(
        "SIRR",
        "Cradle Drift",
        "It keeps slowly turning in its cradle, always the same way round, and will not come to "
        "rest.",
        ("turns in cradle", "no rest"),
        Procedure(
            "Brace",
            "brace",
            (r"brac\w*", r"pin(?:s|ned|ning)?"),
            "brace it: pin the {face} face down with the flat of your hand",
        ),
    ),
    Motif(
        "BAHN",
        "Ash Bloom",
        "A grey powder is blooming on the surface, and the air close to it smells of burnt sugar.",
        ("grey powder", "burnt sugar"),
        Procedure(
            "Brush",
            "brush",
            (r"brush\w*", r"sweep\w*", r"bristle\w*"),
            "brush the powder off with a dry bristle brush, sweeping outward from the {face} face",
        ),
    ),
    Motif(
        "QELD",
        "Fever Throb",
        "The shell is hot to the touch and the glow throbs a deep red, as fast as a racing pulse.",
        ("hot shell", "red throb"),
        Procedure(
            "Douse",
            "douse",
            (r"dous\w*", r"drench\w*", r"cold water"),
            "douse the {face} face with cold spring water",
        ),
    ),
    Motif(
        "IMRU",
        "Silent Fade",
        "The hum has stopped entirely and the light is draining away evenly from every side.",
        ("hum stopped", "light draining"),
        Procedure(
            "Sing",
            "sing",
            (r"sing(?:s|ing)?", r"sung", r"song", r"chant\w*"),
            "sing to it: hold one low, steady note with your lips close to the {face} face",
        ),
    ),
    Motif(
        "ZORIN",
        "Shadow Split",
        "A dark, crack-like shadow runs through the inside although the surface is unbroken, and "
        "there is a faint crackle.",
        ("inner crack", "crackle"),
        Procedure(
            "Squeeze",
            "squeeze",
            (r"squeez\w*", r"compress\w*"),
            "squeeze it gently between both palms, with the {face} face against your right palm",
        ),
    ),
)

BY_ID: dict[str, Motif] = {m.motif_id: m for m in MOTIFS}


@dataclass(frozen=True)
class Reading:
    """This round's reading of Ilvane.

    Attributes:
        remap: Motif id -> the motif id whose procedure now cures it (a derangement, or the
            identity when the star is veiled).
        face: The face every procedure starts on this round.
        hold_seconds: How long each procedure is held, seconds.
        intensity_level: How hard it is applied, 1 (gentlest) up to the knob's ceiling.
        veiled: True in calm rounds: no remap, the manual applies as written.
    """

    remap: dict[str, str]
    face: str
    hold_seconds: int
    intensity_level: int
    veiled: bool = False

    def cure(self, motif_id: str) -> Procedure:
        """Return the procedure that cures ``motif_id`` under this reading."""
        return BY_ID[self.remap[motif_id]].procedure


@dataclass(frozen=True)
class Case:
    """One round's failing veyru: the motif shown at each stage, and the star's reading."""

    stages: tuple[str, ...]
    reading: Reading


def _derangement(rng: random.Random, ids: list[str]) -> dict[str, str]:
    """Return a uniformly drawn permutation of ``ids`` with no fixed point (shuffle, retry)."""
    order = list(ids)
    while True:
        rng.shuffle(order)
        if all(a != b for a, b in zip(ids, order, strict=True)):
            return dict(zip(ids, order, strict=True))


def draw_case(
    rng: random.Random,
    *,
    stages: int,
    hold_seconds: tuple[int, int],
    intensity_levels: int,
    veiled: bool,
) -> Case:
    """Draw a round's case from ``rng``.

    Args:
        rng: The round's random source (seeded from the run's seed and the round).
        stages: How many motifs the veyru shows, one after the other.
        hold_seconds: Inclusive (low, high) range of the hold time, seconds.
        intensity_levels: Highest intensity level (levels run from 1).
        veiled: True for a calm round: the remap is the identity.

    Returns:
        The case: distinct motifs per stage and the star's reading.
    """
    ids = [m.motif_id for m in MOTIFS]
    shown = tuple(rng.sample(ids, stages))
    remap = {i: i for i in ids} if veiled else _derangement(rng, ids)
    reading = Reading(
        remap=remap,
        face=rng.choice(FACES),
        hold_seconds=rng.randint(*hold_seconds),
        intensity_level=rng.randint(1, intensity_levels),
        veiled=veiled,
    )
    return Case(shown, reading)
