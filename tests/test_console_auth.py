"""The console's door: the one-time login link signs in once and sets a strict cookie; a trusted
proxy's header counts only from that proxy; ``none`` never off loopback; every state change
needs the page's CSRF token and the console's own origin; every response carries the strict
content-security policy; the login token and cookie reach no log line and no page."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from console_app import csrf_of, run_session
from tether.cli import main
from tether.errors import InvalidArgument
from tether.runtime.approvals.rules import ApprovalRules, Person
from tether.store.memory import MemoryStore
from tether.web import Console, create_app
from tether.web.auth import COOKIE, Logins
from tether.web.security import CSP

TEMPLATES = Path(__file__).parent.parent / "src" / "tether" / "web" / "templates"
PROXIED = "header:X-Forwarded-Email"


def signed_in(console: Console, base_url: str = "http://testserver") -> tuple[TestClient, str]:
    """A client signed in through the login link, and the link's token."""
    app = create_app(console)
    link = app.state.logins.link_path()
    client = TestClient(app, base_url=base_url)
    response = client.get(link, follow_redirects=False)
    assert response.status_code == 303, response.text
    return client, link.split("token=")[1]


def test_the_login_link_signs_in_once_and_sets_a_strict_cookie() -> None:
    app = create_app(Console(MemoryStore(), operator="ada"))
    link = app.state.logins.link_path()
    first = TestClient(app)
    assert first.get("/sessions").status_code == 401  # nobody is signed in yet
    assert first.get("/login", follow_redirects=False).status_code == 401  # no token
    assert first.get("/login?token=nope", follow_redirects=False).status_code == 401  # wrong
    response = first.get(link, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/inbox"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    for flag in ("HttpOnly", "Path=/", "SameSite=strict"):
        assert flag in cookie
    assert "Secure" not in cookie  # plain http on loopback: a Secure cookie would never return
    page = first.get("/sessions")
    assert page.status_code == 200 and "ada" in page.text and "login-link" in page.text

    replayed = TestClient(app).get(link, follow_redirects=False)
    assert replayed.status_code == 401 and "set-cookie" not in replayed.headers
    assert "used already" in replayed.text
    assert first.get("/sessions").status_code == 200  # the first browser stays signed in


def test_the_cookie_is_secure_over_https() -> None:
    app = create_app(Console(MemoryStore()))
    client = TestClient(app, base_url="https://console.example")
    response = client.get(app.state.logins.link_path(), follow_redirects=False)
    assert "Secure" in response.headers["set-cookie"]


def test_a_forged_or_expired_cookie_signs_no_one_in() -> None:
    now = [1000.0]
    app = create_app(Console(MemoryStore()))
    app.state.logins = Logins(ttl=60, clock=lambda: now[0])
    client = TestClient(app)
    client.get(app.state.logins.link_path(), follow_redirects=False)
    assert client.get("/sessions").status_code == 200
    forged = TestClient(app, cookies={COOKIE: "made-up"})
    assert forged.get("/sessions").status_code == 401
    now[0] += 61
    assert client.get("/sessions").status_code == 401


def test_the_login_link_signs_in_only_a_listed_operator() -> None:
    rules = ApprovalRules(people={"alice@example.com": Person()})
    app = create_app(Console(MemoryStore(), rules, operator="mallory"))
    response = TestClient(app).get(app.state.logins.link_path(), follow_redirects=False)
    assert response.status_code == 403 and "set-cookie" not in response.headers


def test_a_proxy_header_counts_only_from_the_proxy() -> None:
    store = MemoryStore()
    rules = ApprovalRules(people={"alice@example.com": Person(tenant_id="acme")})
    trusted = TestClient(create_app(Console(store, rules, PROXIED,
                                            proxies=frozenset({"testclient"}))))
    page = trusted.get("/sessions", headers={"X-Forwarded-Email": "alice@example.com"})
    assert page.status_code == 200 and "alice@example.com" in page.text
    assert "header:X-Forwarded-Email" in page.text
    assert trusted.get("/sessions").status_code == 401  # the proxy named no one
    unknown = trusted.get("/sessions", headers={"X-Forwarded-Email": "eve@example.com"})
    assert unknown.status_code == 403 and "not listed" in unknown.text
    # the same header from an address that is not the proxy is anyone's word: refused
    direct = TestClient(create_app(Console(store, rules, PROXIED,
                                           proxies=frozenset({"10.0.0.9"}))))
    refused = direct.get("/sessions", headers={"X-Forwarded-Email": "alice@example.com"})
    assert refused.status_code == 401 and "alice" not in refused.text


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "console.example"])
def test_no_auth_is_refused_off_loopback(host: str) -> None:
    with pytest.raises(InvalidArgument, match="everyone who reaches"):
        Console(MemoryStore(), auth="none", host=host)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_no_auth_is_allowed_on_loopback(host: str) -> None:
    client = TestClient(create_app(Console(MemoryStore(), auth="none", host=host,
                                           operator="demo")))
    page = client.get("/sessions")
    assert page.status_code == 200 and "unauthenticated" in page.text


def test_an_unknown_auth_mode_is_refused() -> None:
    for auth in ("basic", "header:", "header:  ", "Link"):
        with pytest.raises(InvalidArgument, match="not one of"):
            Console(MemoryStore(), auth=auth)


def test_the_command_refuses_no_auth_off_loopback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["console", "--store", "memory://", "--auth", "none", "--host", "0.0.0.0",
                 "--port", "0"]) == 2
    assert "everyone who reaches 0.0.0.0" in capsys.readouterr().err


def test_a_state_change_needs_the_pages_token_and_origin() -> None:
    client, _ = signed_in(Console(MemoryStore()))
    token = csrf_of(client.get("/sessions").text)
    assert client.post("/logout").status_code == 403  # no token
    wrong = ("y" if token[0] == "x" else "x") + token[1:]  # one character off, never equal
    assert client.post("/logout", data={"csrf": wrong}).status_code == 403
    assert client.post("/logout", headers={"X-CSRF-Token": token[:-1]}).status_code == 403
    foreign = client.post("/logout", data={"csrf": token},
                          headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403 and "another site" in foreign.text
    null = client.post("/logout", data={"csrf": token}, headers={"Origin": "null"})
    assert null.status_code == 403  # a sandboxed frame, or a page under no-referrer
    lookalike = client.post("/logout", data={"csrf": token},
                            headers={"Origin": "https://testserver"})  # another scheme
    assert lookalike.status_code == 403
    assert client.get("/sessions").status_code == 200  # none of those signed out
    done = client.post("/logout", data={"csrf": token}, headers={"Origin": "http://testserver"})
    assert done.status_code == 200 and "Signed out" in done.text
    assert client.get("/sessions").status_code == 401


def test_the_token_may_come_as_a_header_or_a_multipart_field() -> None:
    client, _ = signed_in(Console(MemoryStore()))
    token = csrf_of(client.get("/sessions").text)
    assert client.post("/logout", headers={"X-CSRF-Token": token}).status_code == 200
    other, _ = signed_in(Console(MemoryStore()))
    theirs = csrf_of(other.get("/sessions").text)
    assert theirs != token  # each login session has its own
    assert other.post("/logout", files={"csrf": (None, theirs)}).status_code == 200


def test_a_header_identitys_token_is_its_own() -> None:
    rules = ApprovalRules(people={"alice@example.com": Person(), "bob@example.com": Person()})
    client = TestClient(create_app(Console(MemoryStore(), rules, PROXIED,
                                           proxies=frozenset({"testclient"}))))
    alice = {"X-Forwarded-Email": "alice@example.com"}
    bob = {"X-Forwarded-Email": "bob@example.com"}
    token_a = _token(client, alice)
    token_b = _token(client, bob)
    assert token_a != token_b
    assert token_a == _token(client, alice)  # stable for the person
    # Bob cannot post with Alice's token; each passes with their own (no route: 405 after it)
    assert client.post("/sessions", headers={**bob, "X-CSRF-Token": token_a}).status_code == 403
    assert client.post("/sessions", headers={**bob, "X-CSRF-Token": token_b}).status_code == 405


def test_behind_a_proxy_the_origin_is_the_one_the_proxy_names() -> None:
    client = TestClient(create_app(Console(MemoryStore(), auth=PROXIED,
                                           proxies=frozenset({"testclient"}))))
    alice = {"X-Forwarded-Email": "alice@example.com"}
    token = _token(client, alice)
    outside = {**alice, "X-CSRF-Token": token, "Origin": "https://console.example"}
    assert client.post("/sessions", headers=outside).status_code == 403  # not the Host
    named = {**outside, "X-Forwarded-Host": "console.example", "X-Forwarded-Proto": "https"}
    assert client.post("/sessions", headers=named).status_code == 405  # past the guard
    evil = {**named, "Origin": "https://evil.example"}
    assert client.post("/sessions", headers=evil).status_code == 403
    # a browser talking to a link console directly cannot name its own origin that way
    direct, _ = signed_in(Console(MemoryStore()))
    mine = csrf_of(direct.get("/sessions").text)
    forged = direct.post("/logout", data={"csrf": mine}, headers={
        "Origin": "http://evil.example", "X-Forwarded-Host": "evil.example"})
    assert forged.status_code == 403


def _token(client: TestClient, headers: dict[str, str]) -> str:
    page = client.get("/sessions", headers=headers).text
    found = re.search(r'<meta name="csrf-token" content="([^"]+)">', page)
    assert found, "the page carries no CSRF token"
    return found[1]


@pytest.mark.parametrize("path", ["/sessions", "/sessions?status=bogus", "/nowhere",
                                  "/login?token=wrong", "/static/console.css",
                                  "/static/live.js", "/"])
def test_every_response_carries_the_strict_headers(path: str) -> None:
    client, _ = signed_in(Console(MemoryStore()))
    response = client.get(path, follow_redirects=False)
    assert response.headers["content-security-policy"] == CSP
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "same-origin"  # no-referrer: Origin: null
    if not path.startswith("/static/"):
        assert response.headers["cache-control"] == "no-store"
    refused = TestClient(client.app).get(path, follow_redirects=False)  # not signed in
    assert refused.headers["content-security-policy"] == CSP


def test_no_template_carries_inline_script_or_style() -> None:
    for template in TEMPLATES.glob("*.html"):
        text = template.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), template.name
        assert not re.search(r"<style|\sstyle=|\son[a-z]+=", text, re.I), template.name


def test_neither_the_token_nor_the_cookie_reaches_a_page_or_a_log(
        caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryStore()
    run_session(store)
    caplog.set_level(logging.DEBUG)
    client, token = signed_in(Console(store))
    cookie = client.cookies[COOKIE]
    pages = [client.get(p).text for p in ("/sessions", "/sessions?fragment=1", "/nowhere")]
    pages.append(TestClient(client.app).get(f"/login?token={token}").text)  # the replay
    pages += [repr(client.app.state.logins), repr(client.app.state.console)]
    logged = [r.getMessage() for r in caplog.records  # the server's (uvicorn's: test_console_cli)
              if not r.name.startswith("httpx")]
    for text in [*pages, *logged]:
        assert token not in text and cookie not in text
