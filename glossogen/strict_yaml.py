"""YAML files read strictly: a mapping that names the same key twice is refused, not merged.

PyYAML keeps the last of duplicate keys silently (YAML 1.1 leaves them undefined; YAML 1.2
requires keys to be unique), so a sweep spec with ``trials: 2`` and later ``trials: 5``, or a
limits file naming ``openai`` twice, would quietly mean the last value. Sweep specs
(:func:`glossogen.sweep.load_spec`) and the limits file of ``glossogen pools apply`` are read
through :func:`load_yaml`.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["DuplicateKeyError", "YamlError", "load_yaml"]


class YamlError(ValueError):
    """Text that is not YAML; ``str()`` is one line: ``line L, column C: problem`` (1-based)."""

    def __init__(self, problem: str, line: int | None = None, column: int | None = None) -> None:
        """Keep the problem and where it is (1-based ``line`` and ``column``, when known)."""
        where = f"line {line}, column {column}: " if line is not None else ""
        super().__init__(f"{where}{problem}")
        self.problem, self.line, self.column = problem, line, column


class DuplicateKeyError(YamlError):
    """A mapping names ``key`` twice: first on line ``first_line``, again at ``line``/``column``."""

    def __init__(self, key: Any, line: int, column: int, first_line: int) -> None:
        """Name the repeated ``key`` and both places (1-based)."""
        super().__init__(f"duplicate key {key!r} (first at line {first_line})", line, column)
        self.key, self.first_line = key, first_line


class _UniqueKeyLoader(yaml.SafeLoader):
    """A ``SafeLoader`` whose mappings refuse a key they already hold."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_lines: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` merges on purpose; the mapping's own keys win
            key = self.construct_object(key_node, deep=deep)
            try:
                first = first_lines.get(key)
            except TypeError:  # an unhashable key: the base class names it
                continue
            mark = key_node.start_mark
            if first is not None:
                raise DuplicateKeyError(key, mark.line + 1, mark.column + 1, first)
            first_lines[key] = mark.line + 1
        return super().construct_mapping(node, deep=deep)


# YAML 1.2 reads ``1e-3`` as a number; PyYAML (YAML 1.1) needs a dot and reads it as the string
# "1e-3", so ``spend_cap_usd: 5e-2`` was refused as "not a number". The 1.2 core schema's
# exponent form without a dot is added (the class copies the resolvers: yaml.SafeLoader keeps
# its own).
_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def load_yaml(text: str) -> Any:
    """Parse one YAML document with PyYAML's safe loader, refusing duplicate mapping keys.

    Args:
        text: The document.

    Returns:
        What the document holds (None for an empty one): dicts, lists, str, int, float, bool;
        ``1e-3`` is a float, as YAML 1.2 reads it.

    Raises:
        DuplicateKeyError: a mapping names the same key twice (its line, and the first's).
        YamlError: the text is not YAML (one line, with the 1-based line and column).
    """
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        problem = exc.problem or str(exc).strip().splitlines()[0]
        if mark is None:
            raise YamlError(problem) from None
        raise YamlError(problem, mark.line + 1, mark.column + 1) from None
    except yaml.YAMLError as exc:
        raise YamlError(str(exc).strip().splitlines()[0]) from None
