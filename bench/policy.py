"""Policy decision cost, measured (not asserted): python bench/policy.py

One 50-rule policy — per-tool role grants, argument limits, per-tenant quotas, metadata and
taint guards — is written once as data, rendered both as tether YAML and as Cedar, and decided
on the same random requests by ``YamlPolicy.evaluate`` and by ``cedarpy.is_authorized``
(``pip install -e '.[bench]'``). Both engines get their best case: the YAML is compiled at load;
Cedar gets a pre-parsed ``PolicySet`` and a pre-parsed ``Entities`` store holding every user and
tool, so each Cedar call marshals only the request and its context.

The policy uses only allow and deny (Cedar has no other effects) with default deny, so the two
semantics coincide: any matching deny/forbid wins, else any allow/permit, else deny. Argument
conditions are guarded the fail-closed way in Cedar (a forbid also applies when the argument is
missing) to match tether's three-valued logic; the script checks that both engines agree on
every sampled request and exits non-zero if they do not.

Prints µs per decision (median of several rounds) and decisions per second for each engine,
Cedar both one request per call and all requests in one ``is_authorized_batch`` call, plus
Cedar's floor: the same calls against one trivial ``permit`` (the binding's per-call cost).
"""

from __future__ import annotations

import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import yaml

from tether.policy import Action, Context, Effect, Resource, Subject, YamlPolicy

SAMPLE = 2_000  # distinct random requests; every one is checked for agreement
ROUNDS = 7

# name: (tags, risk, side_effect, egress)
TOOLS: dict[str, tuple[tuple[str, ...], str, bool, bool]] = {
    "refund": (("payments",), "high", True, False),
    "pay": (("payments",), "critical", True, True),
    "lookup_order": (("orders",), "low", False, False),
    "list_orders": (("orders",), "low", False, False),
    "send_email": (("comms",), "medium", True, True),
    "send_sms": (("comms",), "medium", True, True),
    "web_search": (("search", "expensive"), "low", False, True),
    "fetch_url": (("web",), "medium", False, True),
    "read_file": (("files",), "low", False, False),
    "write_file": (("files",), "medium", True, False),
    "delete_file": (("files",), "high", True, False),
    "db_query": (("data",), "low", False, False),
    "db_write": (("data",), "high", True, False),
    "create_ticket": (("support",), "low", True, False),
    "close_ticket": (("support",), "medium", True, False),
    "deploy": (("infra",), "critical", True, True),
    "run_shell": (("infra",), "critical", True, False),
    "calculator": ((), "low", False, False),
}
ROLES = ["intern", "clerk", "support", "finance", "engineer", "admin", "contractor", "auditor"]
TENANTS = ["acme", "globex", "initech", "umbrella"]
READ_ONLY = ["lookup_order", "list_orders", "db_query", "read_file", "calculator"]


def rules() -> list[dict[str, Any]]:
    """The 50 rules, as tether YAML rule mappings."""

    def allow(id: str, tool: str | list[str], roles: list[str] | dict[str, Any] | None = None,
              **more: Any) -> dict[str, Any]:
        when: dict[str, Any] = {"tool": tool if isinstance(tool, str) else {"in": tool}}
        if roles:
            when["roles"] = roles if isinstance(roles, dict) else {"in": roles}
        when.update(more)
        return {"id": id, "priority": 10, "effect": "allow", "when": when}

    def deny(id: str, reason: str, priority: int = 100, **when: Any) -> dict[str, Any]:
        return {"id": id, "priority": priority, "effect": "deny", "reason": reason,
                "when": when}

    out = [
        allow("read-only-for-all", READ_ONLY),
        allow("refund-staff", "refund", ["clerk", "finance"], args={"amount": {"le": 2000}}),
        allow("refund-interns-small", "refund", ["intern"], args={"amount": {"le": 100}}),
        allow("pay-finance", "pay", ["finance"], args={"amount": {"le": 10000}}),
        allow("email-staff", "send_email", ["support", "clerk", "admin", "finance"]),
        allow("sms-support", "send_sms", ["support"]),
        allow("search-staff", "web_search", roles={"not_in": ["contractor"]}),
        allow("fetch-eng", "fetch_url", ["engineer", "admin"]),
        allow("write-eng", "write_file", ["engineer", "admin"]),
        allow("delete-admin", "delete_file", ["admin"]),
        allow("db-write-eng", "db_write", ["engineer", "admin"], args={"rows": {"le": 500}}),
        allow("tickets-open", "create_ticket", ["support", "clerk", "intern"]),
        allow("tickets-close", "close_ticket", ["support", "admin"]),
        allow("deploy-eng", "deploy", ["engineer"], context={"step": {"le": 60}}),
        allow("shell-admin", "run_shell", ["admin"]),
        allow("contractor-search-cheap", "web_search", ["contractor"],
              args={"results": {"le": 10}}),
        deny("interns-no-refunds", "interns cannot refund more than 100",
             tool="refund", roles={"in": ["intern"]}, args={"amount": {"gt": 100}}),
        deny("refund-ceiling", "refunds over 5000 need finance review", tool="refund",
             args={"amount": {"gt": 5000}}),
        deny("pay-ceiling", "payments over 25000 are never automated", tool="pay",
             args={"amount": {"gt": 25000}}),
        deny("bulk-email", "no bulk email", tool="send_email",
             args={"recipients": {"gt": 50}}),
        deny("bulk-db-write", "bulk writes need a migration", tool="db_write",
             args={"rows": {"gt": 5000}}),
        deny("contractors-no-egress", "contractors cannot send data out",
             roles={"in": ["contractor"]}, resource={"egress": True}),
        deny("auditors-read-only", "auditors only read", roles={"in": ["auditor"]},
             resource={"side_effect": True}),
        deny("tainted-egress", "untrusted input: no egress", context={"tainted": True},
             resource={"egress": True}),
        deny("tainted-critical", "untrusted input: no critical tools",
             context={"tainted": True}, resource={"risk": {"in": ["high", "critical"]}}),
        deny("critical-needs-staff", "critical tools need an engineer or admin",
             resource={"risk": "critical"},
             roles={"not_in": ["engineer", "admin", "finance"]}),
        deny("long-runs-no-side-effects", "long runs stop changing things",
             context={"step": {"gt": 80}}, resource={"side_effect": True}),
        deny("umbrella-no-payments", "umbrella has payments disabled", tenant="umbrella",
             resource={"tags": {"any": ["payments"]}}),
        deny("initech-no-deploy", "initech deploys through its own pipeline",
             tenant="initech", tool={"in": ["deploy", "run_shell"]}),
        deny("globex-no-delete", "globex keeps everything", tenant="globex",
             tool="delete_file"),
        deny("interns-no-infra", "interns stay out of infra", roles={"in": ["intern"]},
             resource={"tags": {"any": ["infra"]}}),
        deny("expensive-late", "expensive tools only early in a run",
             resource={"tags": {"all": ["search", "expensive"]}}, context={"step": {"gt": 40}}),
    ]
    # per-tenant quotas on money and data volume: a common, mechanical bulk of real policies
    quotas = {"acme": (3000, 20000, 2000), "globex": (1000, 8000, 1000),
              "initech": (500, 4000, 300), "umbrella": (200, 1000, 100)}
    for tenant, (refund, pay, rows) in quotas.items():
        out.append(deny(f"{tenant}-refund-quota", f"{tenant} refund quota", 50, tenant=tenant,
                        tool="refund", args={"amount": {"gt": refund}}))
        out.append(deny(f"{tenant}-pay-quota", f"{tenant} payment quota", 50, tenant=tenant,
                        tool="pay", args={"amount": {"gt": pay}}))
        out.append(deny(f"{tenant}-rows-quota", f"{tenant} write quota", 50, tenant=tenant,
                        tool="db_write", args={"rows": {"gt": rows}}))
        out.append(deny(f"{tenant}-sms-quota", f"{tenant} sms quota", 50, tenant=tenant,
                        tool="send_sms", args={"recipients": {"ge": rows // 20}}))
    out.append(deny("fetch-huge", "downloads over 100 MB", tool="fetch_url",
                    args={"max_mb": {"gt": 100}}))
    out.append(deny("shell-long", "shell commands over 60 s", tool="run_shell",
                    args={"timeout": {"gt": 60}}))
    assert len(out) == 50, len(out)
    return out


def yaml_text(rule_list: list[dict[str, Any]]) -> str:
    return yaml.safe_dump({"version": 1, "policy_id": "bench", "default": "deny",
                           "rules": rule_list}, sort_keys=False)


# -- the same rules in Cedar ------------------------------------------------------------------

CEDAR_OPS = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "=="}


def _strings(values: Sequence[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def cedar_text(rule_list: list[dict[str, Any]]) -> str:
    out = []
    for rule in rule_list:
        when, forbid = rule["when"], rule["effect"] == "deny"
        scope, conds = "resource", []
        for key, spec in when.items():
            if key == "tool":
                if isinstance(spec, str):
                    scope = f'resource == Tool::"{spec}"'
                else:
                    tools = ", ".join(f'Tool::"{t}"' for t in spec["in"])
                    conds.append(f"[{tools}].contains(resource)")
            elif key == "roles":
                names = spec.get("in", spec.get("not_in"))
                test = f"principal.roles.containsAny({_strings(names)})"
                conds.append(test if "in" in spec else f"!{test}")
            elif key == "tenant":
                conds.append(f'principal.tenant == "{spec}"')
            elif key == "args":
                for name, ops in spec.items():
                    for op, limit in ops.items():
                        value = f"context.args.{name} {CEDAR_OPS[op]} {limit}"
                        # fail closed like tether: a forbid applies when the argument is missing
                        conds.append(f"(!(context.args has {name}) || {value})" if forbid
                                     else f"(context.args has {name} && {value})")
            elif key == "resource":
                for attr, value in spec.items():
                    if attr in ("side_effect", "egress"):
                        conds.append(f"resource.{attr} == {str(value).lower()}")
                    elif attr == "tags":
                        ((how, tags),) = value.items()
                        method = "containsAny" if how == "any" else "containsAll"
                        conds.append(f"resource.tags.{method}({_strings(tags)})")
                    else:  # risk
                        names = [value] if isinstance(value, str) else value["in"]
                        conds.append(f"{_strings(names)}.contains(resource.risk)")
            else:  # context
                for attr, value in spec.items():
                    if attr == "tainted":
                        conds.append(f"context.tainted == {str(value).lower()}")
                    else:  # step
                        ((op, limit),) = value.items()
                        conds.append(f"context.step {CEDAR_OPS[op]} {limit}")
        body = f" when {{ {' && '.join(conds)} }}" if conds else ""
        out.append(f'@id("{rule["id"]}")\n{"forbid" if forbid else "permit"} (principal, '
                   f'action == Action::"call", {scope}){body};')
    return "\n".join(out)


# -- requests -------------------------------------------------------------------------------

Request = tuple[Subject, Action, Resource, Context]


World = tuple[list[Subject], dict[str, Resource], list[dict[str, Any]]]


def make_world(rng: random.Random) -> World:
    users = []
    for i in range(40):
        roles = frozenset(rng.sample(ROLES, rng.choice([1, 1, 2])))
        users.append(Subject(f"u{i}", rng.choice(TENANTS), roles))
    tools = {name: Resource(name, frozenset(tags), risk, side, egress)
             for name, (tags, risk, side, egress) in TOOLS.items()}
    entities: list[dict[str, Any]] = [
        {"uid": {"type": "User", "id": u.user_id},
         "attrs": {"roles": sorted(u.roles), "tenant": u.tenant_id}, "parents": []}
        for u in users]
    entities += [{"uid": {"type": "Tool", "id": r.name},
                  "attrs": {"tags": sorted(r.tags), "risk": r.risk,
                            "side_effect": r.side_effect, "egress": r.egress}, "parents": []}
                 for r in tools.values()]
    return users, tools, entities


def make_requests(rng: random.Random, users: list[Subject],
                  tools: dict[str, Resource]) -> list[Request]:
    requests = []
    for i in range(SAMPLE):
        tool = rng.choice(list(tools))
        args: dict[str, int] = {}
        for name, high in (("amount", 30000), ("rows", 8000), ("recipients", 120),
                           ("results", 30), ("max_mb", 300), ("timeout", 120)):
            if rng.random() < 0.85:  # sometimes missing: the fail-closed path
                args[name] = rng.randint(0, high)
        context = Context(f"s{i}", rng.randint(0, 100), {}, {}, rng.random() < 0.2)
        requests.append((rng.choice(users), Action(tool, args), tools[tool], context))
    return requests


def cedar_request(request: Request) -> dict[str, Any]:
    subject, action, _, context = request
    return {"principal": f'User::"{subject.user_id}"', "action": 'Action::"call"',
            "resource": f'Tool::"{action.tool}"',
            "context": {"args": dict(action.arguments), "tainted": context.tainted,
                        "step": context.step}}


# -- timing -----------------------------------------------------------------------------------

def us_per_decision(run: Callable[[], object], count: int) -> float:
    run()  # warm up
    samples = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) / count * 1e6)
    return statistics.median(samples)


def main() -> int:
    import cedarpy

    rng = random.Random(20240607)
    rule_list = rules()
    policy = YamlPolicy.from_string(yaml_text(rule_list), "bench/policy.py")
    policy_set = cedarpy.PolicySet.from_str(cedar_text(rule_list))
    users, tools, entity_list = make_world(rng)
    entities = cedarpy.Entities.from_json_str(json.dumps(entity_list))
    requests = make_requests(rng, users, tools)
    cedar_requests = [cedar_request(r) for r in requests]

    mine = [policy.evaluate(*r).effect is Effect.ALLOW for r in requests]
    results = [cedarpy.is_authorized(q, policy_set, entities) for q in cedar_requests]
    theirs = [res.decision == cedarpy.Decision.Allow for res in results]
    errors = sum(len(res.diagnostics.errors) for res in results)
    disagree = [i for i, (a, b) in enumerate(zip(mine, theirs, strict=True)) if a != b]

    evaluate, authorize = policy.evaluate, cedarpy.is_authorized

    def run_yaml() -> None:
        for s, a, r, c in requests:
            evaluate(s, a, r, c)

    def run_cedar() -> None:
        for q in cedar_requests:
            authorize(q, policy_set, entities)

    def run_cedar_batch() -> None:
        cedarpy.is_authorized_batch(cedar_requests, policy_set, entities)

    trivial = cedarpy.PolicySet.from_str("permit (principal, action, resource);")

    def run_cedar_floor() -> None:
        for q in cedar_requests:
            authorize(q, trivial, entities)

    yaml_us = us_per_decision(run_yaml, len(requests))
    cedar_us = us_per_decision(run_cedar, len(requests))
    batch_us = us_per_decision(run_cedar_batch, len(requests))
    floor_us = us_per_decision(run_cedar_floor, len(requests))
    print(f"python {platform.python_version()}, cedarpy {_version('cedarpy')}, "
          f"{platform.machine()}, {len(rule_list)} rules, {len(requests)} requests, "
          f"median of {ROUNDS} rounds")
    print(f"agreement: {len(requests) - len(disagree)}/{len(requests)} "
          f"(allowed {sum(mine)}, denied {len(mine) - sum(mine)}; cedar evaluation errors "
          f"{errors})")
    for name, us in (("tether YamlPolicy.evaluate", yaml_us),
                     ("cedarpy.is_authorized", cedar_us),
                     (f"cedarpy.is_authorized_batch ({len(requests)} per call)", batch_us),
                     ("cedarpy.is_authorized, 1 trivial policy", floor_us)):
        print(f"{name:46s} {us:8.2f} µs/decision  {1e6 / us:10,.0f} decisions/s")
    if disagree:
        first = requests[disagree[0]]
        print(f"DISAGREE on {len(disagree)} requests, e.g. {first}", file=sys.stderr)
        return 1
    return 0


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    raise SystemExit(main())
