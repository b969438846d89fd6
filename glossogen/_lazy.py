"""A package's names imported on first use (PEP 562): its ``__getattr__``, built from a table."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def first_use(package: str, homes: Mapping[str, str]) -> Callable[[str], object]:
    """Return the ``__getattr__`` of ``package`` that imports each name from its home module.

    Args:
        package: The package's ``__name__``.
        homes: Each exported name and the module it lives in.

    A name is imported when first asked for, then kept in the package (asked once).
    """

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
