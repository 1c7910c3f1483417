"""Halting from the console, through the app, on every store (memory, SQLite, PostgreSQL).

A halt posted from a session's page or the sessions list is a halt in the store (who: the
viewer's identity, never a form field; why: the form's reason): a covered session that is
running stops before its next side effect, one started after it pauses ``halted`` (in this
process and in another), another tenant's goes on; the halts page lifts it. A missing or forged
CSRF token, another site's ``Origin``, bad input and another tenant's person change nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from audit_helpers import store_url
from console_app import csrf_of
from doc_pages import blocks
from tether import Agent, ModelResponse, ReAct, ScriptedModel, StopReason, ToolCall, tool
from tether.runtime import Halted, standing_halts
from tether.runtime.approvals.rules import ApprovalRules
from tether.store.base import Store
from tether.store.halts import HaltScope
from tether.store.opening import open_store
from tether.web import Console, create_app

HEADER = "X-Forwarded-Email"
METHOD = f"header:{HEADER}"
RULES = ApprovalRules.from_mapping({"people": {
    "alice@acme.test": {"tenant": "acme"}, "mallory@globex.test": {"tenant": "globex"},
    "ops@example.test": {}}})  # no tenant: an operator of every tenant


def client(store: Store, name: str) -> TestClient:
    console = Console(store, rules=RULES, auth=f"header:{HEADER}",
                      proxies=frozenset({"testclient"}))
    return TestClient(create_app(console), headers={HEADER: name}, follow_redirects=False)


class Fleet:
    """A refund agent on ``store``: it looks (read-only, running ``during_look`` — a person
    pressing a button while it runs), then refunds (a side effect)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.refunded: list[str] = []
        self.during_look: Any = None

    def session(self, tenant: str) -> Any:
        @tool
        def look() -> str:
            """Look at the order."""
            if self.during_look is not None:
                self.during_look()
            return "order A-17, paid"

        @tool(side_effect=True)
        def refund(order: str) -> str:
            """Refund an order."""
            self.refunded.append(f"{tenant} {order}")
            return f"refunded {order}"

        script = [ModelResponse(tool_calls=(ToolCall("c1", "look", {}),)),
                  ModelResponse(tool_calls=(ToolCall("c2", "refund", {"order": "A-17"}),)),
                  "Refunded A-17."]
        agent = Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[look, refund],
                      store=self.store, name="support")
        return agent.session("refund A-17", tenant_id=tenant, user_id="bob")


def post_halt(page: TestClient, path: str, **fields: str) -> Any:
    """POST the halt form of the page at ``path`` (its hidden fields, its CSRF token)."""
    shown = page.get(path)
    assert shown.status_code == 200, shown.text
    form = shown.text.split('<form class="halt"', 1)[1].split("</form>", 1)[0]
    hidden = dict(re.findall(r'type="hidden" name="(\w+)" value="([^"]*)"', form))
    return page.post("/halts", data={**hidden, **fields})


def test_halting_a_tenant_from_the_list_stops_its_running_session_not_the_others(
        store: Store) -> None:
    ops = client(store, "ops@example.test")
    fleet = Fleet(store)
    fleet.during_look = lambda: answers.append(post_halt(
        ops, "/sessions?tenant=acme", reason="refund bug, incident 7"))
    answers: list[Any] = []
    running = fleet.session("acme")
    assert running.run().stop_reason is StopReason.HALTED  # halted between look and refund
    assert answers[0].status_code == 303 and fleet.refunded == []
    (made,) = standing_halts(store)
    assert answers[0].headers["location"] == f"/halts?halted={made.id}"
    assert f"Halted: <code>{made.id}</code>" in ops.get(answers[0].headers["location"]).text
    assert made.scope == HaltScope(tenant_id="acme") and made.reason == "refund bug, incident 7"
    assert (made.by, made.by_method) == ("ops@example.test", METHOD)
    fleet.during_look = None
    assert fleet.session("acme").run().stop_reason is StopReason.HALTED  # started after it
    assert fleet.session("globex").run().stop_reason is StopReason.FINISHED
    assert fleet.refunded == ["globex A-17"]
    listed = ops.get("/halts").text
    assert made.id in listed and "refund bug, incident 7" in listed and METHOD in listed
    with pytest.raises(Halted):
        running.resume()
    lifted = ops.post(f"/halts/{made.id}/unhalt", data={"csrf": csrf_of(listed)})
    assert lifted.status_code == 303 and standing_halts(store) == []
    assert lifted.headers["location"] == f"/halts?lifted={made.id}"
    assert running.resume().stop_reason is StopReason.FINISHED
    assert fleet.refunded == ["globex A-17", "acme A-17"]  # once, after the unhalt


def test_halting_a_session_from_its_page_halts_that_session_only(store: Store) -> None:
    alice = client(store, "alice@acme.test")
    fleet = Fleet(store)
    first = fleet.session("acme")
    fleet.during_look = lambda: answers.append(post_halt(
        alice, f"/sessions/{first.id}", reason="looks wrong"))
    answers: list[Any] = []
    assert first.run().stop_reason is StopReason.HALTED
    assert answers[0].status_code == 303
    (made,) = standing_halts(store)
    assert made.scope == HaltScope(session_id=first.id, tenant_id="acme")  # narrowed
    assert (made.by, made.by_method, made.reason) == ("alice@acme.test", METHOD, "looks wrong")
    fleet.during_look = None
    assert fleet.session("acme").run().stop_reason is StopReason.FINISHED
    assert fleet.refunded == ["acme A-17"]  # the other session's, not the halted one's


def test_a_missing_or_forged_csrf_token_or_another_origin_changes_nothing(
        store: Store) -> None:
    ops = client(store, "ops@example.test")
    token = csrf_of(ops.get("/sessions").text)
    fields = {"tenant": "acme", "reason": "x"}
    for sent, headers in (({}, {}), ({"csrf": "forged"}, {}),
                          ({"csrf": token}, {"Origin": "https://evil.test"})):
        answer = ops.post("/halts", data={**fields, **sent}, headers=headers)
        assert answer.status_code == 403 and standing_halts(store) == []
    assert ops.post("/halts", data={**fields, "csrf": token}).status_code == 303
    (made,) = standing_halts(store)
    for sent, headers in (({}, {}), ({"csrf": "forged"}, {}),
                          ({"csrf": token}, {"Origin": "https://evil.test"})):
        answer = ops.post(f"/halts/{made.id}/unhalt", data=sent, headers=headers)
        assert answer.status_code == 403 and standing_halts(store) == [made]


def test_another_tenants_person_cannot_see_lift_or_halt_across(store: Store) -> None:
    fleet = Fleet(store)
    session = fleet.session("acme")
    session.run()
    alice, mallory = client(store, "alice@acme.test"), client(store, "mallory@globex.test")
    assert post_halt(alice, f"/sessions/{session.id}", reason="mine").status_code == 303
    (made,) = standing_halts(store)
    listed = mallory.get("/halts").text
    assert made.id not in listed and 'id="none"' in listed
    token = csrf_of(mallory.get("/sessions").text)
    theirs = mallory.post(f"/halts/{made.id}/unhalt", data={"csrf": token})
    unknown = mallory.post("/halts/halt_nothing/unhalt", data={"csrf": token})
    assert theirs.status_code == unknown.status_code == 404
    assert (theirs.text.replace(made.id, "ID") == unknown.text.replace("halt_nothing", "ID"))
    for fields in ({"session": session.id}, {"tenant": "acme"}):
        answer = mallory.post("/halts", data={"csrf": token, "reason": "x", **fields})
        assert answer.status_code == 404
    assert standing_halts(store) == [made]
    assert mallory.get("/sessions?agent=support").text.count('name="tenant"') == 0
    assert post_halt(mallory, "/sessions", reason="ours", everything="yes").status_code == 303
    assert standing_halts(store)[-1].scope == HaltScope(tenant_id="globex")  # narrowed
    answer = post_halt(mallory, "/sessions?agent=support", reason="their agent")
    assert answer.status_code == 303
    assert standing_halts(store)[-1].scope == HaltScope(agent="support", tenant_id="globex")
    assert fleet.session("acme").run().stop_reason is StopReason.FINISHED  # acme's goes on


def test_a_tenants_person_cannot_lift_a_halt_of_every_tenant(store: Store) -> None:
    ops, alice = client(store, "ops@example.test"), client(store, "alice@acme.test")
    assert post_halt(ops, "/sessions", reason="stop all", everything="yes").status_code == 303
    (made,) = standing_halts(store)
    page = alice.get("/halts").text
    assert made.id not in page
    answer = alice.post(f"/halts/{made.id}/unhalt", data={"csrf": csrf_of(
        alice.get("/sessions").text)})
    assert answer.status_code == 404 and standing_halts(store) == [made]
    assert Fleet(store).session("acme").run().stop_reason is StopReason.HALTED


@pytest.mark.parametrize(("fields", "words"), [
    ({"tenant": "acme", "reason": "  "}, "say why you halt"),
    ({"reason": "no scope"}, "it would stop every session you may see"),
    ({"tenant": "acme", "reason": "x", "scope": "all"}, "fields the console never sends"),
    ({"tenant": ["acme", "globex"], "reason": "x"}, "or one twice"),
])
def test_bad_input_is_refused_with_why_and_changes_nothing(
        store: Store, fields: dict[str, Any], words: str) -> None:
    ops = client(store, "ops@example.test")
    token = csrf_of(ops.get("/sessions").text)
    answer = ops.post("/halts", data={"csrf": token, **fields})
    assert answer.status_code == 400 and words in answer.text and "Nothing was changed" in (
        answer.text)
    as_file = ops.post("/halts", data={"csrf": token, "tenant": "acme"},
                       files={"reason": ("why.txt", b"because")})
    assert as_file.status_code == 400 and "a field is a file" in as_file.text
    assert standing_halts(store) == []


def test_an_unknown_or_lifted_halt_is_not_found_and_everything_means_every_session(
        store: Store) -> None:
    ops = client(store, "ops@example.test")
    assert post_halt(ops, "/sessions", reason="<b>all</b>", everything="yes").status_code == 303
    (made,) = standing_halts(store)
    assert made.scope == HaltScope()
    page = ops.get("/halts").text
    assert "&lt;b&gt;all&lt;/b&gt;" in page and "every session" in page
    token = csrf_of(page)
    assert ops.post(f"/halts/{made.id}/unhalt", data={"csrf": token}).status_code == 303
    again = ops.post(f"/halts/{made.id}/unhalt", data={"csrf": token})
    assert again.status_code == 404 and "no standing halt" in again.text
    missing = ops.post("/halts", data={"csrf": token, "session": "nope", "reason": "x"})
    assert missing.status_code == 404 and standing_halts(store) == []


def test_the_guides_example_runs_as_pasted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    [code] = blocks("docs/guide/console.md", "Halting from the console")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "console.md", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.splitlines() == [
        "303 agent support | operator unauthenticated | refund bug, incident 7", "[]"]


ANOTHER_PROCESS = """
import sys
from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
done = []
@tool(side_effect=True)
def refund(order: str) -> str:
    \"\"\"Refund an order.\"\"\"
    done.append(order)
    return "refunded"
script = [ModelResponse(tool_calls=(ToolCall("c1", "refund", {"order": "A-17"}),)), "ok"]
agent = Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[refund], store=sys.argv[1],
              name="support")
for tenant in ("acme", "globex"):
    print(tenant, agent.session("refund", tenant_id=tenant).run().stop_reason.value, done)
"""


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_halt_from_the_console_holds_in_another_process(backend: str, tmp_path: Path) -> None:
    with store_url(backend, tmp_path) as url:
        store = open_store(url)
        try:
            ops = client(store, "ops@example.test")
            answer = post_halt(ops, "/sessions?tenant=acme", reason="incident 7")
        finally:
            store.close()
        assert answer.status_code == 303
        ran = another_process(url)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["acme halted []", "globex finished ['A-17']"]


def another_process(url: str) -> subprocess.CompletedProcess[str]:
    """``ANOTHER_PROCESS`` run on ``url`` (this checkout's ``src`` first on its path)."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", ANOTHER_PROCESS, url], capture_output=True,
                          text=True, timeout=300, check=False, env=env)
