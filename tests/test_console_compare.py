"""The compare page: two sessions aligned by step, each step where the calls, the decisions or
the spend differ marked, the first highlighted — for a rerun against its original and for two
trials of one evaluation task; one session against itself differs nowhere; another tenant's
session is not found."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from audit_helpers import store_url
from console_sessions import client, evaluation, treasury
from tether import Decision, Effect
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.rerun import rerun
from tether.store import open_store

STEP = re.compile(r'<tr class="step( diverges)?( first)?" data-step="(\d+)" '
                  r'data-differs="([^"]*)"')


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with store_url("sqlite", tmp_path) as made:
        yield made


def steps(page: str) -> list[tuple[int, str, bool]]:
    """(step, what differs, whether it is the first divergence) for each aligned row."""
    return [(int(n), differs, bool(first)) for _, first, n, differs in STEP.findall(page)]


class FreezeTransfers:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "transfer":
            return Decision(Effect.DENY, "no transfers this week", "freeze")
        return Decision(Effect.ALLOW, "lookups are fine", "treasury-lookups")


def test_a_rerun_parts_from_its_original_where_the_new_policy_decides_otherwise(
        url: str) -> None:
    original = treasury(url).session("move 900 to ACME-7")
    original.run()
    store = open_store(url)
    report = rerun(treasury(url, policy=FreezeTransfers()), store.read(original.id))
    rerun_id = report.events[0].session_id
    store.append(rerun_id, list(report.events))  # kept beside its original
    page = client(store).get(f"/compare?a={original.id}&b={rerun_id}").text
    assert steps(page)[:3] == [(0, "", False), (1, "", False), (2, "decisions", True)]
    assert [first for _, _, first in steps(page)].count(True) == 1
    assert 'id="first-divergence">They part at step 2: decisions differ.' in page
    assert "decision transfer: require_approval (treasury-approvals)" in page
    assert "decision transfer: deny (freeze)" in page


def test_two_trials_of_one_task_part_at_the_call_that_failed_the_grade(url: str) -> None:
    report = evaluation(url)
    passed = next(r.session_id for r in report.records if r.passed)
    failed = next(r.session_id for r in report.records if not r.passed)
    store = open_store(url)
    page = client(store).get(f"/compare?a={passed}&b={failed}").text
    assert steps(page)[0] == (0, "", False)
    assert steps(page)[1] == (1, "calls,spend", True)
    assert 'refund(amount_cents=12000, order_id="A1")' in page.replace("&#34;", '"')
    assert 'refund(amount_cents=5000, order_id="A1")' in page.replace("&#34;", '"')
    assert '"evaluation": "refunds"' in page.replace("&#34;", '"')  # each trial's labels


def test_a_session_against_itself_differs_nowhere(url: str) -> None:
    session = treasury(url).session("move 900 to ACME-7")
    session.run()
    page = client(open_store(url)).get(f"/compare?a={session.id}&b={session.id}").text
    assert steps(page) and all(differs == "" for _, differs, _ in steps(page))
    assert "Same calls, same decisions, same spend at every step." in page


def test_without_both_ids_the_page_is_the_form_and_a_foreign_session_is_not_found(
        url: str) -> None:
    acme = treasury(url, "acme").session("move 900 to ACME-7")
    acme.run()
    globex = treasury(url, "globex").session("move 900 to GLOBEX-1")
    globex.run()
    store = open_store(url)
    alice = client(store, auth="header:X-User")
    alice.headers["X-User"] = "alice"  # of acme
    form = alice.get(f"/compare?a={acme.id}")
    assert form.status_code == 200 and 'name="b" value=""' in form.text
    assert STEP.search(form.text) is None
    assert alice.get(f"/compare?a={acme.id}&b={globex.id}").status_code == 404
    assert alice.get(f"/compare?a={acme.id}&b={acme.id}").status_code == 200
