"""The documentation site as the README opens it: ``build/site/index.html`` from the disk, in a
1280-px browser window, with no network.

Every nav link opens an HTML page with its heading (not a folder listing, which is what directory
URLs give on ``file://``); search finds a page and opens it (Material runs its search in a Web
Worker, which a browser refuses to start from a file unless the vendored iframe-worker shim stands
in); nothing is fetched from off the disk but the repository widget's facts; and code fits its
column: no block of any page scrolls sideways at 1280 px, and the CLI reference is 80 columns.
Headless Debian Chromium through Playwright (tests/browser.py); waits on selectors, never sleeps.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import pytest
import yaml

from browser import chromium
from built_site import built_site  # noqa: F401
from doc_pages import ROOT
from test_docs_site import nav_pages
from tether._version import __version__

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, ViewportSize

WINDOW: ViewportSize = {"width": 1280, "height": 800}
TIMEOUT_MS = 60_000  # a loaded 2-core CI machine; every wait is on a selector or a navigation
CLI_COLUMNS = 80
# What a page may ask for off the disk: the theme's repository widget asks GitHub's API for the
# version, stars and forks of `repo_url` (offline, it shows the link without them). Nothing else.
ALLOWED_OFF_DISK = ("https://api.github.com/repos/",)

BLOCKS = """() => [...document.querySelectorAll('pre > code')].map(code => {
    const lines = code.textContent.replace(/\\n$/, '').split('\\n');
    const widest = lines.reduce((a, b) => (b.length > a.length ? b : a), '');
    return {scroll: code.scrollWidth, client: code.clientWidth, columns: widest.length, widest};
})"""


@dataclass(frozen=True)
class Visit:
    """One page as the browser showed it."""

    url: str
    title: str
    h1: str
    blocks: list[dict[str, Any]]  # BLOCKS' measures of each `pre > code`


@dataclass(frozen=True)
class Tour:
    """Every page of the site, each opened once: first by following the nav from index.html, then
    the pages no nav link reaches (404.html), and the off-disk URLs they asked for."""

    nav: list[str]  # the site-relative pages the nav links to, in its order
    pages: dict[str, Visit]  # by site-relative path
    broken: list[str]  # what each nav link that opened no page of the site opened instead
    asked: list[str]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@contextlib.contextmanager
def offline_page(browser: Browser) -> Iterator[tuple[Page, list[str]]]:
    """A 1280x800 page that reaches nothing but the disk, and the off-disk URLs it asked for."""
    context = browser.new_context(viewport=WINDOW)
    context.set_default_timeout(TIMEOUT_MS)
    asked: list[str] = []

    def route(route: Any) -> None:
        asked.append(route.request.url)
        route.abort()

    context.route(re.compile(r"^(?!file:)"), route)
    try:
        yield context.new_page(), asked
    finally:
        context.close()


def visit(page: Page) -> Visit:
    """The page now open, checked to be one of the site's HTML pages (not a folder listing,
    which a directory URL opens on file://) showing its heading."""
    url = page.url.split("#", 1)[0]
    assert url.endswith(".html"), f"{page.url} is not an HTML page (a folder listing?)"
    title = page.title()
    assert not title.startswith("Index of"), f"{page.url} is a folder listing"
    heading = page.locator(".md-content h1").first
    heading.wait_for(state="visible")
    h1 = heading.inner_text().strip()
    assert h1, f"{page.url} has an empty h1"
    return Visit(url, title, h1, page.evaluate(BLOCKS))


def open_page(page: Page, path: Path) -> Visit:
    page.goto(path.as_uri(), wait_until="domcontentloaded")  # the layout, not every image
    return visit(page)


def relative(url: str, site: Path) -> str:
    """A file:// URL's path inside the site, as the nav's pages are named in it."""
    path = Path(url2pathname(urlsplit(url).path))
    return str(path.relative_to(site)) + ("/" if url.split("#", 1)[0].endswith("/") else "")


@pytest.fixture(scope="module")
def tour(built_site: Path, browser: Browser) -> Tour:  # noqa: F811
    with offline_page(browser) as (page, asked):
        pages = {"index.html": open_page(page, built_site / "index.html")}
        links = page.eval_on_selector_all(
            "nav.md-nav--primary a.md-nav__link[href]", "links => links.map(a => a.href)")
        nav, broken = [], []
        for link in dict.fromkeys(link for link in links if "#" not in link):
            page.goto(link, wait_until="domcontentloaded")
            nav.append(relative(link, built_site))
            try:
                pages[relative(page.url, built_site)] = visit(page)
            except AssertionError as problem:  # the nav test reports it; the others go on
                broken.append(str(problem).split("\n", 1)[0])
        for path in sorted(built_site.rglob("*.html")):  # every page, reached by a link or not
            if str(path.relative_to(built_site)) not in pages:
                pages[str(path.relative_to(built_site))] = open_page(page, path)
        return Tour(nav, pages, broken, list(asked))


def expected_pages() -> set[str]:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    return {p.removesuffix(".md") + ".html" for p in nav_pages(config["nav"])}


def test_every_nav_link_opens_its_page_from_the_disk(tour: Tour) -> None:
    assert not tour.broken, "nav links that open no page:\n" + "\n".join(tour.broken)
    assert set(tour.nav) == expected_pages(), "the nav and mkdocs.yml's nav disagree"
    for name in tour.nav:
        assert name in tour.pages, f"the nav's link to {name} went elsewhere"
    assert all(url.startswith(ALLOWED_OFF_DISK) for url in tour.asked), tour.asked


def test_search_finds_a_page_and_opens_it_from_the_disk(
        built_site: Path, browser: Browser) -> None:  # noqa: F811
    with offline_page(browser) as (page, asked):
        open_page(page, built_site / "index.html")
        search = page.locator("input.md-search__input")
        search.click()
        search.press_sequentially("budget")  # keys, as a reader types them
        first = page.locator(".md-search-result__item a.md-search-result__link").first
        first.wait_for(state="visible")
        href = (first.get_attribute("href") or "").split("#", 1)[0]
        first.click()
        page.wait_for_url(lambda url: url != (built_site / "index.html").as_uri())
        landed = visit(page)
        assert landed.url == href, (landed.url, href)
        assert "budget" in page.locator(".md-content").inner_text().lower()
        assert all(url.startswith(ALLOWED_OFF_DISK) for url in asked), asked


def test_no_code_block_scrolls_sideways_at_1280_px(tour: Tour) -> None:
    """Code keeps its source lines within the column; program output (text blocks) wraps."""
    overflowing = [f"{name}: {block['columns']} columns, {block['scroll']} px in "
                   f"{block['client']} px: {block['widest'][:60]!r}"
                   for name, shown in sorted(tour.pages.items()) for block in shown.blocks
                   if block["scroll"] > block["client"]]
    assert len(tour.pages) >= len(expected_pages())
    assert not overflowing, ("code blocks that scroll sideways in a 1280-px window (wrap them "
                             "at 100 columns):\n" + "\n".join(overflowing))


def test_the_cli_reference_is_80_columns_and_fits(tour: Tour) -> None:
    blocks = tour.pages["reference/cli.html"].blocks
    assert len(blocks) > 30  # one per command and sub-command
    for block in blocks:
        assert block["columns"] <= CLI_COLUMNS, block["widest"]
        assert block["scroll"] <= block["client"], block["widest"]


def test_the_site_says_which_tether_it_documents(tour: Tour) -> None:
    for name, shown in tour.pages.items():
        assert f"tether {__version__}" in shown.title, (name, shown.title)
