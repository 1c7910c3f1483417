"""Property: the compiled, tool-indexed engine decides exactly as the written semantics say.

A deliberately naive reference interpreter below reads the same rules as plain data and applies
DESIGN.md's semantics literally (Kleene logic; unknown restricts, never grants; any deny wins,
then priority, then file order; otherwise the default). Hypothesis generates random policies and
requests; the engine and the reference must agree on effect and deciding rule every time.
"""

from __future__ import annotations

import operator
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.policy import Action, Context, Resource, Subject, YamlPolicy

TOOLS = ["a", "b", "c"]
ROLES = ["intern", "clerk", "admin"]
TAGS = ["x", "y"]
OPS = {"gt": operator.gt, "lt": operator.lt, "ge": operator.ge, "le": operator.le,
       "eq": operator.eq}
EFFECTS = ["allow", "deny", "require_approval", "partial_allow", "mask", "degrade"]

names = st.lists(st.sampled_from(ROLES), min_size=1, max_size=3, unique=True)
numbers = st.integers(-5, 5) | st.sampled_from([0.5, -1.5, 2.25])
leaves = st.one_of(
    st.builds(lambda t: {"tool": t}, st.sampled_from(TOOLS)),
    st.builds(lambda ts: {"tool": {"in": ts}},
              st.lists(st.sampled_from(TOOLS), min_size=1, max_size=2, unique=True)),
    st.builds(lambda rs: {"roles": {"in": rs}}, names),
    st.builds(lambda rs: {"roles": {"not_in": rs}}, names),
    st.builds(lambda k, op, n: {"args": {k: {op: n}}}, st.sampled_from(["n", "m.k"]),
              st.sampled_from(sorted(OPS)), numbers),
    st.builds(lambda b: {"resource": {"side_effect": b}}, st.booleans()),
    st.builds(lambda ts: {"resource": {"tags": {"any": ts}}},
              st.lists(st.sampled_from(TAGS), min_size=1, max_size=2, unique=True)),
    st.builds(lambda b: {"context": {"tainted": b}}, st.booleans()),
    st.builds(lambda op, n: {"context": {"step": {op: n}}}, st.sampled_from(sorted(OPS)),
              st.integers(0, 4)),
    st.builds(lambda t: {"tenant": t}, st.sampled_from(["t1", "t2"])),
)
conditions = st.recursive(leaves, lambda inner: st.one_of(
    st.builds(lambda cs: {"all": cs}, st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda cs: {"any": cs}, st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda c: {"not": c}, inner),
), max_leaves=6)


@st.composite
def policies(draw: st.DrawFn) -> dict[str, Any]:
    rules = []
    for i in range(draw(st.integers(0, 8))):
        effect = draw(st.sampled_from(EFFECTS))
        rule: dict[str, Any] = {"id": f"r{i}", "priority": draw(st.integers(-2, 2)),
                                "effect": effect}
        if effect in ("partial_allow", "mask"):
            rule["fields"] = ["f"]
        if effect == "degrade":
            rule["fallback"] = "fallback_tool"
        if draw(st.integers(0, 5)):
            rule["when"] = draw(conditions)
        rules.append(rule)
    return {"version": 1, "policy_id": "p",
            "default": draw(st.sampled_from(["allow", "deny", "require_approval"])),
            "rules": rules}


arg_values = st.one_of(st.none(), st.integers(-6, 6), st.sampled_from([0.5, 2.25, -1.5]),
                       st.booleans(), st.just("3"))


@st.composite
def requests(draw: st.DrawFn) -> tuple[Subject, Action, Resource, Context]:
    args: dict[str, Any] = {}
    n, k = draw(arg_values), draw(arg_values)
    if n is not None:
        args["n"] = n
    if k is not None:
        args["m"] = {"k": k} if draw(st.booleans()) else k
    tool = draw(st.sampled_from([*TOOLS, "other"]))
    subject = Subject("u", draw(st.sampled_from(["t1", "t2", None])),
                      frozenset(draw(st.lists(st.sampled_from(ROLES), max_size=3))))
    resource = Resource(tool, frozenset(draw(st.lists(st.sampled_from(TAGS), max_size=2))),
                        side_effect=draw(st.booleans()))
    context = Context("s", draw(st.integers(0, 4)), {}, {}, draw(st.booleans()))
    return subject, Action(tool, args), resource, context


# -- the reference: the semantics, written out plainly -----------------------------------------

def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def argument(args: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(args, dict) or part not in args:
            return None
        args = args[part]
    return args


def kleene_all(values: list[bool | None]) -> bool | None:
    if False in values:
        return False
    return None if None in values else True


def kleene_any(values: list[bool | None]) -> bool | None:
    if True in values:
        return True
    return None if None in values else False


def holds(cond: dict[str, Any], req: tuple[Subject, Action, Resource, Context]) -> bool | None:
    s, a, r, c = req
    results: list[bool | None] = []
    for key, spec in cond.items():
        if key == "tool":
            results.append(a.tool in (spec["in"] if isinstance(spec, dict) else [spec]))
        elif key == "roles":
            has = bool(s.roles & set(spec.get("in", spec.get("not_in"))))
            results.append(has if "in" in spec else not has)
        elif key == "tenant":
            results.append(None if s.tenant_id is None else s.tenant_id == spec)
        elif key == "args":
            ((path, ops),) = spec.items()
            ((op, limit),) = ops.items()
            value = number(argument(a.arguments, path))
            results.append(None if value is None else OPS[op](value, limit))
        elif key == "resource":
            if "side_effect" in spec:
                results.append(r.side_effect == spec["side_effect"])
            else:
                results.append(bool(r.tags & set(spec["tags"]["any"])))
        elif key == "context":
            if "tainted" in spec:
                results.append(c.tainted == spec["tainted"])
            else:
                ((op, limit),) = spec["step"].items()
                results.append(OPS[op](c.step, limit))
        elif key == "all":
            results.append(kleene_all([holds(x, req) for x in spec]))
        elif key == "any":
            results.append(kleene_any([holds(x, req) for x in spec]))
        else:
            inner = holds(spec, req)
            results.append(None if inner is None else not inner)
    return kleene_all(results)


def reference(policy: dict[str, Any],
              req: tuple[Subject, Action, Resource, Context]) -> tuple[str, str]:
    matched = []
    for index, rule in enumerate(policy["rules"]):
        value = holds(rule["when"], req) if "when" in rule else True
        if value is True or (value is None and rule["effect"] in ("deny", "require_approval")):
            matched.append((rule, index))
    denies = [m for m in matched if m[0]["effect"] == "deny"]
    pool = denies or matched
    if not pool:
        return policy["default"], "p:default"
    rule, _ = max(pool, key=lambda m: (m[0]["priority"], -m[1]))
    return rule["effect"], f"p:{rule['id']}"


@settings(max_examples=400, deadline=None)
@given(policies(), st.lists(requests(), min_size=1, max_size=6))
def test_engine_agrees_with_the_reference_semantics(
        data: dict[str, Any], reqs: list[tuple[Subject, Action, Resource, Context]]) -> None:
    engine = YamlPolicy.from_string(yaml.safe_dump(data, sort_keys=False))
    for req in reqs:
        decision = engine.evaluate(*req)
        assert (decision.effect.value, decision.policy_id) == reference(data, req)


@settings(max_examples=200, deadline=None)
@given(policies(), requests())
def test_a_grant_is_never_made_on_an_unknown(
        data: dict[str, Any], req: tuple[Subject, Action, Resource, Context]) -> None:
    decision = YamlPolicy.from_string(yaml.safe_dump(data, sort_keys=False)).evaluate(*req)
    if decision.policy_id != "p:default" and decision.effect.value not in (
            "deny", "require_approval"):
        rule = next(r for r in data["rules"] if f"p:{r['id']}" == decision.policy_id)
        assert "when" not in rule or holds(rule["when"], req) is True
