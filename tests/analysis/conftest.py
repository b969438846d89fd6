"""The analysis tests' fixtures: the run browser tests' real headless Chromium, and a deep folder."""

from pathlib import Path

import pytest

from tests.server.conftest import browser, shots

__all__ = ["browser", "deep_tmp", "shots"]


@pytest.fixture
def deep_tmp(tmp_path: Path) -> Path:
    """An empty folder whose path is longer than a refusal's cut (80), wherever pytest's is.

    A refusal echoes a path whole: a test naming files here checks that on every machine,
    not only where the temporary folder's path happens to be long (CI's is, a laptop's not).
    """
    deep = tmp_path / ("d" * 120)
    deep.mkdir()
    return deep
