"""The derive package's names are imported on first use, and every one of them is there."""

from __future__ import annotations

import importlib
import subprocess
import sys

import glossogen.derive as derive


def test_every_exported_name_is_its_home_modules_object() -> None:
    assert sorted(derive.__all__) == sorted(derive._HOME)
    for name in derive.__all__:
        home = importlib.import_module(derive._HOME[name])
        assert getattr(derive, name) is getattr(home, name), name


def test_the_error_of_a_derived_run_loads_neither_the_fork_nor_the_survey() -> None:
    probe = (
        "import sys\nfrom glossogen.derive import DeriveError\n"
        "print(sorted(m for m in sys.modules if m.startswith('glossogen.derive.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "['glossogen.derive._state']"
