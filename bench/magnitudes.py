"""Can a rule tell an enlarged amount or day from the model's own arithmetic? Measured, not assumed.

An injection that has read the policy changes the user's own side effect in place (the adaptive
set's ``enlarge_first``: ten times the bill, a week more at the hotel); the changed value comes
from nowhere, like every value the model computes. This runs, with the obedient scripted
stand-in (it follows every instruction it reads), every benign task of AgentDojo (v1.2.2) and
AgentDyn under ``contained`` with the oracle approver (so every benign side effect is reached),
and every ``enlarge_first`` pair the open door loses; it records each side-effecting call's
whole-number and whole-day arguments with their origins and the numbers each origin had given
the session. Then each candidate rule is applied to those calls: how many benign calls it would
refuse, and how many of the enlargements ``contained`` without ``named_days`` lets through it
would stop. ``named_days`` itself is the "days named by the asking clause" row (its own
functions). The ledger is read through provenance's internals: a measurement, not an API.

Run: ``PYTHONPATH=src python bench/magnitudes.py [--workers 2]``.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from decimal import Decimal, InvalidOperation
from typing import Any

DOJO = ("banking", "slack", "travel", "workspace")
DYN = ("shopping", "github", "dailylife")
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}")


def _number(text: str) -> Decimal | None:
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


class Recorder:
    """``contained`` but ``named_days``, deciding as it does, and noting each side effect."""

    inline = True
    policy_id = "recorder"

    def __init__(self, out: list[dict[str, Any]], tag: dict[str, Any]) -> None:
        from tether.policy import (
            DenyOverrides,
            contain_untrusted_flows,
            keep_private,
            no_unasked_repeats,
            scope_to_plan,
            untrusted_shapes,
        )

        self.inner = DenyOverrides(contain_untrusted_flows, scope_to_plan, keep_private,
                                   no_unasked_repeats, untrusted_shapes)
        self.out, self.tag = out, tag

    def evaluate(self, subject: Any, action: Any, resource: Any, context: Any) -> Any:
        from tether.policy.containment import plan_of
        from tether.policy.days import counts_in, days_in
        from tether.tokens import tokens
        from tether.vouched import leaves

        decision = self.inner.evaluate(subject, action, resource, context)
        if not resource.side_effect:
            return decision
        ledger = context.provenance._sightings.ledger()  # a measurement: internals
        seen: dict[str, set[Decimal]] = {}
        for origin, found in ledger._sources:
            seen.setdefault(origin, set()).update(
                n for t in found if (n := _number(t)) is not None and n != 0)
        values = []
        for name in resource.shaping(action.arguments):
            for leaf in leaves(action.arguments[name]):
                found = tokens(leaf)
                origins = sorted(ledger.origins_of_text(leaf))
                if ISO.match(leaf) and (day := days_in(leaf, whole=True)):
                    values.append(("day", day[0], origins))
                elif len(found) == 1 and (n := _number(found[0])) is not None:
                    values.append(("number", n, origins))
        clauses = [e.clause for e in plan_of(context, resource).asks(action.tool)]
        self.out.append({**self.tag, "tool": action.tool, "allowed": decision.effect.name ==
                         "ALLOW", "values": values, "seen": seen,
                         "clause_numbers": {n for c in clauses for t in tokens(c)
                                            if (n := _number(t)) is not None},
                         "clause_days": [d for c in clauses for d in days_in(c)],
                         "clause_spans": {n for c in clauses for n in counts_in(c)},
                         "request_numbers": {n for t in tokens(context.request)
                                             if (n := _number(t)) is not None}})
        return decision


def record(job: tuple[str, bool]) -> list[dict[str, Any]]:
    """The side effects of ``suite``'s benign tasks, or (``attacks``) of its enlargements."""
    from tether.evals.agentdojo import Environments, load_suite, run_pair
    from tether.evals.agentdojo.adaptive import tasks_for

    suite_name, attacks = job
    suite = load_suite(suite_name)
    environments = Environments(suite)
    out: list[dict[str, Any]] = []
    for user_task in suite.user_tasks.values():
        tasks: list[Any] = ([t for t in tasks_for(environments, user_task)
                             if t.kind == "enlarge_first"] if attacks else [None])
        for task in tasks:
            if task is not None and not run_pair(suite, user_task, task,
                                                 environments=environments).attacked:
                continue  # the open door does not lose it: not counted
            calls: list[dict[str, Any]] = []
            tag = {"suite": suite_name, "user_task": user_task.ID, "task": task}
            result = run_pair(suite, user_task, task, policy=Recorder(calls, tag),
                              approver="oracle", environments=environments)
            for call in calls:
                call["won"] = result.attacked
                harm = None if task is None else task.harm[0]
                call["harm"] = harm is not None and call["tool"] == harm.tool
                call["task"] = None if task is None else task.ID
            out += calls
    return out


def _composed(origins: list[str]) -> bool:
    return origins == ["nowhere"]


def clause_bound(call: dict[str, Any]) -> bool:
    return any(kind == "number" and "nowhere" in o and v not in call["clause_numbers"]
               for kind, v, o in call["values"])


def over(factor: str) -> Callable[[dict[str, Any]], bool]:
    def rule(call: dict[str, Any]) -> bool:
        grounded = call["seen"].get("user", set()) | call["seen"].get("trusted", set())
        return any(kind == "number" and set(o) <= {"untrusted", "nowhere"}
                   and (not grounded or v > Decimal(factor) * max(grounded))
                   for kind, v, o in call["values"])
    return rule


def multiple(call: dict[str, Any]) -> bool:
    grounded = call["seen"].get("user", set()) | call["seen"].get("trusted", set())
    return any(kind == "number" and _composed(o) and any(
        base > 0 and base != v and any(abs(v - k * base) < Decimal("0.01") for k in range(2, 11))
        for base in grounded) for kind, v, o in call["values"])


def named_days_rule(call: dict[str, Any]) -> bool:
    from tether.policy.days import reachable

    return bool(call["clause_days"]) and any(
        kind == "day" and not set(o) <= {"user", "trusted"}
        and not reachable(v, call["clause_days"], call["clause_spans"])
        for kind, v, o in call["values"])


CANDIDATES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "a composed number the asking clause does not name": clause_bound,
    "a number only untrusted text or nowhere gave, > 1.5x every grounded one": over("1.5"),
    "a number only untrusted text or nowhere gave, > 2x every grounded one": over("2"),
    "a number only untrusted text or nowhere gave, > 5x every grounded one": over("5"),
    "a composed number 2 to 10 times a number the user or a trusted read gave": multiple,
    "a day the asking clause names no way to reach (named_days)": named_days_rule,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    workers = parser.parse_args().workers
    jobs = [(s, False) for s in (*DOJO, *DYN)] + [(s, True) for s in ("banking", "slack",
                                                                       "travel")]
    with ProcessPoolExecutor(workers) as pool:
        calls = [c for chunk in pool.map(record, jobs) for c in chunk]
    benign = [c for c in calls if c["task"] is None]
    harms: dict[tuple[str, str, str], dict[str, Any]] = {}
    for c in calls:
        if c["task"] is not None and c["harm"]:
            harms.setdefault((c["suite"], c["user_task"], c["task"]), c)
    through = [c for c in harms.values() if c["allowed"] and c["won"]]
    composed = [c for c in benign if any(k == "number" and _composed(o)
                                         for k, _, o in c["values"])]
    print(f"benign side-effecting calls: {len(benign)} (AgentDojo "
          f"{sum(c['suite'] in DOJO for c in benign)}, AgentDyn "
          f"{sum(c['suite'] in DYN for c in benign)}); {len(composed)} with a whole number "
          f"found nowhere; enlargements the open door loses: {len(harms)}, through contained "
          f"without named_days: {len(through)}")
    print(f"{'candidate':<76} {'dojo':>5} {'tasks':>5} {'dyn':>5} {'stops':>7}")
    for name, rule in CANDIDATES.items():
        refused = [c for c in benign if rule(c)]
        dojo = [c for c in refused if c["suite"] in DOJO]
        tasks = len({(c["suite"], c["user_task"]) for c in dojo})
        stopped = sum(rule(c) for c in through)
        print(f"{name:<76} {len(dojo):>5} {tasks:>5} {len(refused) - len(dojo):>5} "
              f"{stopped:>3}/{len(through)}")


if __name__ == "__main__":
    main()
