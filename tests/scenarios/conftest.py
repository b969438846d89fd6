"""Fixtures the scenario tests share."""

from __future__ import annotations

import pytest

from tests.fixtures.model_stubs import StubModelServer


@pytest.fixture
def openai_stub(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    """The stub model server, as the OpenAI endpoint every seat (and judge) of a run calls."""
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return model_stub
