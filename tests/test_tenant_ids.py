"""Another tenant's session or approval reads exactly like one that does not exist, on every
command that takes an id: its full id, a prefix of it, a one-character sweep of prefixes. What a
command prints under ``--tenant`` (or for a recipe serving one tenant) is the same whatever the
other tenants' sessions are: none of their ids, no count of theirs (``audit verify --tenant``
counts only that tenant's sessions and anchors)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tether import (
    Agent,
    Decision,
    Effect,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether.cli import main
from tether.policy import Action, Context, Resource, Subject
from tether.store.opening import open_store

# acme's ids share starts with globex's: "dbe" starts one of each, "dbe00d" only acme's
ACME = ("dbe00d33e5ab80fc7d0c267c574c0eed", "5a5a11ce0000000000000000000000aa")
ACME_LATER = ("dbe00e0000000000000000000000000b", "7e7e000000000000000000000000000c",
              "c3c0000000000000000000000000000d")
GLOBEX = ("dbe1f00dcafe00000000000000000001", "c3c3c3c3000000000000000000000002")
ABSENT = "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0"
HEX = "0123456789abcdef"


@tool(side_effect=True)
def transfer(amount: int) -> str:
    """Move money."""
    return f"moved {amount}"


class ApproveTransfers:
    inline = True

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if resource.side_effect:
            return Decision(Effect.REQUIRE_APPROVAL, "a person approves transfers", "p")
        return Decision(Effect.ALLOW, "ok", "p")


def _agent(url: str, tenant: str) -> Agent:
    model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("t1", "transfer",
                                                              {"amount": 900}),)), "done"])
    return Agent(model=model, reasoning=ReAct(), tools=[transfer], store=url, tenant_id=tenant,
                 name="treasury", policy=ApproveTransfers())


def _start(url: str, tenant: str, session_id: str) -> None:
    _agent(url, tenant).session("move 900", session_id=session_id).run()


RECIPE = '''
from tether import Agent, ReAct, ScriptedModel
from test_tenant_ids import ApproveTransfers, transfer

globex = Agent(model=ScriptedModel(["done"]), reasoning=ReAct(), tools=[transfer],
               tenant_id="globex", name="treasury", policy=ApproveTransfers())
'''


@pytest.fixture
def world(tmp_path: Path) -> tuple[str, str, Path]:
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    for sid in ACME:
        _start(url, "acme", sid)
    for sid in GLOBEX:
        _start(url, "globex", sid)
    recipe = tmp_path / "globex_recipe.py"
    recipe.write_text(RECIPE)
    policy = tmp_path / "deny.yaml"
    policy.write_text("rules:\n  - id: no\n    effect: deny\n    tools: [transfer]\n"
                      "    reason: never\n")
    return url, f"{recipe}:globex", policy


def _commands(url: str, recipe: str, policy: Path) -> dict[str, Callable[[str], list[str]]]:
    """Each id-taking command, scoped to globex, as a function of the id it is given."""
    scoped = ["--store", url, "--tenant", "globex"]
    return {
        "audit show": lambda i: ["audit", "show", i, *scoped],
        "audit show --json": lambda i: ["audit", "show", i, "--json", *scoped],
        "audit verify --session": lambda i: ["audit", "verify", "--session", i, *scoped],
        "audit export --session": lambda i: ["audit", "export", "--session", i, *scoped],
        "what-if --session": lambda i: ["what-if", "--policy", str(policy), "--session", i,
                                        *scoped],
        "approvals list --session": lambda i: ["approvals", "list", "--session", i, "--all",
                                               *scoped],
        "resume": lambda i: ["resume", i, "--agent", recipe, "--store", url],
        "settle": lambda i: ["settle", i, "t1", "skip", "--operator", "o", "--agent", recipe,
                             "--store", url],
    }


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out + "\n--stderr--\n" + captured.err


def _approval_ids(url: str, tenant: str) -> list[str]:
    store = open_store(url)
    try:
        return sorted(r["id"] for r in store.list_approvals() if r.get("tenant_id") == tenant)
    finally:
        store.close()


def _leaks(text: str, ids: list[str] | tuple[str, ...]) -> list[str]:
    """The other tenant's ids any 5 characters of whose start show in ``text`` (an ambiguity
    message shows a prefix and 4 more)."""
    return [i for i in ids if i[:5] in text]


def test_another_tenants_session_reads_as_one_that_does_not_exist(
        world: tuple[str, str, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    url, recipe, policy = world
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    for name, argv in _commands(url, recipe, policy).items():
        def said(given: str, argv: Callable[[str], list[str]] = argv) -> tuple[int, str]:
            code, text = _run(capsys, argv(given))
            return code, text.replace(given, "ID")

        absent = said(ABSENT)
        assert said(ACME[0]) == absent, name  # a full id
        assert said(ACME[0][:6]) == said(ABSENT[:6]), name  # a prefix only acme's id starts
        assert said(ACME[1][:3]) == said(ABSENT[:3]), name
        for given in (ACME[0], ACME[0][:6], "dbe", *HEX):  # "dbe": one of globex, one of acme
            assert _leaks(said(given)[1], ACME) == [], (name, given)  # beyond the id given


def test_what_globex_sees_does_not_change_when_acme_writes_more(
        world: tuple[str, str, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep of one-character prefixes (and the ambiguous "dbe") says the same before and
    after acme starts sessions whose ids begin like globex's: nothing of acme's is counted,
    listed or expanded to."""
    url, recipe, policy = world
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    commands = {name: argv for name, argv in _commands(url, recipe, policy).items()
                if name not in ("resume", "settle")}  # these act on globex's own sessions
    listing = {"audit verify --tenant": ["audit", "verify", "--store", url, "--tenant", "globex"],
               "audit list --tenant": ["audit", "list", "--store", url, "--tenant", "globex"],
               "audit export --tenant": ["audit", "export", "--store", url, "--tenant",
                                         "globex"]}

    def everything() -> dict[tuple[str, str], tuple[int, str]]:
        seen = {(name, given): _run(capsys, argv(given)) for name, argv in commands.items()
                for given in (*HEX, "dbe", "c3c", ACME_LATER[0], ACME_LATER[0][:6])}
        seen |= {(name, ""): _run(capsys, argv) for name, argv in listing.items()}
        return seen

    before = everything()
    for sid in ACME_LATER:
        _start(url, "acme", sid)
    after = everything()
    for key, said in before.items():
        assert after[key] == said, key
        assert _leaks(said[1].replace(key[1], "ID") if key[1] else said[1],
                      ACME + ACME_LATER) == [], key


def test_approvals_of_another_tenant_read_as_absent(
        world: tuple[str, str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    url, _, _ = world
    acme_requests = _approval_ids(url, "acme")
    acme_request = acme_requests[0]
    absent = "apr_" + "f" * (len(acme_request) - 4)
    for verb in ("approve", "deny"):
        def said(given: str, verb: str = verb) -> tuple[int, str]:
            code, text = _run(capsys, ["approvals", verb, given, "--approver", "mallory",
                                       "--unauthenticated",
                                       "--store", url, "--tenant", "globex"])
            return code, text.replace(given, "ID")

        assert said(acme_request) == said(absent)
        assert said(acme_request[:8]) == said(absent[:8])
        assert said(acme_request) == (1, said(absent)[1])
    code, text = _run(capsys, ["approvals", "list", "--store", url, "--tenant", "acme"])
    assert code == 0 and all(i in text for i in acme_requests)  # all still pending
    # the owner sees each attempt on its request, and nothing of the other tenant but the name
    assert ("refused attempt(s); the last by mallory (unauthenticated): mallory "
            "(unauthenticated) is not of tenant 'acme'") in text and "globex" not in text
    code, text = _run(capsys, ["approvals", "list", "--session", ACME[0][:6], "--store", url,
                               "--tenant", "acme"])  # a start of its own session's id will do
    assert code == 0 and ACME[0] in text and ACME[1] not in text


def test_verify_under_a_tenant_counts_only_its_sessions_and_anchors(
        world: tuple[str, str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    url, _, _ = world
    store = open_store(url)
    try:
        anchors = store.anchors()
    finally:
        store.close()
    mine = [a for a in anchors if a.session_id in GLOBEX]
    assert 0 < len(mine) < len(anchors)
    code, text = _run(capsys, ["audit", "verify", "--store", url, "--tenant", "globex"])
    assert code == 0, text
    assert "2 sessions checked, 0 broken" in text
    assert re.search(rf"anchor chain: {len(mine)} anchors of these sessions\b", text), text
    assert str(len(anchors)) + " anchors" not in text
    code, text = _run(capsys, ["audit", "verify", "--store", url, "--tenant", "initech"])
    assert (code, text.split("\n")[0]) == (0, f"no sessions in {url}")
    code, text = _run(capsys, ["audit", "verify", "--store", url])
    assert f"anchor chain: {len(anchors)} anchors," in text


def test_a_broken_anchor_of_another_tenant_is_reported_without_naming_it(
        world: tuple[str, str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3

    url, _, _ = world
    db = sqlite3.connect(url[len("sqlite:///"):], isolation_level=None)
    try:  # someone edits an anchor of acme's: the store-wide chain breaks there
        (seq,) = db.execute("SELECT min(seq) FROM anchors WHERE session_id = ?",
                            (ACME[1],)).fetchone()
        db.execute("UPDATE anchors SET body = replace(body, '\"seq\"', '\"seq\" ') "
                   "WHERE seq = ?", (seq,))
    finally:
        db.close()
    code, everything = _run(capsys, ["audit", "verify", "--store", url])
    assert code == 1 and f"session {ACME[1]}: anchor:" in everything
    code, text = _run(capsys, ["audit", "verify", "--store", url, "--tenant", "globex"])
    assert code == 1, text
    assert _leaks(text, ACME) == []
    (broken,) = [line for line in text.splitlines() if line.startswith("BROKEN")]
    assert "anchor chain does not hold at an anchor of another session" in broken
    assert "1 finding" in text
