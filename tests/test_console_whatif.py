"""The what-if page: a pasted YAML policy asked every recorded decision of the chosen sessions
(ids, or the session list's filter within the viewer's tenant); the decisions that would change
listed per session; a policy that does not load shows the loader's own error; a session whose
chain is broken is skipped and said so; nothing is stored."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from audit_helpers import Raw, store_url
from console_sessions import client, post_form, treasury
from tether.policy.yaml_policy import YamlPolicy
from tether.policy.yaml_source import PolicyLoadError
from tether.store import open_store
from tether.store.base import Store

FREEZE = """\
version: 1
policy_id: freeze
default: allow
rules:
  - id: no-transfers
    effect: deny
    reason: no transfers this week
    when: {tool: transfer}
"""


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with store_url("sqlite", tmp_path) as made:
        yield made


def changed(page: str) -> list[tuple[str, str]]:
    """(session id, what changed) for each listed change."""
    found = []
    for section in page.split('<section class="whatif-session">')[1:]:
        sid = re.search(r'<a href="/sessions/([^"]+)">', section)
        assert sid is not None
        found += [(sid.group(1), " -> ".join(m)) for m in re.findall(
            r'<tr class="change">.*?<td>([^<]+)</td><td>([^<]+)</td>', section, re.S)]
    return found


def snapshot(store: Store) -> tuple[object, ...]:
    return (tuple((i.session_id, i.events, i.last_type) for i in store.sessions()),
            tuple(sorted(str(a) for a in store.list_approvals())))


def test_the_decisions_a_pasted_policy_would_change_are_listed_and_nothing_is_stored(
        url: str) -> None:
    first = treasury(url).session("move 900 to ACME-7")
    first.run()
    second = treasury(url).session("move 900 to ACME-8")
    second.run()
    store = open_store(url)
    before = snapshot(store)
    console = client(store)
    form = console.get(f"/whatif?sessions={first.id}")
    assert f'name="sessions" value="{first.id}"' in form.text
    assert '<input type="hidden" name="csrf"' in form.text
    page = post_form(console, "/whatif", {"policy": FREEZE, "sessions": first.id})
    assert page.status_code == 200
    assert changed(page.text) == [
        (first.id, "require_approval (treasury-approvals) -> deny (freeze:no-transfers)")]
    assert "1 of 2 decisions in 1 session would change" in page.text
    assert "no transfers this week" in page.text
    both = post_form(console, "/whatif", {"policy": FREEZE,
                                         "sessions": f"{first.id}, {second.id}"})
    assert [sid for sid, _ in changed(both.text)] == [first.id, second.id]
    assert snapshot(store) == before


def test_a_policy_that_does_not_load_shows_the_loaders_error(url: str) -> None:
    session = treasury(url).session("move 900 to ACME-7")
    session.run()
    broken = FREEZE.replace("effect: deny", "effect: forbid")
    with pytest.raises(PolicyLoadError) as loader:
        YamlPolicy.from_string(broken, "the pasted policy")
    page = post_form(client(open_store(url)), "/whatif", {"policy": broken,
                                                         "sessions": session.id})
    assert page.status_code == 400
    error = re.search(r'<p class="error" id="policy-error">(.*?)</p>', page.text, re.S)
    assert error is not None and error.group(1) == str(loader.value).replace("'", "&#39;")
    assert "would change" not in page.text
    assert "effect: forbid" in page.text  # the pasted text is kept to fix


def test_a_broken_chain_is_skipped_and_said_so(url: str) -> None:
    session = treasury(url).session("move 900 to ACME-7")
    session.run()
    raw = Raw(url)
    edited = raw.row(session.id, 2)["data"]
    edited["step"] = 7
    raw.set(session.id, 2, "data", edited)
    raw.close()
    page = post_form(client(open_store(url)), "/whatif", {"policy": FREEZE,
                                                         "sessions": session.id})
    assert changed(page.text) == []
    assert f"not replayed: session {session.id}: seq 2: edited" in page.text


@pytest.fixture(params=["sqlite", "postgres"])
def any_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with store_url(request.param, tmp_path) as made:
        yield made


def test_the_list_filter_replays_only_the_viewers_tenant(any_url: str) -> None:
    acme = treasury(any_url, "acme").session("move 900 to ACME-7")
    acme.run()
    globex = treasury(any_url, "globex").session("move 900 to GLOBEX-1")
    globex.run()
    store = open_store(any_url)
    try:
        alice = client(store, auth="header:X-User")
        alice.headers["X-User"] = "alice"  # of acme
        mine = post_form(alice, "/whatif", {"policy": FREEZE, "agent": "treasury"})
        assert [sid for sid, _ in changed(mine.text)] == [acme.id]
        assert globex.id not in mine.text
        typed = post_form(alice, "/whatif", {"policy": FREEZE, "sessions": globex.id})
        assert changed(typed.text) == [] and "that you may see" in typed.text
        ops = client(store, auth="header:X-User")
        ops.headers["X-User"] = "ops"
        every = post_form(ops, "/whatif", {"policy": FREEZE, "status": "paused"})
        assert sorted(sid for sid, _ in changed(every.text)) == sorted([acme.id, globex.id])
    finally:
        store.close()
