"""Scenes of spot_the_difference: a grid of objects, the planted differences, and their decoding.

A scene is a square grid (``grid_size`` cells a side) holding objects, each a bundle of size,
colour and shape on its own cell. Seats never see cells: an object reads as its coarse region
(the grid cut 3x3: ``top left`` .. ``bottom right``) and its relation to up to two nearest
objects. Scene B is scene A with exactly K planted differences of the enabled kinds:

- ``attribute``: one attribute (size, colour or shape) of an object changed, same cell;
- ``moved``: an object moved to a free cell of another region;
- ``added``: a new object on a free cell;
- ``removed``: an object taken away.

A case is kept only when it is uniquely decodable at the level the seats see (objects as
``(size, colour, shape, region)``): the fewest operations turning A into B (a move or an
attribute change is one operation, an add or a removal one each) is exactly K and exactly one
set of K operations does it, and no two differences of the same kind read alike. Otherwise it
is re-drawn from a sub-seed, at most ``MAX_ATTEMPTS`` times.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from typing import Literal

from pydantic import BaseModel

Kind = Literal["attribute", "moved", "added", "removed"]
KINDS: tuple[Kind, ...] = ("attribute", "moved", "added", "removed")
Attribute = Literal["size", "colour", "shape"]
ATTRIBUTES: tuple[Attribute, ...] = ("size", "colour", "shape")

SIZES = ("small", "large")
COLOURS = ("crimson", "teal", "amber", "violet", "ivory", "olive")
SHAPES = ("kite", "spindle", "lantern", "acorn", "comb", "wheel")
VALUES: dict[Attribute, tuple[str, ...]] = {"size": SIZES, "colour": COLOURS, "shape": SHAPES}

ROWS = ("top", "middle", "bottom")
COLUMNS = ("left", "centre", "right")
REGIONS = tuple(
    "centre" if (r, c) == ("middle", "centre") else f"{r} {c}" for r in ROWS for c in COLUMNS
)
MAX_ATTEMPTS = 200
"""Draws per case before the generator gives up (loudly)."""


class SceneObject(BaseModel):
    """One object on one cell (``x`` column, ``y`` row, 0-based from the top left)."""

    size: str
    colour: str
    shape: str
    x: int
    y: int

    def looks(self) -> str:
        """How the object reads: ``small crimson kite``."""
        return f"{self.size} {self.colour} {self.shape}"

    def value(self, attribute: Attribute) -> str:
        """Return the value of ``attribute``."""
        return str(getattr(self, attribute))


Token = tuple[str, str, str, str]
"""An object as the seats can tell it: ``(size, colour, shape, region)``."""


def region_of(x: int, y: int, grid_size: int) -> str:
    """Return the region name of cell ``(x, y)`` of a ``grid_size`` grid."""
    return REGIONS[(y * 3 // grid_size) * 3 + x * 3 // grid_size]


def token(obj: SceneObject, grid_size: int) -> Token:
    """Return how the seats can tell ``obj``: its looks and region."""
    return (obj.size, obj.colour, obj.shape, region_of(obj.x, obj.y, grid_size))


class Difference(BaseModel):
    """One planted difference: its kind, the object in A (``before``) and in B (``after``)."""

    kind: Kind
    before: SceneObject | None = None
    after: SceneObject | None = None
    attribute: Attribute | None = None
    description: str = ""

    def tokens(self, grid_size: int) -> tuple[Token | None, Token | None]:
        """Return the ``(before, after)`` tokens (None where the object is absent)."""
        return (
            token(self.before, grid_size) if self.before else None,
            token(self.after, grid_size) if self.after else None,
        )


class Case(BaseModel):
    """One round's case: both scenes and the K planted differences (ground truth)."""

    grid_size: int
    scene_a: list[SceneObject]
    scene_b: list[SceneObject]
    differences: list[Difference]
    attempts: int = 1


def relations(obj: SceneObject, scene: list[SceneObject]) -> list[str]:
    """Return how ``obj`` sits against its two nearest objects: ``a teal comb to its left``.

    Nearest by squared distance, ties by the other object's cell (row, then column).
    """
    others = sorted(
        (o for o in scene if (o.x, o.y) != (obj.x, obj.y)),
        key=lambda o: ((o.x - obj.x) ** 2 + (o.y - obj.y) ** 2, o.y, o.x),
    )
    found = []
    for o in others[:2]:
        dx, dy = o.x - obj.x, o.y - obj.y
        if abs(dx) >= abs(dy):
            where = "to its right" if dx > 0 else "to its left"
        else:
            where = "below it" if dy > 0 else "above it"
        found.append(f"a {o.looks()} {where}")
    return found


def describe(obj: SceneObject, scene: list[SceneObject], grid_size: int) -> str:
    """Return the line a seat reads for ``obj``: looks, region and nearest neighbours."""
    near = relations(obj, scene)
    tail = f", with {' and '.join(near)}" if near else ""
    return f"a {obj.looks()} in the {region_of(obj.x, obj.y, grid_size)}{tail}"


def scene_lines(scene: list[SceneObject], grid_size: int) -> list[str]:
    """Return a scene as the seats read it: one line per object, by region then looks."""
    order = sorted(
        scene, key=lambda o: (REGIONS.index(region_of(o.x, o.y, grid_size)), o.looks(), o.y, o.x)
    )
    return [describe(o, scene, grid_size) for o in order]


# -- decoding ----------------------------------------------------------------------------------


class Operation(BaseModel):
    """One edit operation between token multisets (``before``/``after`` None for add/remove)."""

    kind: Kind
    before: Token | None = None
    after: Token | None = None


def _link(a: Token, b: Token) -> Kind | None:
    same_region = a[3] == b[3]
    changed = sum(x != y for x, y in zip(a[:3], b[:3], strict=True))
    if same_region and changed == 1:
        return "attribute"
    if not same_region and changed == 0:
        return "moved"
    return None


def decode(scene_a: list[Token], scene_b: list[Token]) -> list[list[Operation]]:
    """Return every minimal operation set turning token multiset A into B.

    Tokens present in both are kept; what is left of A (``A'``) and of B (``B'``) is linked
    pairwise where one operation turns one into the other (same region and one attribute
    changed, or same looks in another region); each maximum set of links gives one minimal
    solution of ``|A'| + |B'| - links`` operations, the unlinked rest being removals and adds.
    """
    a_left = list((Counter(scene_a) - Counter(scene_b)).elements())
    b_left = list((Counter(scene_b) - Counter(scene_a)).elements())
    best: list[list[tuple[int, int]]] = [[]]

    def grow(i: int, used: frozenset[int], pairs: list[tuple[int, int]]) -> None:
        nonlocal best
        if i == len(a_left):
            if len(pairs) > len(best[0]):
                best = [list(pairs)]
            elif len(pairs) == len(best[0]) and pairs:
                best.append(list(pairs))
            return
        for j, b in enumerate(b_left):
            if j not in used and _link(a_left[i], b):
                grow(i + 1, used | {j}, [*pairs, (i, j)])
        grow(i + 1, used, pairs)

    grow(0, frozenset(), [])
    solutions: dict[tuple[tuple[str, Token | None, Token | None], ...], list[Operation]] = {}
    for pairs in best:
        ops = [
            Operation(
                kind=_link(a_left[i], b_left[j]) or "moved", before=a_left[i], after=b_left[j]
            )
            for i, j in pairs
        ]
        linked_a, linked_b = {i for i, _ in pairs}, {j for _, j in pairs}
        ops += [
            Operation(kind="removed", before=t) for i, t in enumerate(a_left) if i not in linked_a
        ]
        ops += [Operation(kind="added", after=t) for j, t in enumerate(b_left) if j not in linked_b]
        key = tuple(sorted((o.kind, o.before, o.after) for o in ops))
        solutions[key] = sorted(ops, key=lambda o: (o.kind, o.before or (), o.after or ()))
    return list(solutions.values())


# -- drawing -----------------------------------------------------------------------------------


def _free_cell(rng: random.Random, taken: set[tuple[int, int]], grid_size: int) -> tuple[int, int]:
    free = [(x, y) for x in range(grid_size) for y in range(grid_size) if (x, y) not in taken]
    return rng.choice(free)


def _plant(
    rng: random.Random, kind: Kind, a: list[SceneObject], b: list[SceneObject], touched: set[int],
    grid_size: int,
) -> Difference:  # fmt: skip
    taken = {(o.x, o.y) for o in b}
    if kind == "added":
        x, y = _free_cell(rng, taken, grid_size)
        new = SceneObject(
            size=rng.choice(SIZES), colour=rng.choice(COLOURS), shape=rng.choice(SHAPES), x=x, y=y
        )
        b.append(new)
        touched.add(len(b) - 1)
        return Difference(kind=kind, after=new)
    index = rng.choice([i for i in range(len(a)) if i not in touched])
    touched.add(index)
    old = a[index]
    if kind == "removed":
        b[index] = old.model_copy(update={"x": -1})  # dropped below, after every plant
        return Difference(kind=kind, before=old)
    if kind == "moved":
        region = region_of(old.x, old.y, grid_size)
        cells = [
            c for c in itertools.product(range(grid_size), repeat=2)
            if c not in taken and region_of(c[0], c[1], grid_size) != region
        ]  # fmt: skip
        x, y = rng.choice(cells)
        b[index] = old.model_copy(update={"x": x, "y": y})
        return Difference(kind=kind, before=old, after=b[index])
    attribute = rng.choice(ATTRIBUTES)
    value = rng.choice([v for v in VALUES[attribute] if v != old.value(attribute)])
    b[index] = old.model_copy(update={attribute: value})
    return Difference(kind=kind, before=old, after=b[index], attribute=attribute)


def truth_line(diff: Difference, a: list[SceneObject], b: list[SceneObject], grid_size: int) -> str:
    """Return a difference written relationally, as the judge reads it (no cell, no code)."""
    if diff.kind == "added":
        assert diff.after is not None
        return f"Added in scene B: {describe(diff.after, b, grid_size)}."
    assert diff.before is not None
    was = describe(diff.before, a, grid_size)
    if diff.kind == "removed":
        return f"Removed from scene B: {was}."
    assert diff.after is not None
    if diff.kind == "moved":
        to = region_of(diff.after.x, diff.after.y, grid_size)
        return f"Moved: {was}, is in the {to} in scene B."
    assert diff.attribute is not None
    return (
        f"Changed {diff.attribute}: {was}, is {diff.after.value(diff.attribute)} in scene B "
        f"(a {diff.after.looks()})."
    )


def draw_case(
    rng: random.Random,
    *,
    grid_size: int,
    object_counts: list[int],
    difference_count: int,
    kinds: list[Kind],
    kind_weights: list[float],
) -> Case:
    """Draw a uniquely decodable case (see the module docstring) from ``rng``.

    Raises:
        RuntimeError: no uniquely decodable case came up in ``MAX_ATTEMPTS`` draws.
    """
    for attempt in range(1, MAX_ATTEMPTS + 1):
        sub = random.Random(f"{rng.random()}:{attempt}")
        case = _draw_once(sub, grid_size, object_counts, difference_count, kinds, kind_weights)
        if _uniquely_decodable(case):
            return case.model_copy(update={"attempts": attempt})
    raise RuntimeError(
        f"no uniquely decodable case with {difference_count} differences of {kinds} on a "
        f"{grid_size}x{grid_size} grid in {MAX_ATTEMPTS} draws"
    )


def _draw_once(
    rng: random.Random, grid_size: int, object_counts: list[int], k: int, kinds: list[Kind],
    kind_weights: list[float],
) -> Case:  # fmt: skip
    count = rng.choice(object_counts)
    # a narrow palette per scene, so look-alikes (two of three attributes shared) are common
    colours, shapes = rng.sample(COLOURS, 3), rng.sample(SHAPES, 3)
    cells = rng.sample(list(itertools.product(range(grid_size), repeat=2)), count)
    a = [
        SceneObject(
            size=rng.choice(SIZES), colour=rng.choice(colours), shape=rng.choice(shapes), x=x, y=y
        )  # fmt: skip
        for x, y in cells
    ]
    b = [o.model_copy() for o in a]
    touched: set[int] = set()
    planted = [
        _plant(rng, kind, a, b, touched, grid_size)
        for kind in rng.choices(kinds, weights=kind_weights, k=k)
    ]
    b = [o for o in b if o.x >= 0]
    diffs = [d.model_copy(update={"description": truth_line(d, a, b, grid_size)}) for d in planted]
    return Case(grid_size=grid_size, scene_a=a, scene_b=b, differences=diffs)


def _uniquely_decodable(case: Case) -> bool:
    g = case.grid_size
    solutions = decode([token(o, g) for o in case.scene_a], [token(o, g) for o in case.scene_b])
    if len(solutions) != 1 or len(solutions[0]) != len(case.differences):
        return False
    planted = sorted((d.kind, *d.tokens(g)) for d in case.differences)
    found = sorted((o.kind, o.before, o.after) for o in solutions[0])
    if planted != found:
        return False
    readings = [(d.kind, d.tokens(g)) for d in case.differences]
    return len(set(readings)) == len(readings)
