"""The console in a real browser (headless Debian Chromium through Playwright, tests/browser.py):
the login link signs in and lands on the inbox; the session list filters, pages by its "next"
link, and grows by itself when a matching session is stored (static/live.js over server-sent
events); and the strict content-security policy refuses nothing the console serves (no
violation in the browser's console); signing out, a form post, passes the CSRF and origin
checks as a browser sends it. Waits on selectors and navigations, never on sleeps."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from browser import chromium
from console_app import run_session, served
from tether.store.sqlite import SQLiteStore
from tether.web import Console
from tether.web.sessions import PAGE

if TYPE_CHECKING:
    from playwright.sync_api import ConsoleMessage

# Chromium reports a refused script or style on its console only sometimes; the DOM's event is sure
REPORT_VIOLATIONS = """document.addEventListener('securitypolicyviolation', e =>
    console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));"""
TIMEOUT_MS = 60_000  # a loaded 2-core machine; every wait is on a selector or a navigation


def test_sign_in_filter_page_and_watch_the_list_grow(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    walkers = {run_session(store, agent="walker") for _ in range(PAGE + 3)}
    run_session(store, agent="other")
    messages: list[str] = []
    with served(Console(store)) as (base, app), chromium() as browser:
        context = browser.new_context()
        context.set_default_timeout(TIMEOUT_MS)
        context.add_init_script(REPORT_VIOLATIONS)  # Playwright's own script: CSP exempts it
        page = context.new_page()

        def heard(message: ConsoleMessage) -> None:
            messages.append(f"{message.type}: {message.text}")

        page.on("console", heard)
        page.goto(base + app.state.logins.link_path())
        assert page.url == f"{base}/inbox"  # signed in, on the inbox

        page.goto(f"{base}/sessions")
        page.wait_for_selector("tr.session")
        assert page.locator("tr.session").count() == PAGE  # walkers and the other, newest first
        page.fill("input[name=agent]", "walker")
        page.click("form.filters button[type=submit]")
        page.wait_for_url(re.compile(r"/sessions\?.*agent=walker"))
        first = page.eval_on_selector_all("tr.session", "rows => rows.map(r => r.dataset.session)")
        assert len(first) == PAGE and set(first) <= walkers
        page.click("#next")
        page.wait_for_url(re.compile(r"[?&]after="))
        assert "agent=walker" in page.url  # the filter survives paging
        rest = page.eval_on_selector_all("tr.session", "rows => rows.map(r => r.dataset.session)")
        assert set(first) | set(rest) == walkers and not set(first) & set(rest)

        with ThreadPoolExecutor(1) as writer:  # stored while the page loads, before its stream
            page.route("**/events/sessions*", lambda route: (  # looks: the first fetch shows it
                writer.submit(run_session, store, agent="between").result(), route.continue_()))
            page.goto(f"{base}/sessions?agent=between")
            page.wait_for_selector("tr.session")  # no reload, no event: the fetch after `ready`
            page.unroute("**/events/sessions*")

        page.goto(f"{base}/sessions?agent=latecomer")
        page.wait_for_selector("tr.empty")
        page.wait_for_selector("tbody[data-live-ready]", state="attached")  # the stream looked
        with ThreadPoolExecutor(1) as writer:  # another thread: Playwright's loop runs in this one
            late = writer.submit(run_session, store, agent="latecomer").result()
        page.wait_for_selector(f'tr[data-session="{late}"]')  # live.js fetched the new rows

        with page.expect_navigation():
            page.click("form.logout button")  # a real form post: token, origin and all
        assert page.inner_text("body").strip().endswith("Open a new login link to sign in "
                                                        "again."), page.inner_text("body")
        page.goto(f"{base}/sessions")
        assert page.locator("h1").inner_text() == "Not signed in"
        context.close()
    violations = [m for m in messages if "Content Security Policy" in m or "Refused" in m]
    assert violations == [], violations
