"""The approvals inbox, attacked through the app: every attack refused and recorded.

Sessions come from a real agent (tests/console_inbox_helpers.py) on SQLite and PostgreSQL. Each
attack is a POST the inbox's own form could not have sent as it was rendered — edited arguments,
a replay, another session's or tenant's request, self-approval, a role the tool needs, break-glass
without the role, an expired request, a stale page, a forged store row — and each is refused
with the status the page gives it AND recorded: on the request's ``attempts`` and in the store's
anchor chain (kind ``attempt``). Crashes, races and the guide's rules file:
tests/test_console_approval_races.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

import console_inbox_helpers as h
from audit_helpers import store_url
from console_inbox_helpers import (
    RULES,
    csrf_of,
    current,
    only_request,
    post,
    refused_and_recorded,
)
from tether.runtime.approvals import requests
from tether.store.base import Store
from tether.store.opening import open_store


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with store_url(request.param, tmp_path) as made:
        yield made


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    opened = open_store(url)
    yield opened
    opened.close()


# -- what the page shows ---------------------------------------------------------------------

def test_the_inbox_shows_the_exact_call_its_origins_spend_and_expiry(url: str,
                                                                      store: Store) -> None:
    sid = h.paused(url)
    aid = only_request(store, sid)
    page = h.client(store, "alice@acme.test", RULES).get("/inbox")
    assert page.status_code == 200
    body = page.text
    assert "<code>transfer</code>" in body and aid in body
    assert "&#34;DE44500105175407324931&#34;" in body and "<code>250</code>" in body
    assert "transfer needs a person" in body and "treasury.side-effects" in body
    assert body.count('<tr class="untrusted">') == 2  # both arguments echo the e-mail
    assert "runs for</dt><dd>bob" in body and f'href="/sessions/{sid}"' in body
    assert "of 10" in body and "of 5" in body  # steps and tool calls against the budget
    assert '<time class="expiry" datetime="' in body and "expires in 59 min" in body
    assert 'name="break_glass"' not in body  # alice has no break-glass role
    assert 'data-live-source="/events/inbox" data-live-fetch="/inbox?fragment=1"' in body
    rows = h.client(store, "alice@acme.test", RULES).get("/inbox?fragment=1").text
    assert "<html" not in rows and f'id="{aid}"' in rows
    assert 'name="break_glass"' in h.client(store, "olga@acme.test", RULES).get("/inbox").text
    other = h.client(store, "mallory@globex.test", RULES).get("/inbox").text
    assert aid not in other and "Nothing waits" in other


def test_an_argument_that_is_markup_is_shown_as_text(url: str, store: Store) -> None:
    hostile = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    aid = only_request(store, h.paused(url, arguments={"amount": 250, "iban": hostile}))
    body = h.client(store, "alice@acme.test", RULES).get("/inbox").text
    assert aid in body and "<script>alert" not in body and "<img src=x" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_a_field_the_policy_hid_stays_hidden_on_every_page(url: str, store: Store) -> None:
    sid = h.paused(url, hide=("iban",))
    aid = only_request(store, sid)
    alice = h.client(store, "alice@acme.test", RULES)
    for shown in (alice.get("/inbox").text, alice.get("/inbox?fragment=1").text):
        assert aid in shown and "[masked]" in shown and "DE44500105175407324931" not in shown
    seen = h.shown_version(alice.get("/inbox").text, aid)
    assert post(alice, aid, verdict="approve", seen=seen).status_code == 303
    decided = alice.get(f"/inbox?decided={aid}").text
    assert sid in decided and "DE44500105175407324931" not in decided


def test_approving_redirects_to_what_was_decided_and_how_to_resume(url: str,
                                                                   store: Store) -> None:
    sid = h.paused(url)
    aid = only_request(store, sid)
    alice = h.client(store, "alice@acme.test", RULES)
    seen = h.shown_version(alice.get("/inbox").text, aid)
    done = post(alice, aid, verdict="approve", note="checked with Bob by phone", seen=seen)
    assert done.status_code == 303 and done.headers["location"] == f"/inbox?decided={aid}"
    record = store.get_approval(aid)
    assert record is not None
    assert (record["status"], record["approver"], record["approver_auth"], record["note"]) == \
        ("approved", "alice@acme.test", f"header:{h.HEADER}", "checked with Bob by phone")
    assert not record.get("attempts")
    page = alice.get(done.headers["location"]).text
    assert f"tether resume {sid} --agent MODULE:ATTR --store " in page
    assert "approved" in page and aid not in page.split('id="inbox"', 1)[1]
    assert h.agent(url).resume(sid).stop_reason.value == "finished"


def test_denying_needs_the_same_form_and_is_recorded_as_a_denial(url: str,
                                                                 store: Store) -> None:
    sid = h.paused(url, tenant=None, user="")
    aid = only_request(store, sid)
    anyone = h.client(store)  # auth="none": an unauthenticated operator
    seen = h.shown_version(anyone.get("/inbox").text, aid)
    assert post(anyone, aid, verdict="deny", note="no", seen=seen).status_code == 303
    record = store.get_approval(aid)
    assert record is not None and record["status"] == "denied"
    assert record["approver_auth"] == "unauthenticated"


# -- the attacks ---------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["arguments", "approver", "tool", "call_hash"])
def test_an_edited_request_is_refused_and_recorded(url: str, store: Store, field: str) -> None:
    sid = h.paused(url)
    aid = only_request(store, sid)
    alice = h.client(store, "alice@acme.test", RULES)
    seen = h.shown_version(alice.get("/inbox").text, aid)
    edited = post(alice, aid, verdict="approve", seen=seen, **{field: '{"amount": 1}'})
    assert edited.status_code == 400 and field in edited.text
    refused_and_recorded(store, aid, "fields the inbox never sends", field)
    assert store.get_approval(aid)["status"] == "pending"  # type: ignore[index]


@pytest.mark.parametrize(("fields", "why"), [
    ({"verdict": "approve"}, "which version"),  # no seen: decide() would skip the stale check
    ({"verdict": "maybe", "seen": "x"}, "approve or deny"),
])
def test_a_form_the_inbox_never_sends_is_refused(url: str, store: Store,
                                                 fields: dict[str, str], why: str) -> None:
    aid = only_request(store, h.paused(url))
    answer = post(h.client(store, "alice@acme.test", RULES), aid, **fields)
    assert answer.status_code == 400 and why in answer.text
    refused_and_recorded(store, aid, why)


def test_a_repeated_field_is_refused(url: str, store: Store) -> None:
    aid = only_request(store, h.paused(url))
    alice = h.client(store, "alice@acme.test", RULES)
    seen = h.shown_version(alice.get("/inbox").text, aid)
    answer = alice.post(f"/inbox/{aid}/decide",
                        content=f"verdict=deny&verdict=approve&seen={seen}&csrf={csrf_of(alice)}",
                        headers={"content-type": "application/x-www-form-urlencoded"})
    assert answer.status_code == 400
    refused_and_recorded(store, aid, "more than once", "verdict")


def test_a_field_sent_as_a_file_is_refused(url: str, store: Store) -> None:
    aid = only_request(store, h.paused(url))
    alice = h.client(store, "alice@acme.test", RULES)
    seen = h.shown_version(alice.get("/inbox").text, aid)
    answer = alice.post(f"/inbox/{aid}/decide",
                        data={"verdict": "approve", "seen": seen, "csrf": csrf_of(alice)},
                        files={"note": ("note.txt", b"approved, see attachment")})
    assert answer.status_code == 400
    refused_and_recorded(store, aid, "is a file")


def test_a_wrong_csrf_token_is_refused_before_any_page_runs(url: str, store: Store) -> None:
    aid = only_request(store, h.paused(url))
    alice = h.client(store, "alice@acme.test", RULES)
    seen = h.shown_version(alice.get("/inbox").text, aid)
    forged = post(alice, aid, verdict="approve", seen=seen, csrf="forged")
    assert forged.status_code == 403  # type: ignore[attr-defined]
    record = store.get_approval(aid)  # a forged request is an attack on the person, whose
    assert record is not None and record["status"] == "pending"  # name it carries: it
    assert not record.get("attempts")  # reaches no decision, and is not theirs to record
    assert post(alice, aid, verdict="approve", seen=seen).status_code == 303  # type: ignore[attr-defined]


def test_a_replayed_approval_is_refused_and_a_used_one_cannot_be_approved_again(
        url: str, store: Store) -> None:
    sid = h.paused(url)
    aid = only_request(store, sid)
    alice = h.client(store, "alice@acme.test", RULES)
    form = {"verdict": "approve", "note": "ok",
            "seen": h.shown_version(alice.get("/inbox").text, aid)}
    assert post(alice, aid, **form).status_code == 303
    replay = post(alice, aid, **form)
    assert replay.status_code == 409 and "stale" in replay.text
    refused_and_recorded(store, aid, "stale", "approved by alice@acme.test")
    assert h.agent(url).resume(sid).stop_reason.value == "finished"
    again = post(alice, aid, verdict="approve", seen=current(store, aid))  # even up to date
    assert again.status_code == 409 and "already used" in again.text
    refused_and_recorded(store, aid, "already used", count=2)
    assert store.get_approval(aid)["status"] == "used"  # type: ignore[index]


def test_another_sessions_page_cannot_approve_this_request(url: str, store: Store) -> None:
    a, b = only_request(store, h.paused(url)), only_request(store, h.paused(url))
    alice = h.client(store, "alice@acme.test", RULES)
    page = alice.get("/inbox").text
    crossed = post(alice, a, verdict="approve", seen=h.shown_version(page, b))
    assert crossed.status_code == 409 and "stale" in crossed.text
    refused_and_recorded(store, a, "stale")
    assert [store.get_approval(x)["status"] for x in (a, b)] == ["pending"] * 2  # type: ignore[index]


def test_another_tenants_request_is_not_found_and_the_attempt_is_recorded(
        url: str, store: Store) -> None:
    aid = only_request(store, h.paused(url))
    mallory = h.client(store, "mallory@globex.test", RULES)
    crossed = post(mallory, aid, verdict="approve", seen=current(store, aid))
    unknown = post(mallory, "apr_0000000000000000dead", verdict="approve", seen="x")
    assert crossed.status_code == unknown.status_code == 404
    assert crossed.text.replace(aid, "ID") == unknown.text.replace("apr_0000000000000000dead",
                                                                   "ID")
    refused_and_recorded(store, aid, "not of tenant 'acme'")
    edited = post(mallory, aid, verdict="approve", seen="x", arguments="{}")
    assert edited.status_code == 404  # still nothing to see, still recorded
    refused_and_recorded(store, aid, "fields the inbox never sends", count=2)
    assert store.get_approval(aid)["status"] == "pending"  # type: ignore[index]


def test_the_sessions_own_user_cannot_approve_it(url: str, store: Store) -> None:
    aid = only_request(store, h.paused(url, user="bob"))
    bob = h.client(store, "bob", RULES)
    own = post(bob, aid, verdict="approve", seen=h.shown_version(bob.get("/inbox").text, aid))
    assert own.status_code == 409 and "self-approval is refused" in own.text
    refused_and_recorded(store, aid, "self-approval")
    assert store.get_approval(aid)["status"] == "pending"  # type: ignore[index]


def test_a_tool_that_needs_a_role_is_approved_only_by_it(url: str, store: Store) -> None:
    aid = only_request(store, h.paused(url, tool_name="refund"))
    alice = h.client(store, "alice@acme.test", RULES)
    seen = h.shown_version(alice.get("/inbox").text, aid)
    missing = post(alice, aid, verdict="approve", seen=seen)
    assert missing.status_code == 409 and "finance" in missing.text
    refused_and_recorded(store, aid, "refund may be approved only by the roles ['finance']")
    carol = h.client(store, "carol@acme.test", RULES)
    assert post(carol, aid, verdict="approve", seen=seen).status_code == 303


def test_break_glass_needs_the_role_and_is_marked_when_used(url: str, store: Store) -> None:
    aid = only_request(store, h.paused(url, tool_name="refund"))
    alice = h.client(store, "alice@acme.test", RULES)
    seen = h.shown_version(alice.get("/inbox").text, aid)
    glass = post(alice, aid, verdict="approve", seen=seen, break_glass="1")
    assert glass.status_code == 409 and "may not break glass" in glass.text
    refused_and_recorded(store, aid, "may not break glass")
    olga = h.client(store, "olga@acme.test", RULES)  # an operator: not finance, may break glass
    assert post(olga, aid, verdict="approve", seen=seen).status_code == 409
    assert post(olga, aid, verdict="approve", seen=seen, note="outage",
                break_glass="1").status_code == 303
    record = store.get_approval(aid)
    assert record is not None and record["status"] == "approved" and record["break_glass"]
    decided = [a for a in store.anchors() if a.kind == "approval" and aid in a.body]
    assert decided and '"break_glass":true' in decided[-1].body.replace(" ", "")
    assert "break-glass" in olga.get(f"/inbox?decided={aid}").text


def test_an_expired_request_cannot_be_approved_but_can_be_denied(
        url: str, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    aid = only_request(store, h.paused(url, ttl=60))
    alice = h.client(store, "alice@acme.test", RULES)
    seen = h.shown_version(alice.get("/inbox").text, aid)
    later = time.time() + 61  # the approvals' clock, a minute on: the request has expired
    monkeypatch.setattr(requests, "time", SimpleNamespace(time=lambda: later))
    assert aid not in alice.get("/inbox").text  # the inbox lists only what can be decided
    late = post(alice, aid, verdict="approve", seen=seen)
    assert late.status_code == 409 and "expired" in late.text
    refused_and_recorded(store, aid, "expired")
    assert post(alice, aid, verdict="deny", note="too late", seen=seen).status_code == 303
    assert store.get_approval(aid)["status"] == "denied"  # type: ignore[index]


def test_a_page_rendered_before_another_approver_decided_is_stale(url: str,
                                                                  store: Store) -> None:
    aid = only_request(store, h.paused(url))
    alice, carol = (h.client(store, n, RULES) for n in ("alice@acme.test", "carol@acme.test"))
    old = h.shown_version(alice.get("/inbox").text, aid)
    assert post(carol, aid, verdict="deny", seen=h.shown_version(
        carol.get("/inbox").text, aid)).status_code == 303
    stale = post(alice, aid, verdict="approve", seen=old)
    assert stale.status_code == 409 and "it is denied by carol@acme.test" in stale.text
    refused_and_recorded(store, aid, "stale")
    assert store.get_approval(aid)["status"] == "denied"  # type: ignore[index]


def test_a_page_rendered_before_the_session_moved_on_is_stale(url: str, store: Store) -> None:
    sid = h.paused(url)
    aid = only_request(store, sid)
    alice = h.client(store, "alice@acme.test", RULES)
    old = h.shown_version(alice.get("/inbox").text, aid)
    assert h.agent(url).resume(sid).stop_reason.value == "needs_approval"  # moved on, still waits
    stale = post(alice, aid, verdict="approve", seen=old)
    assert stale.status_code == 409 and "last event is now session.paused" in stale.text
    refused_and_recorded(store, aid, "stale")
    fresh = h.shown_version(alice.get("/inbox").text, aid)
    assert fresh != old and post(alice, aid, verdict="approve", seen=fresh).status_code == 303


@pytest.mark.parametrize("forgery", ["a new row", "edited arguments"])
def test_a_forged_store_row_is_shown_as_forged_and_cannot_be_decided(
        url: str, store: Store, forgery: str) -> None:
    sid = h.paused(url)
    real = store.get_approval(only_request(store, sid))
    assert real is not None
    mallory = {"amount": 25000, "iban": "MALLORY"}
    if forgery == "a new row":  # straight into the store: no session asked for it
        aid, why = "apr_f0f0f0f0f0f0f0f0f0f0", "never asked for apr_f0f0f0f0f0f0f0f0f0f0"
        store.put_approval({**real, "id": aid, "arguments": mallory, "attempts": []})
    else:  # the real request's arguments rewritten in the database
        aid, why = real["id"], "its arguments differ from what the journal asked for"
        assert store.update_approval(aid, "pending", {"arguments": mallory})
    alice = h.client(store, "alice@acme.test", RULES)
    page = alice.get("/inbox").text
    article = page.split(f'id="{aid}"', 1)[1].split("</article>", 1)[0]
    assert "Forged:" in article and why in article and "MALLORY" in article
    assert "<form" not in article and "Approve" not in article
    tried = post(alice, aid, verdict="approve", seen=current(store, aid))
    assert tried.status_code == 409 and "not the one the session asked for" in tried.text
    refused_and_recorded(store, aid, "not the one the session asked for", why)
    assert store.get_approval(aid)["status"] == "pending"  # type: ignore[index]
