"""The analysis tests' fixtures: the run browser tests' real headless Chromium, and a deep folder."""

from pathlib import Path

import pytest

from tests.fixtures.model_stubs import StubModelServer
from tests.providers.test_wire_formats import pd_player
from tests.server.conftest import browser, chromium, shots

__all__ = ["browser", "chromium", "deep_tmp", "pd_stub", "shots"]


@pytest.fixture
def pd_stub(
    prefect_api: str, model_stub: StubModelServer, monkeypatch: pytest.MonkeyPatch
) -> StubModelServer:
    """The OpenAI stub as ``openai``'s endpoint, playing every prisoners_dilemma seat it serves.

    With a Prefect API (a played run's round loop reports to it).
    """
    monkeypatch.setenv("OPENAI_BASE_URL", model_stub.base_url)
    model_stub.responder = pd_player
    return model_stub


@pytest.fixture
def deep_tmp(tmp_path: Path) -> Path:
    """An empty folder whose path is longer than a refusal's cut (80), wherever pytest's is.

    A refusal echoes a path whole: a test naming files here checks that on every machine,
    not only where the temporary folder's path happens to be long (CI's is, a laptop's not).
    """
    deep = tmp_path / ("d" * 120)
    deep.mkdir()
    return deep
