"""Why a benign task the open door completes fails with every approval denied: the first call
of each such task that waits for a person, read from its journal, sorted into kinds.

What it measures: the obedient scripted stand-in (it makes the task's ground-truth calls) on
each user task without an attack, once with no policy and once under ``contained`` with every
approval denied; for each task the first passes and the second does not, the first decision
that was not an allow, classed by its rule and reason: a party only third-party text gave, a
party the model composed, a high-risk party untrusted text also names, a call the request's
words do not ask for, a relay of third-party text. The kinds are the decision's own, not a
judgement of whether the task *should* have passed.
Run: ``python bench/agentdyn_denied.py [--suites shopping,github,dailylife] [--show]``
(any AgentDojo suite works too).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from tether.evals.agentdojo import AGENTDYN, Environments, load_suite, run_pair
from tether.evals.injection import policy_named
from tether.runtime.approvals.approver import deny_all
from tether.store.memory import MemoryStore
from tether.vocabulary import EventType


def kind(decision: Mapping[str, Any]) -> str:
    """The kind of a decision that was not an allow, by its rule and reason."""
    reason, rule = str(decision.get("reason", "")), decision.get("policy_id")
    if "named by untrusted content" in reason:
        return "a high-risk party untrusted text also names"
    if "could only have come from untrusted" in reason:
        return "a party only third-party text gave"
    if "could only have come from nowhere" in reason:
        return "a party the model composed"
    if "around a link" in reason or rule == "untrusted-shapes":
        return "a relay of third-party text"
    if rule == "scope-to-plan":
        return "a call the request's words do not ask for"
    return str(rule)


def first_wait(store: MemoryStore, session_id: str) -> tuple[str, str]:
    for event in store.read(session_id):
        decision = event.data.get("decision") if event.type == EventType.TOOL_DECISION else None
        if decision and decision.get("effect") != "allow":
            return kind(decision), f"{event.data.get('tool')}: {decision.get('reason')}"
    return "no call waited (the task failed otherwise)", ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suites", default=",".join(AGENTDYN))
    parser.add_argument("--show", action="store_true", help="print each task's first wait")
    args = parser.parse_args()
    kinds: dict[str, list[str]] = defaultdict(list)
    passed = kept = 0
    for name in args.suites.split(","):
        suite = load_suite(name)
        environments = Environments(suite)
        for task_id, task in suite.user_tasks.items():
            if not run_pair(suite, task, None, environments=environments).utility:
                continue
            passed += 1
            store = MemoryStore()
            governed = run_pair(suite, task, None, policy=policy_named("contained"),
                                approver=deny_all(), environments=environments, store=store)
            if governed.utility:
                kept += 1
                continue
            (info,) = store.sessions()
            what, why = first_wait(store, info.session_id)
            kinds[what].append(f"{name}/{task_id}")
            if args.show:
                print(f"{name}/{task_id}: {what}\n    {why[:200]}")
    print(f"open door completes {passed}; every approval denied keeps {kept}")
    for what, tasks in sorted(kinds.items(), key=lambda item: -len(item[1])):
        print(f"{len(tasks):3d}  {what}: {' '.join(tasks)}")


if __name__ == "__main__":
    main()
