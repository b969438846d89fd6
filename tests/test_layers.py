"""The surfaces stand side by side: ``cli/``, ``server/`` and ``mcp/`` import only the library.

Read from the source (``ast``), every import, at module level or inside a function: a surface
that borrowed another's code (a stop, a launch, an exit code) would show up here.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SURFACES = ("cli", "server", "mcp")
STARTS = {
    ("glossogen/cli/mcp.py", "glossogen.mcp"),  # `glossogen mcp` starts the MCP server
    ("glossogen/cli/serve.py", "glossogen.server"),  # `glossogen serve` starts the REST server
    ("glossogen/server/app.py", "glossogen.mcp"),  # the REST server mounts MCP at /mcp
}
"""The only imports across surfaces: a command starting a server, the server mounting MCP."""


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports (``from x import y`` also as ``x.y``, y may be a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def surface_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "glossogen" and len(parts) > 1 and parts[1] in SURFACES else None


def crossings() -> set[tuple[str, str]]:
    """(file, surface package) for each import of one surface's code by another surface."""
    found = set()
    for surface in SURFACES:
        for path in sorted((REPO / "glossogen" / surface).rglob("*.py")):
            for module in imported(path):
                other = surface_of(module)
                if other is not None and other != surface:
                    found.add((path.relative_to(REPO).as_posix(), f"glossogen.{other}"))
    return found


def imports_of(package: str, other: str) -> set[tuple[str, str]]:
    """(file, module) for each import of ``glossogen.<other>`` by ``glossogen/<package>/``."""
    return {
        (path.relative_to(REPO).as_posix(), m)
        for path in sorted((REPO / "glossogen" / package).rglob("*.py"))
        for m in imported(path)
        if m == f"glossogen.{other}" or m.startswith(f"glossogen.{other}.")
    }


def test_cli_server_and_mcp_import_none_of_one_another() -> None:
    assert crossings() == STARTS


def test_the_library_imports_no_surface() -> None:
    """Below the surfaces, nothing in ``glossogen/`` (nor flows/, tasks/, orchestration/)
    reaches up into ``cli/``, ``server/`` or ``mcp/``."""
    upward = set()
    for folder in ("glossogen", "flows", "tasks", "orchestration"):
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if any(rel.startswith(f"glossogen/{s}/") for s in SURFACES) or rel in (
                "glossogen/__main__.py",  # `python -m glossogen` is the CLI
            ):
                continue
            upward.update((rel, m) for m in imported(path) if surface_of(m) is not None)
    assert upward == set()


def test_the_engine_imports_nothing_from_derive() -> None:
    """``engine/`` plays a run from the state it is handed (``engine.RunState``); reading that
    state from a log is ``derive/``'s, which builds on the engine, never the other way."""
    assert imports_of("engine", "derive") == set()


def test_the_export_imports_nothing_from_the_analysis() -> None:
    """The analysis reads runs through the export, never the other way: the bound both put on
    ``max_runs`` is the library's refusal (``refusals.count_refused``); the export borrowed
    the analysis's private ``_count_in_range`` for it."""
    assert imports_of("export", "analysis") == set()
