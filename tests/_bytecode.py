"""Bytecode the test command writes once before its steps start (``tests/__main__.py``).

The machines this project runs on set ``PYTHONDONTWRITEBYTECODE=1``, so no process of the suite
keeps what it compiles: every process the tests start compiled the project's modules again, and
every pytest-xdist worker (three in the first step, each collecting the whole suite) rewrote
the asserts of every test module again. Both are written here, once, next to their sources
(``__pycache__``, ignored by git).
"""

from __future__ import annotations

from pathlib import Path

from tests._arguments import REPO, TESTS

PACKAGES = ("glossogen", "scenarios", "flows", "tasks", "orchestration", "deployments", "tests")
"""The project's source folders whose bytecode :func:`compile_bytecode` writes."""


def compile_bytecode() -> None:
    """Write the bytecode of the project's own modules (``PACKAGES``) next to their sources.

    ``uv sync --compile-bytecode`` compiles only the installed packages: a detached run compiled
    125 modules of ``glossogen`` again, about 0.6 CPU-s (5.1 CPU-s to import its modules
    without their bytecode, 4.5 with). A stale file is never read (Python checks each against
    its source).
    """
    import compileall

    for package in PACKAGES:
        compileall.compile_dir(REPO / package, quiet=1)


def rewrite_test_modules(folder: Path = TESTS) -> int:
    """Write pytest's assert-rewritten bytecode of every test module and ``conftest.py`` under
    ``folder`` whose cached one is missing or stale; return how many were written.

    pytest caches a rewritten module in ``__pycache__/NAME.<tag>-pytest-<version>.pyc`` and
    reads it back when its source hash matches (a changed or stale source is rewritten again),
    but only writes it when bytecode may be written. Measured collecting the first step's 2,522
    tests (``--collect-only``, quiet 2-core machine): 17.2 CPU-s rewriting every module, 11.5
    reading the ones written here, which took 4.7; each of the first step's three workers
    collects the whole suite. This writes them as pytest's own import hook does
    (``_pytest.assertion.rewrite``: its rewrite and its pyc form, with no configuration, as the
    suite sets none of the hook's ini options); pytest has no public call for it. It is pinned
    by ``uv.lock``: one whose internals moved fails the test command here, before any step.
    Modules pytest does not rewrite never read these files.
    """
    import ast
    import os
    from importlib.util import source_hash

    from _pytest.assertion.rewrite import PYC_TAIL, _write_pyc_fp, get_cache_dir, rewrite_asserts

    written = 0
    for source in sorted([*folder.rglob("test_*.py"), *folder.rglob("conftest.py")]):
        pyc = get_cache_dir(source) / (source.name[:-3] + PYC_TAIL)
        text = source.read_bytes()
        digest = source_hash(text)
        if _current(pyc, digest):
            continue
        tree = ast.parse(text, filename=str(source))
        rewrite_asserts(tree, text, str(source), None)  # no config: the suite sets no ini option
        code = compile(tree, str(source), "exec", dont_inherit=True)
        pyc.parent.mkdir(exist_ok=True)
        partial = pyc.with_name(f"{pyc.name}.{os.getpid()}")
        with open(partial, "wb") as out:
            _write_pyc_fp(out, digest, code)
        partial.replace(pyc)  # atomic, as pytest's own write: a reader sees a whole file or none
        written += 1
    return written


def _current(pyc: Path, digest: bytes) -> bool:
    """Whether ``pyc`` is a rewritten module, in the form pytest reads, of the source whose hash
    is ``digest`` (a checked-hash pyc of this Python: ``_pytest.assertion.rewrite._read_pyc``)."""
    from importlib.util import MAGIC_NUMBER

    try:
        with open(pyc, "rb") as cached:
            head = cached.read(16)
    except OSError:
        return False
    return head == MAGIC_NUMBER + b"\x03\x00\x00\x00" + digest[:8]
