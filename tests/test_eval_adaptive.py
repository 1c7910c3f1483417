"""The adaptive injections: every kind generated, the same set on every call, every pair won
with the door open (on a small sample; the full set is a CLI run), and ``--attack`` on the
command line with rows per kind."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tether.cli import main
from tether.evals.agentdojo import Environments, load_suite, run_pair
from tether.evals.agentdojo.adaptive import KINDS, tasks_for


def generated(name: str) -> list[tuple[str, str, str]]:
    environments = Environments(load_suite(name))
    return [(user_task.ID, task.ID, task.GOAL)
            for user_task in environments.suite.user_tasks.values()
            for task in tasks_for(environments, user_task)]


def test_every_kind_is_generated_the_same_way_twice() -> None:
    kinds: Counter[str] = Counter()
    for name in ("banking", "slack", "travel"):
        environments = Environments(load_suite(name))
        for user_task in environments.suite.user_tasks.values():
            kinds.update(t.kind for t in tasks_for(environments, user_task))
    assert set(kinds) == set(KINDS)
    assert sum(kinds.values()) >= 400 and min(kinds.values()) >= 30
    assert generated("banking") == generated("banking")
    environments = Environments(load_suite("workspace"))
    assert tasks_for(environments, next(iter(environments.suite.user_tasks.values()))) == []


@pytest.mark.parametrize(("name", "user_task_id"), [("banking", "user_task_3"),
                                                    ("travel", "user_task_3")])
def test_every_generated_pair_is_won_with_the_door_open(name: str, user_task_id: str) -> None:
    suite = load_suite(name)
    environments = Environments(suite)
    user_task = suite.get_user_task_by_id(user_task_id)
    tasks = tasks_for(environments, user_task)
    assert {t.kind for t in tasks} >= {"lookalike", "pieces", "laundered", "private_to_named",
                                       "repeat_enlarge"}
    for task in tasks:
        result = run_pair(suite, user_task, task, environments=environments)
        assert result.injected and result.attacked, task.ID
        assert result.attack == "adaptive" and result.kind == task.kind


def test_a_user_task_alone_is_not_an_attack() -> None:
    """Scored beyond the user's own calls: the user's payment, made once, wins nothing."""
    suite = load_suite("banking")
    environments = Environments(suite)
    user_task = suite.get_user_task_by_id("user_task_3")
    (again, *_) = [t for t in tasks_for(environments, user_task) if t.kind == "repeat_enlarge"]
    pre = user_task.init_environment(environments.load({}))
    own = user_task.ground_truth(pre.model_copy(deep=True))
    assert not again.security_from_traces("", pre, pre, own)
    assert again.security_from_traces("", pre, pre, [*own, *again.ground_truth(pre)])


def test_the_attack_flag_renders_rows_per_kind(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "dojo.json"
    assert main(["eval", "agentdojo", "--suites", "banking", "--user-tasks", "user_task_3",
                 "--attack", "both", "--workers", "1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "stock    banking" in printed and "adaptive banking" in printed
    assert "  private_to_named" in printed and "0 generated pairs" in printed
    rows = json.loads(out.read_text())["rows"]
    assert {(r["attack"], r["kind"]) for r in rows} >= {("stock", None), ("adaptive", None),
                                                         ("adaptive", "repeat_enlarge")}
    worse = [dict(r, attack_success=-1.0) if r["attack"] == "adaptive" else r for r in rows]
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"rows": worse}))
    assert main(["eval", "agentdojo", "--suites", "banking", "--user-tasks", "user_task_3",
                 "--attack", "adaptive", "--workers", "1", "--baseline", str(baseline)]) == 1
    assert "regression: banking (adaptive): attack success" in capsys.readouterr().out
    assert main(["eval", "agentdojo", "--attack", "sideways"]) == 2


def test_no_pair_sends_a_members_messages_back_to_that_member() -> None:
    """Bob's direct messages sent to Bob disclose nothing: such a pair would count a harmless
    call as the attacker's win."""
    environments = Environments(load_suite("slack"))
    for user_task in environments.suite.user_tasks.values():
        for task in tasks_for(environments, user_task):
            readers = [c for c in task.calls if c.tool == "read_inbox"]
            for reader in readers:
                assert all(h.arguments.get("recipient") != reader.arguments["user"]
                           for h in task.harm), (user_task.ID, task.ID)


@pytest.mark.parametrize(("name", "user_task_id", "kind"), [
    ("banking", "user_task_3", "enlarge_first"), ("slack", "user_task_1", "phish_relay")])
def test_a_changed_call_is_made_in_place_of_the_users_own(name: str, user_task_id: str,
                                                          kind: str) -> None:
    """``enlarge_first`` and ``phish_relay``: the changed call runs and the user's own does
    not, so the attacker wins with no repeat (scored beyond the user's own calls)."""
    suite = load_suite(name)
    environments = Environments(suite)
    user_task = suite.get_user_task_by_id(user_task_id)
    tasks = [t for t in tasks_for(environments, user_task) if t.kind == kind]
    assert tasks and all(len(t.instead) == 1 and t.calls == () for t in tasks)
    for task in tasks:
        (old, new), = task.instead
        assert task.harm == (new,) and old != new
        result = run_pair(suite, user_task, task, environments=environments)
        assert result.injected and result.attacked and not result.text_only, task.ID
