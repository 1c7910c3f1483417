"""Policy test cases: example requests with the decision a policy must give them.

Why: a permission file changes hands — security edits it, product adds a tool — and the only way
to know an edit did what was meant is to replay known requests. A cases file is read as strictly
as a policy (unknown keys, wrong types and NaN are errors naming file, line, case and key),
because a test that silently checks less than it says is worse than none. Each case is decided
through ``decide``, exactly as the runtime's gate would decide it, so a policy that raises
fails the case instead of crashing the run.

Format::

    cases:
      - name: intern refund denied                     # required, unique
        subject: {user_id: u1, tenant_id: t1, roles: [intern], agent: payer}
        tool: refund                                   # required
        args: {amount: 500}                            # the tool's arguments (any mapping)
        metadata: {side_effect: true, egress: false, tags: [payments], risk: high,
                   output_trust: trusted, idempotent: false, owner: billing}
        context: {tainted: false, step: 1, spend: {cost_usd: 0.1},
                  budget_left: {cost_usd: 0.4}, extra: {channel: web},
                  request: "Refund order A1",             # the user's request (the task)
                  provenance: {order_id: [user]}}         # where each argument could come from
        expect: deny                                   # required: the expected effect
        expect_rule: interns-no-refunds                # optional: the deciding rule id
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tether.policy.base import Action, Context, Decision, Effect, Policy, Resource, Subject, decide
from tether.policy.overlay import intents_of
from tether.policy.yaml_conditions import ORIGINS, SPEND_KEYS, TRUSTS
from tether.policy.yaml_source import Node, PolicyLoadError, parse_yaml
from tether.tools.base import RISKS

_CASE_KEYS = ("name", "subject", "tool", "args", "metadata", "context", "expect", "expect_rule")


@dataclass(frozen=True, slots=True)
class PolicyCase:
    """One example request and the decision it must get."""

    name: str
    subject: Subject
    action: Action
    resource: Resource
    context: Context
    expect: Effect
    expect_rule: str | None = None


@dataclass(frozen=True, slots=True)
class CaseResult:
    case: PolicyCase
    decision: Decision

    @property
    def passed(self) -> bool:
        rule = self.decision.policy_id.rpartition(":")[2]
        return self.decision.effect is self.case.expect and (
            self.case.expect_rule is None or rule == self.case.expect_rule)


def load_cases(text: str, source: str = "<string>") -> tuple[PolicyCase, ...]:
    """Parse and validate a cases file; raises PolicyLoadError saying where and what to fix."""
    document = parse_yaml(text, source)
    if document is None:
        raise PolicyLoadError(f"{source}: the cases file is empty; start it with 'cases:' and a "
                              "list of cases")
    top = Node.root(document, source).mapping(("cases",), required=("cases",),
                                              what="a mapping with a 'cases' list")
    cases: list[PolicyCase] = []
    for index, node in enumerate(top["cases"].items("a list of cases")):
        case = _case(node, index)
        if any(c.name == case.name for c in cases):
            node.within(f"cases[{index}]").fail(f"the case name {case.name!r} is used twice",
                                                "give every case its own name")
        cases.append(case)
    return tuple(cases)


def run_cases(policy: Policy, cases: tuple[PolicyCase, ...]) -> list[CaseResult]:
    """Decide every case as the runtime would (through ``decide``: errors deny)."""
    return [CaseResult(c, decide(policy, c.subject, c.action, c.resource, c.context))
            for c in cases]


def _case(node: Node, index: int) -> PolicyCase:
    scope = f"cases[{index}]"
    if isinstance(node.value, dict) and isinstance(node.value.get("name"), str):
        scope += f" ({node.value['name']!r})"
    keys = node.within(scope).mapping(_CASE_KEYS, required=("name", "tool", "expect"),
                                      what="a case mapping with name, tool and expect")
    name = keys["name"].text()
    tool = keys["tool"].text("a tool name")
    args = _plain(keys.get("args"), "the tool's arguments as a mapping")
    expect = Effect(keys["expect"].choice(e.value for e in Effect))
    expect_rule = keys["expect_rule"].text("a rule id") if "expect_rule" in keys else None
    return PolicyCase(name, _subject(keys.get("subject")), Action(tool, args),
                      _resource(keys.get("metadata"), tool), _context(keys.get("context")),
                      expect, expect_rule)


def _subject(node: Node | None) -> Subject:
    if node is None:
        return Subject()
    keys = node.mapping(("user_id", "tenant_id", "roles", "agent"))
    return Subject(
        keys["user_id"].text() if "user_id" in keys else None,
        keys["tenant_id"].text() if "tenant_id" in keys else None,
        _set(keys.get("roles")),
        keys["agent"].text() if "agent" in keys else "agent",
    )


def _resource(node: Node | None, tool: str) -> Resource:
    if node is None:
        return Resource(tool)
    keys = node.mapping(("tags", "risk", "side_effect", "egress", "output_trust", "owner",
                         "idempotent", "parties", "intents", "shapes"))

    def flag(key: str) -> bool:
        return keys[key].boolean() if key in keys else False

    return Resource(
        tool, _set(keys.get("tags")),
        keys["risk"].choice(RISKS) if "risk" in keys else "low",
        flag("side_effect"), flag("egress"),
        keys["output_trust"].choice(TRUSTS) if "output_trust" in keys else "trusted",
        keys["owner"].text() if "owner" in keys else None,
        flag("idempotent"), _set(keys.get("parties")),
        intents_of(keys["intents"]) if "intents" in keys else frozenset(),
        _set(keys.get("shapes")) if "shapes" in keys else None,
    )


def _context(node: Node | None) -> Context:
    if node is None:
        return Context("policy-test", 0, {}, {})
    keys = node.mapping(("tainted", "step", "spend", "budget_left", "extra", "session_id",
                         "request", "provenance"))
    step = keys["step"].integer() if "step" in keys else 0
    if step < 0:
        keys["step"].fail(f"step {step} is negative", "write a step of 0 or more")
    return Context(
        keys["session_id"].text() if "session_id" in keys else "policy-test", step,
        _tally(keys.get("spend"), allow_null=False), _tally(keys.get("budget_left"), True),
        keys["tainted"].boolean() if "tainted" in keys else False,
        extra=_plain(keys.get("extra"), "a mapping of extra values"),
        request=keys["request"].text() if "request" in keys else "",
        provenance={name: frozenset(child.texts(ORIGINS)) for name, child in
                    keys["provenance"].entries("argument origins such as "
                                               "{recipient: [untrusted]}").items()}
        if "provenance" in keys else {},
    )


def _tally(node: Node | None, allow_null: bool) -> dict[str, Any]:
    if node is None:
        return {}
    out: dict[str, Any] = {}
    for key, child in node.mapping(SPEND_KEYS).items():
        out[key] = None if allow_null and child.value is None else child.number()
    return out


def _set(node: Node | None) -> frozenset[str]:
    if node is None or node.value == []:
        return frozenset()
    return frozenset(node.texts())


def _plain(node: Node | None, what: str) -> dict[str, Any]:
    """A free-form mapping (may be empty) as plain data."""
    if node is None or node.value == {}:
        return {}
    return {key: _unwrap(child.value) for key, child in node.entries(what).items()}


def _unwrap(value: Any) -> Any:
    """Plain dicts and lists, without the line bookkeeping the reader attached."""
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value
