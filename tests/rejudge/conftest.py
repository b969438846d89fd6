"""Fixtures of the rejudge tests: the stub model server answering ``openai`` (the sweep's)."""

from tests.sweep.conftest import openai_stub

__all__ = ["openai_stub"]
