"""Browser tests of the moderator's console: Playwright drives Debian's ``chromium`` against a live
server (``api_server`` / ``base_url`` of tests/client/conftest.py: real HTTP on 127.0.0.1, the
test database, the stand-in MemListener).

Playwright's sync API runs an asyncio loop in this thread while a browser is open, and Django
refuses database calls when it sees a running loop ("You cannot call this from an async
context"). The browser is therefore opened per module (not for the session, as pytest-playwright's
own fixtures would, which would leave the loop running for every later test) and
``DJANGO_ALLOW_ASYNC_UNSAFE`` is set only while it is open: the test code and the server thread
never share a connection. When a test fails, every page it opened is saved as a PNG under
``var/browser/failures/``. Without chromium the tests skip and say why (they fail instead when
``PERSONATREE_REQUIRE_CHROMIUM`` is set, as .ci/run does).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.client.conftest import api_server, base_url  # noqa: F401  (the live server)

ROOT = Path(__file__).resolve().parents[2]
FAILURES = ROOT / "var" / "browser" / "failures"
PAGES = ROOT / "var" / "browser" / "pages"
VIEWPORT = {"width": 1280, "height": 800}


def chromium_path() -> str | None:
    path = os.environ.get("PERSONATREE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    return path if os.path.exists(path) else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="module")
def chromium():
    executable = chromium_path()
    if executable is None:
        missing = "Debian's chromium is not installed (apt-get install chromium, or `make browser`)"
        if os.environ.get("PERSONATREE_REQUIRE_CHROMIUM"):  # CI installs it: a skip there would hide a gap
            pytest.fail(missing)
        pytest.skip(missing)
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (the dev extra)"
    )
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_api.sync_playwright().start()
    try:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield browser
        browser.close()
    finally:
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def new_tab(chromium, request):
    """``new_tab(viewport=...) -> page`` in a fresh browser context (its own cookies); pages are
    saved under var/browser/failures/ when the test fails."""
    contexts = []

    def make(viewport=None, context=None):
        if context is None:
            context = chromium.new_context(viewport=viewport or VIEWPORT)
            context.set_default_timeout(15_000)
            contexts.append(context)
        return context.new_page()

    yield make
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        FAILURES.mkdir(parents=True, exist_ok=True)
        for i, context in enumerate(contexts):
            for j, page in enumerate(context.pages):
                page.screenshot(path=str(FAILURES / f"{request.node.name}-{i}-{j}.png"), full_page=True)
    for context in contexts:
        context.close()
