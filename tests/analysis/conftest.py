"""The analysis tests' browser fixtures: the run browser tests' real headless Chromium."""

from tests.server.conftest import browser, shots

__all__ = ["browser", "shots"]
