"""A run's flip report (``judge_flips.json``), read by the export's run records.

Apart from :mod:`glossogen.rejudge._rejudge`, which reads runs through ``glossogen.export``:
the export reads this module alone, so neither imports the other.
"""

from __future__ import annotations

from glossogen.storage import RunFolder

FLIPS = "judge_flips.json"
"""A run's flip report, in its folder (the last rejudge's)."""


def flips_of(folder: RunFolder) -> int | None:
    """How many rulings of the run the last rejudge flipped; None when never rejudged.

    Raises:
        StorageError: the storage is unreachable.
    """
    report = folder.read_object(FLIPS)
    flips = report.get("flips") if report is not None else None
    return len(flips) if isinstance(flips, list) else None
