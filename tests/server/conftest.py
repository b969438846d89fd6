"""Fixtures of the browser tests in a real headless Chromium: the browser, the screenshots."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.fixtures.parts import require_part

T = TypeVar("T")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]  # fmt: skip

TIMEOUT_MS = 0
"""How long a browser test waits for a page to show what the log holds: Playwright's 0, as long
as it takes (``tests/fixtures/polling.py`` says why no wait has a bound of its own). Every page
the ``browser`` fixture opens has it as its default, so a call given no timeout (``goto``,
``click``, ``wait_for_selector``) is not bounded by Playwright's 30 s either."""


class Chromium:
    """The launched browser, opening each page in a context of its own whose calls wait
    :data:`TIMEOUT_MS` by default (Playwright's ``Browser.new_page`` would leave them 30 s)."""

    def __init__(self, browser: Any) -> None:
        self.browser = browser

    def new_page(self, **options: Any) -> Any:
        """A page in a new context made with ``options`` (viewport, accept_downloads...)."""
        context = self.browser.new_context(**options)
        context.set_default_timeout(TIMEOUT_MS)
        context.set_default_navigation_timeout(TIMEOUT_MS)
        return context.new_page()


@pytest.fixture(scope="module")
def shots() -> Path:
    """The screenshots folder (printed, so a reader of the test log can look at them)."""
    folder = Path(os.environ.get("GLOSSOGEN_SCREENSHOTS") or "/tmp/glossogen-browser-shots")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots: {folder}")
    return folder


@contextmanager
def launched_chromium() -> Iterator[Any]:
    """Launch a real headless Debian Chromium; close it on exit (both about 0.9 CPU-s)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (python -m tests does)")
    require_part("playwright.sync_api", "the dev group's playwright: uv sync")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def chromium() -> Iterator[Any]:
    """A Chromium launched for the test.

    Playwright's sync API runs an event loop in this thread while the browser is up, and
    ``asyncio.run`` will not start beside it: a file none of whose tests runs one while its
    browser is up (a fixture may, through :func:`played_apart`) overrides this fixture with a
    module-scoped one, launched once for all its tests."""
    with launched_chromium() as launched:
        yield launched


@pytest.fixture
def browser(chromium: Any) -> Iterator[Chromium]:
    """A real headless Debian Chromium for one test, its pages' calls waiting as long as it
    takes: each page in a context of its own, every context the test opened closed after it (no
    page of one test still loads or streams in the next, when :func:`chromium` is the file's)."""
    yield Chromium(chromium)
    for context in chromium.contexts:
        context.close()


def played_apart(play: Callable[[], T]) -> T:
    """Call ``play`` in a thread of its own and return what it returns: ``asyncio.run`` (a
    played run, the CLI's evaluate) will not start in a thread where Playwright's loop runs."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(play).result()
