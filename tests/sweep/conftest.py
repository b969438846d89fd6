"""Fixtures of the sweep tests."""

from __future__ import annotations

import pytest

from tests.fixtures.model_stubs import StubModelServer


@pytest.fixture
def openai_stub(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    """The stub model server, answering this test's ``openai`` calls (a test key is set)."""
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return model_stub
