"""Ruling on a submitted answer: which planted differences its items state, and the false ones.

The scripted check applies the naive-reader rule and reads plain words only. An item states a
difference when it names:

- ``attribute``: the object's region, the changed attribute's old and new value, and one of
  the object's other attributes;
- ``moved``: the object's colour and shape and both regions (where it was, where it is);
- ``added``: the object's colour, shape and region, and a word for appearing
  (added, appears, new, extra);
- ``removed``: the object's colour, shape and region, and a word for vanishing
  (removed, missing, gone, absent);

and names no other region. An item with a digit (a cell, a code, a count) or that states two
differences at once matches nothing; an item matching nothing, or a difference already matched,
is a false positive.
"""

from __future__ import annotations

import re

from glossogen.scenario import ItemRuling
from scenarios.spot_the_difference.scene import ATTRIBUTES, Difference, region_of

_REGION = re.compile(r"\b(?:(?:top|bottom) (?:left|centre|right)|middle (?:left|right)|centre)\b")
APPEAR = ("added", "appears", "appeared", "new", "extra")
VANISH = ("removed", "missing", "gone", "absent", "vanished")


def all_differences(k: int) -> str:
    """How a reason names all ``k`` differences: ``all 3 differences``, ``the 1 difference``."""
    return "the 1 difference" if k == 1 else f"all {k} differences"


def found_of(found: int, k: int) -> str:
    """How a reason counts ``found`` of ``k``: ``1 of 2 differences``, ``0 of 1 difference``."""
    return f"{found} of {k} difference" if k == 1 else f"{found} of {k} differences"


def regions_in(text: str) -> set[str]:
    """Return every region ``text`` names (``top centre`` is not also ``centre``)."""
    return set(_REGION.findall(text.lower()))


def _has(text: str, *words: str) -> bool:
    return all(re.search(rf"\b{re.escape(w)}\b", text) for w in words)


def states(item: str, diff: Difference, grid_size: int) -> bool:
    """True when ``item`` states ``diff`` by the rule of the module docstring."""
    text = item.lower()
    if re.search(r"\d", text):
        return False
    before, after = diff.before, diff.after
    if diff.kind == "added":
        assert after is not None
        where = {region_of(after.x, after.y, grid_size)}
        return (
            regions_in(text) == where
            and _has(text, after.colour, after.shape)
            and any(_has(text, w) for w in APPEAR)
        )
    assert before is not None
    was = region_of(before.x, before.y, grid_size)
    if diff.kind == "removed":
        return (
            regions_in(text) == {was}
            and _has(text, before.colour, before.shape)
            and any(_has(text, w) for w in VANISH)
        )
    assert after is not None
    if diff.kind == "moved":
        now = region_of(after.x, after.y, grid_size)
        return regions_in(text) == {was, now} and _has(text, before.colour, before.shape)
    attribute = diff.attribute
    assert attribute is not None
    other = next(a for a in ATTRIBUTES if a != attribute and a != "size")
    return (
        regions_in(text) == {was}
        and _has(text, before.value(attribute), after.value(attribute))
        and _has(text, before.value(other))
    )


def check_items(items: list[str], differences: list[Difference], grid_size: int) -> ItemRuling:
    """Rule on ``items`` against ``differences`` deterministically (the scripted judge)."""
    matched: list[int] = []
    false_positives = 0
    for item in items:
        hits = [n for n, d in enumerate(differences, start=1) if states(item, d, grid_size)]
        if len(hits) == 1 and hits[0] not in matched:
            matched.append(hits[0])
        else:
            false_positives += 1
    k = len(differences)
    missed = k - len(matched)
    if not missed and not false_positives:
        reason = f"{all_differences(k)} stated, nothing false"
    else:
        reason = f"{found_of(len(matched), k)} stated, {false_positives} false positive(s)"
    return ItemRuling(matched=sorted(matched), false_positives=false_positives, reason=reason)
