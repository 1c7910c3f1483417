"""Compiling a YAML rule's ``when:`` into a fast three-valued test.

Why: a policy decides on every tool call, so conditions are validated and compiled once, at
load, into closures; evaluating one is a few attribute reads and comparisons. The decision
embodied here is **three-valued logic** (true / false / unknown, ``None`` standing for unknown):
a comparison that cannot be made — a missing or non-numeric argument, a bool where a number is
compared, a missing ``spend``/``extra`` key, a subject without a tenant — is *unknown*, never
quietly false. ``all`` / ``any`` / ``not`` follow Kleene logic, and the engine decides what an
unknown means for each effect (it can restrict, never grant).

Each compiled condition also carries the set of tool names outside which it is certainly false,
so the engine can index rules by tool without changing any answer.

Condition keys (several keys in one mapping must all hold):

==============  =====================================================================
``tool``        ``refund`` or ``{in: [refund, pay]}``
``roles``       ``{in: [a, b]}`` (has any) and/or ``{not_in: [c]}`` (has none); ``intern``
``tenant``      ``acme`` or ``{in: [acme, globex]}`` (unknown when the session has none)
``user``        ``u-7`` or ``{in: [...]}`` (unknown when the session has none)
``agent``       ``payer`` or ``{in: [...]}``
``args``        ``{amount: {gt: 100}, "order.total": {ge: 1, le: 10}}``: gt lt ge le eq
``args_from``   ``{recipient: {not_in: [user, trusted]}}`` (none of the argument's possible
                origins is listed) or ``{in: [untrusted]}`` (one is); origins: user, trusted,
                untrusted, nowhere (tether.runtime.provenance.values); unknown for a missing
                argument or a value with no origin (a bool)
``resource``    ``side_effect`` / ``egress`` / ``idempotent``: bool; ``tags: {any: [..]}``
                / ``{all: [..]}``; ``risk`` and ``output_trust``: name or ``{in: [..]}``
``context``     ``tainted``: bool; ``planned``: bool (a strategy's call from its validated
                plan, e.g. LLM+P's steps); ``step``: comparisons; ``spend`` /
                ``budget_left``: ``{cost_usd: {gt: 0.5}}``; ``extra``: ``{channel: web}``
``all``/``any`` a non-empty list of conditions; ``not``: one condition
==============  =====================================================================
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, get_args

from tether.policy.base import Action, Context, Resource, Subject
from tether.policy.yaml_source import Node, describe
from tether.tools.base import RISKS, Trust

Test = Callable[[Subject, Action, Resource, Context], "bool | None"]
Getter = Callable[[Subject, Action, Resource, Context], Any]

TRUSTS: tuple[str, ...] = get_args(Trust)
#: The keys the runtime puts in ``Context.spend`` and ``Context.budget_left``.
SPEND_KEYS = ("tokens", "cost_usd", "steps", "tool_calls", "seconds")
OPERATORS: Mapping[str, Callable[[Any, Any], bool]] = {
    "gt": operator.gt, "lt": operator.lt, "ge": operator.ge, "le": operator.le, "eq": operator.eq}
CONDITION_KEYS = ("tool", "roles", "tenant", "user", "agent", "args", "args_from", "resource",
                  "context", "all", "any", "not")
ORIGINS = ("user", "trusted", "untrusted", "nowhere")  # as tether.runtime.provenance.values names
# them

_MISSING = object()


@dataclass(frozen=True, slots=True)
class Condition:
    """A compiled condition: ``test`` answers True, False or None (unknown)."""

    test: Test
    tools: frozenset[str] | None  # certainly False for any tool outside this set; None: no bound
    names: frozenset[str] = frozenset()  # every tool name it mentions (to check against tools)
    args: frozenset[str] = frozenset()  # every top-level argument name it mentions
    origins: bool = False  # it reads where arguments came from (``args_from``)


def compile_condition(node: Node) -> Condition:
    """Validate one condition mapping and compile it; raises PolicyLoadError naming the key."""
    keys = node.mapping(CONDITION_KEYS, what="a condition mapping such as {tool: refund}")
    if not keys:
        node.fail("the condition is empty", "give at least one key, e.g. {tool: refund}; "
                  "to match every call, leave out 'when'")
    return _conjunction([_COMPILERS[key](child) for key, child in keys.items()])


# -- combinators (Kleene logic) ----------------------------------------------------------------

def _mentions(parts: list[Condition]) -> tuple[frozenset[str], frozenset[str], bool]:
    return (frozenset().union(*(p.names for p in parts)),
            frozenset().union(*(p.args for p in parts)), any(p.origins for p in parts))


def _conjunction(parts: list[Condition]) -> Condition:
    bounds = [p.tools for p in parts if p.tools is not None]
    tools = frozenset.intersection(*bounds) if bounds else None
    if len(parts) == 1:
        return Condition(parts[0].test, tools, *_mentions(parts))
    tests = tuple(p.test for p in parts)

    def all_of(s: Subject, a: Action, r: Resource, c: Context) -> bool | None:
        unknown = False
        for test in tests:
            value = test(s, a, r, c)
            if value is False:
                return False
            if value is None:
                unknown = True
        return None if unknown else True

    return Condition(all_of, tools, *_mentions(parts))


def _all(node: Node) -> Condition:
    return _conjunction([compile_condition(item) for item in node.items("a list of conditions")])


def _any(node: Node) -> Condition:
    parts = [compile_condition(item) for item in node.items("a list of conditions")]
    bounded = all(p.tools is not None for p in parts)
    tools = frozenset().union(*(p.tools or () for p in parts)) if bounded else None
    tests = tuple(p.test for p in parts)

    def any_of(s: Subject, a: Action, r: Resource, c: Context) -> bool | None:
        unknown = False
        for test in tests:
            value = test(s, a, r, c)
            if value:
                return True
            if value is None:
                unknown = True
        return None if unknown else False

    return Condition(any_of, tools, *_mentions(parts))


def _not(node: Node) -> Condition:
    compiled = compile_condition(node)
    inner = compiled.test

    def negation(s: Subject, a: Action, r: Resource, c: Context) -> bool | None:
        value = inner(s, a, r, c)
        return None if value is None else not value

    return Condition(negation, None, compiled.names, compiled.args, compiled.origins)


# -- names: tool, roles, tenant, user, agent, risk, output_trust ---------------------------------

def _names(node: Node, options: tuple[str, ...] | None = None,
           not_in: bool = False) -> tuple[frozenset[str] | None, frozenset[str] | None]:
    """``name`` or ``{in: [...]}`` (and ``{not_in: [...]}`` if allowed) -> (in, not_in)."""
    if isinstance(node.value, str):
        return frozenset([node.choice(options) if options else node.text()]), None
    ops = ("in", "not_in") if not_in else ("in",)
    keys = node.mapping(ops, what=f"a name or {{{': [...], '.join(ops)}: [...]}}")
    if not keys:
        node.fail("the mapping is empty", f"use {' or '.join(ops)} with a list of names")
    found = {k: frozenset(v.texts(options)) for k, v in keys.items()}
    return found.get("in"), found.get("not_in")


def _name_test(node: Node, get: Getter, options: tuple[str, ...] | None = None) -> Test:
    names, _ = _names(node, options)
    assert names is not None

    def test(s: Subject, a: Action, r: Resource, c: Context) -> bool | None:
        value = get(s, a, r, c)
        return None if value is None else value in names

    return test


def _tool(node: Node) -> Condition:
    names, _ = _names(node)
    assert names is not None
    if len(names) == 1:
        (name,) = names

        def one(s: Subject, a: Action, r: Resource, c: Context) -> bool | None:
            return a.tool == name

        return Condition(one, names, names)

    def some(s: Subject, a: Action, r: Resource, c: Context) -> bool | None:
        return a.tool in names

    return Condition(some, names, names)


def _roles(node: Node) -> Condition:
    has_any, has_none = _names(node, not_in=True)
    parts: list[Condition] = []
    if has_any is not None:
        wanted = has_any
        parts.append(Condition(lambda s, a, r, c: not s.roles.isdisjoint(wanted), None))
    if has_none is not None:
        banned = has_none
        parts.append(Condition(lambda s, a, r, c: s.roles.isdisjoint(banned), None))
    return _conjunction(parts)


def _tenant(node: Node) -> Condition:
    return Condition(_name_test(node, lambda s, a, r, c: s.tenant_id), None)


def _user(node: Node) -> Condition:
    return Condition(_name_test(node, lambda s, a, r, c: s.user_id), None)


def _agent(node: Node) -> Condition:
    return Condition(_name_test(node, lambda s, a, r, c: s.agent), None)


# -- numbers ------------------------------------------------------------------------------------

def number_or_none(value: object) -> int | float | None:
    """A value as a comparable finite number, or None (unknown) — bools are not numbers."""
    kind = type(value)
    if kind is int:
        return value  # type: ignore[return-value]
    if kind is float:
        return value if math.isfinite(value) else None  # type: ignore[arg-type,return-value]
    if kind is bool:
        return None
    if isinstance(value, Decimal):
        return float(value) if value.is_finite() else None
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    return None


def _comparison(node: Node, get: Getter) -> Test:
    keys = node.mapping(OPERATORS, what="comparisons such as {gt: 100}")
    if not keys:
        node.fail("no comparison given", f"use one or more of {', '.join(OPERATORS)}")
    ops = tuple((OPERATORS[k], v.number()) for k, v in keys.items())
    if len(ops) == 1:
        ((op, limit),) = ops

        def compare_one(s: Subject, a: Action, r: Resource, c: Context) -> bool | None:
            value = number_or_none(get(s, a, r, c))
            return None if value is None else op(value, limit)

        return compare_one

    def compare(s: Subject, a: Action, r: Resource, c: Context) -> bool | None:
        value = number_or_none(get(s, a, r, c))
        if value is None:
            return None
        return all(op(value, limit) for op, limit in ops)

    return compare


def _lookup(root: Any, segments: tuple[str, ...]) -> Any:
    """``root[a][b][c]``, or _MISSING if any step is absent or not a mapping."""
    value = root
    for segment in segments:
        if type(value) is dict or isinstance(value, Mapping):
            value = value.get(segment, _MISSING)
            if value is _MISSING:
                return _MISSING
        else:
            return _MISSING
    return value


def _segments(node: Node, key: str) -> tuple[str, ...]:
    segments = tuple(key.split("."))
    if not all(seg.strip() for seg in segments):
        node.fail(f"{key!r} is not a valid path", "write a key or a dotted path such as "
                  "'order.total'")
    return segments


def _args(node: Node) -> Condition:
    keys = node.entries("argument comparisons such as {amount: {gt: 100}}")
    parts = []
    for key, child in keys.items():
        path = _segments(child, key)
        parts.append(Condition(_comparison(child, _argument(path)), None,
                               args=frozenset({path[0]})))
    return _conjunction(parts)


def _args_from(node: Node) -> Condition:
    keys = node.entries("argument origins such as {recipient: {not_in: [user, trusted]}}")
    parts = []
    for name, child in keys.items():
        test = child.mapping(("in", "not_in"), what="{in: [...]} or {not_in: [...]}")
        if len(test) != 1:
            child.fail("give exactly one of in / not_in", "e.g. {not_in: [user, trusted]}")
        (how, listed), = test.items()
        wanted = frozenset(listed.texts(ORIGINS))
        parts.append(Condition(_origin_test(name, wanted, how == "in"), None,
                               args=frozenset({name}), origins=True))
    return _conjunction(parts)


def _origin_test(name: str, wanted: frozenset[str], inside: bool) -> Test:
    def test(s: Subject, a: Action, r: Resource, c: Context) -> bool | None:
        if name not in a.arguments:
            return None
        origins = c.provenance.get(name)
        if not origins:  # not computed, or a value with no origin: cannot say
            return None
        return bool(origins & wanted) is inside

    return test


def _argument(path: tuple[str, ...]) -> Getter:
    def get(s: Subject, a: Action, r: Resource, c: Context) -> Any:
        return _lookup(a.arguments, path)

    return get


# -- resource and context ----------------------------------------------------------------------

def _flag(node: Node, get: Getter) -> Condition:
    wanted = node.boolean()
    return Condition(lambda s, a, r, c: get(s, a, r, c) is wanted, None)


def _tags(node: Node) -> Condition:
    keys = node.mapping(("any", "all"), what="{any: [...]} or {all: [...]}")
    if not keys:
        node.fail("the mapping is empty", "use any or all with a list of tags")
    parts = []
    if "any" in keys:
        some = frozenset(keys["any"].texts())
        parts.append(Condition(lambda s, a, r, c: not r.tags.isdisjoint(some), None))
    if "all" in keys:
        every = frozenset(keys["all"].texts())
        parts.append(Condition(lambda s, a, r, c: every <= r.tags, None))
    return _conjunction(parts)


def _resource(node: Node) -> Condition:
    keys = node.mapping(("side_effect", "egress", "idempotent", "tags", "risk", "output_trust"),
                        what="resource conditions such as {side_effect: true}")
    if not keys:
        node.fail("the resource condition is empty", "give e.g. {side_effect: true}")
    getters: dict[str, Getter] = {
        "side_effect": lambda s, a, r, c: r.side_effect,
        "egress": lambda s, a, r, c: r.egress,
        "idempotent": lambda s, a, r, c: r.idempotent,
    }
    parts = []
    for key, child in keys.items():
        if key in getters:
            parts.append(_flag(child, getters[key]))
        elif key == "tags":
            parts.append(_tags(child))
        elif key == "risk":
            parts.append(Condition(_name_test(child, lambda s, a, r, c: r.risk, RISKS), None))
        else:
            parts.append(Condition(_name_test(child, lambda s, a, r, c: r.output_trust, TRUSTS),
                                   None))
    return _conjunction(parts)


def _tally(node: Node, which: str) -> Condition:
    keys = node.mapping(SPEND_KEYS, what=f"{which} comparisons such as {{cost_usd: {{gt: 0.5}}}}")
    if not keys:
        node.fail(f"the {which} condition is empty", "give e.g. {cost_usd: {gt: 0.5}}")
    parts = []
    for key, child in keys.items():
        parts.append(Condition(_comparison(child, _tally_getter(which, key)), None))
    return _conjunction(parts)


def _tally_getter(which: str, key: str) -> Getter:
    if which == "spend":
        def spent(s: Subject, a: Action, r: Resource, c: Context) -> Any:
            return c.spend.get(key)

        return spent

    def left(s: Subject, a: Action, r: Resource, c: Context) -> Any:
        return c.budget_left.get(key)

    return left


def _equals(node: Node, path: tuple[str, ...]) -> Condition:
    expected = node.value
    if isinstance(expected, bool):
        def test(s: Subject, a: Action, r: Resource, c: Context) -> bool | None:
            value = _lookup(c.extra, path)
            return None if value is _MISSING else value is expected
    elif isinstance(expected, int | float):
        limit = node.number()

        def test(s: Subject, a: Action, r: Resource, c: Context) -> bool | None:
            value = _lookup(c.extra, path)
            return None if value is _MISSING else number_or_none(value) == limit
    elif isinstance(expected, str):
        def test(s: Subject, a: Action, r: Resource, c: Context) -> bool | None:
            value = _lookup(c.extra, path)
            return None if value is _MISSING else value == expected
    else:
        node.fail(f"expected a string, number or bool to compare with, got {describe(expected)}",
                  "write e.g. {channel: web}")
    return Condition(test, None)


def _context(node: Node) -> Condition:
    keys = node.mapping(("tainted", "planned", "step", "spend", "budget_left", "extra"),
                        what="context conditions such as {tainted: true}")
    if not keys:
        node.fail("the context condition is empty", "give e.g. {tainted: true}")
    parts = []
    for key, child in keys.items():
        if key == "tainted":
            parts.append(_flag(child, lambda s, a, r, c: c.tainted))
        elif key == "planned":
            parts.append(_flag(child, lambda s, a, r, c: c.planned))
        elif key == "step":
            parts.append(Condition(_comparison(child, lambda s, a, r, c: c.step), None))
        elif key in ("spend", "budget_left"):
            parts.append(_tally(child, key))
        else:
            extras = child.entries("extra values such as {channel: web}")
            parts.extend(_equals(v, _segments(v, k)) for k, v in extras.items())
    return _conjunction(parts)


_COMPILERS: Mapping[str, Callable[[Node], Condition]] = {
    "tool": _tool, "roles": _roles, "tenant": _tenant, "user": _user, "agent": _agent,
    "args": _args, "args_from": _args_from, "resource": _resource, "context": _context,
    "all": _all, "any": _any, "not": _not,
}
