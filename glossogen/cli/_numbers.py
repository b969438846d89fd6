"""Numbers typed on the command line, read as typed and refused as typed.

A float flag (``--spend-cap-usd``, ``--run-timeout``) read by :func:`finite` takes only a
finite number that is the number typed: ``1e400`` (which reads as infinity), ``inf``, ``nan``
and ``1e-400`` (which reads as 0, and 0 is "no limit" to some flags) are refused in one line
that repeats the text the user typed, before any bound is checked or anything is written.
"""

from __future__ import annotations

import typer

from glossogen.refusals import finite_number

FLOAT = "FLOAT"
"""The metavar of a float flag read by :func:`finite` (what typer shows for a plain float)."""


def finite(text: str | float) -> float:
    """Return the finite number ``text`` spells (a typer ``parser=`` of a float flag).

    The library's :func:`~glossogen.refusals.finite_number`, the check MCP makes too.

    Raises:
        typer.BadParameter: ``text`` is no number, ``nan``, infinite (``inf``, or too large
            to be read: ``1e400``), or a number other than 0 too small to be read (``1e-400``);
            the message quotes ``text`` as typed.
    """
    try:
        return finite_number(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
