"""Fixtures of the sweep tests."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.model_stubs import StubModelServer
from tests.providers.test_wire_formats import pd_player


@pytest.fixture
def openai_stub(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    """The stub model server, answering this test's ``openai`` calls (a test key is set)."""
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return model_stub


HELD_MODEL = "llama-a"
"""The self-hosted model the long sweeps' seats play on (:func:`slow_players`)."""

HELD_SECONDS = 0.5
"""How long the stub holds each answer of :func:`slow_players` (real seconds)."""


@pytest.fixture
def slow_players(model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch) -> StubModelServer:
    """Prisoners' dilemma players behind the stub, each answer held :data:`HELD_SECONDS`.

    For the sweeps a test interrupts mid-game: a run in flight waits on its model's answer (I/O)
    instead of playing scripted rounds flat out, so the test's wait for every run to be mid-game
    burns no CPU, and a run the signal reaches has a request in flight, as a hosted model's has.
    Runs on the virtual clock (``model_stub``): a held answer takes no game time. Subprocesses
    started during the test inherit the model's URL and key.
    """
    model_stub.latency = HELD_SECONDS
    model_stub.responder = pd_player
    monkeypatch.setenv("SELF_HOSTED_API_KEY", "sk-test")
    monkeypatch.setenv("SELF_HOSTED_BASE_URLS", json.dumps({HELD_MODEL: model_stub.base_url}))
    return model_stub
