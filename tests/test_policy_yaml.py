"""The YAML policy engine decides as documented: deny wins, then priority, unknowns fail closed."""

from __future__ import annotations

import math
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tether import Agent, ReAct, ScriptedModel, tool
from tether.policy import (
    Action,
    Context,
    Decision,
    Effect,
    Policy,
    PolicyLoadError,
    Resource,
    Subject,
    YamlPolicy,
    load_policy,
)

from conftest import call

EXPENSES = """
version: 1
policy_id: expenses
default: deny
rules:
  - id: interns-no-refunds
    priority: 100
    effect: deny
    reason: interns cannot refund
    when:
      all:
        - tool: refund
        - roles: {in: [intern]}
        - args: {amount: {gt: 100}}
  - id: refunds
    effect: allow
    when: {tool: {in: [refund, lookup]}}
  - id: mask-card
    effect: mask
    fields: [card_number]
    mask_in: [journal, output]
    when: {tool: pay}
  - id: cheap-search
    effect: degrade
    fallback: cheap_search
    when: {resource: {tags: {any: [expensive]}}}
"""


def ask(policy: YamlPolicy, tool: str = "refund", args: dict[str, Any] | None = None, *,
        roles: tuple[str, ...] = (), tenant: str | None = "t1", user: str | None = "u1",
        tags: tuple[str, ...] = (), tainted: bool = False, step: int = 1,
        spend: dict[str, Any] | None = None, left: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None, **resource: Any) -> Decision:
    return policy.evaluate(
        Subject(user, tenant, frozenset(roles), "agent"),
        Action(tool, args or {}),
        Resource(tool, frozenset(tags), **resource),
        Context("s1", step, spend or {}, left or {}, tainted, 0.0, extra or {}))


def one_rule(effect: str, when: str, extra: str = "", default: str = "deny") -> YamlPolicy:
    return YamlPolicy.from_string(f"""
version: 1
policy_id: p
default: {default}
rules:
  - id: r
    effect: {effect}
    {extra}
    when: {when}
""")


def matches(policy: YamlPolicy, **request: Any) -> bool:
    return ask(policy, **request).policy_id == "p:r"


# -- the documented example -----------------------------------------------------------------

def test_the_spec_example_decides_as_documented() -> None:
    p = YamlPolicy.from_string(EXPENSES)
    denied = ask(p, args={"amount": 500}, roles=("intern",))
    assert (denied.effect, denied.policy_id, denied.reason) == (
        Effect.DENY, "expenses:interns-no-refunds", "interns cannot refund")
    assert ask(p, args={"amount": 100}, roles=("intern",)).policy_id == "expenses:refunds"
    assert ask(p, args={"amount": 500}, roles=("clerk",)).effect is Effect.ALLOW
    masked = ask(p, "pay", {"card_number": "4111"})
    assert (masked.effect, masked.fields, masked.mask_in) == (
        Effect.MASK, ("card_number",), ("journal", "output"))
    degraded = ask(p, "search", tags=("expensive",))
    assert (degraded.effect, degraded.fallback) == (Effect.DEGRADE, "cheap_search")
    default = ask(p, "delete_everything")
    assert (default.effect, default.policy_id) == (Effect.DENY, "expenses:default")
    assert "no rule" in default.reason and "expenses" in default.reason


def test_load_policy_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "expenses.yaml"
    path.write_text(EXPENSES)
    policy = load_policy(path)
    assert policy.policy_id == "expenses" and policy.source == str(path)
    assert [r.id for r in policy.rules] == ["interns-no-refunds", "refunds", "mask-card",
                                            "cheap-search"]
    assert "expenses" in repr(policy) and "rules=4" in repr(policy)


def test_load_policy_fails_closed_on_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(PolicyLoadError, match=r"missing\.yaml: cannot read.*check the path"):
        load_policy(tmp_path / "missing.yaml")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"version: 1\npolicy_id: caf\xe9\n")
    with pytest.raises(PolicyLoadError, match="not UTF-8"):
        load_policy(latin)
    assert issubclass(PolicyLoadError, ValueError)


# -- combination: deny wins, then priority, then file order --------------------------------

PRIORITIES = """
version: 1
policy_id: p
default: allow
rules:
  - {id: low-deny, priority: 1, effect: deny, reason: low, when: {tool: t}}
  - {id: high-allow, priority: 50, effect: allow, when: {tool: t}}
  - {id: high-deny, priority: 10, effect: deny, reason: high, when: {tool: t}}
  - {id: approve, priority: 5, effect: require_approval, when: {tool: u}}
  - {id: mask-first, priority: 5, effect: mask, fields: [x], when: {tool: u}}
  - {id: tie-a, priority: 3, effect: allow, when: {tool: v}}
  - {id: tie-b, priority: 3, effect: require_approval, when: {tool: v}}
  - {id: top, priority: 9, effect: partial_allow, fields: [a, b], when: {tool: w}}
"""


def test_any_deny_beats_a_higher_priority_allow_and_the_highest_deny_decides() -> None:
    decision = ask(YamlPolicy.from_string(PRIORITIES), "t")
    assert (decision.effect, decision.policy_id, decision.reason) == (
        Effect.DENY, "p:high-deny", "high")


def test_without_a_deny_the_highest_priority_then_the_earlier_rule_decides() -> None:
    p = YamlPolicy.from_string(PRIORITIES)
    assert ask(p, "u").policy_id == "p:approve"  # same priority: earlier in the file
    assert ask(p, "v").policy_id == "p:tie-a"
    top = ask(p, "w")
    assert (top.effect, top.fields) == (Effect.PARTIAL_ALLOW, ("a", "b"))
    assert ask(p, "nothing-matches").policy_id == "p:default"


@pytest.mark.parametrize("default", ["allow", "deny", "require_approval"])
def test_default_applies_when_nothing_matches(default: str) -> None:
    p = one_rule("deny", "{tool: other}", default=default)
    decision = ask(p, "x")
    assert (decision.effect.value, decision.policy_id) == (default, "p:default")


def test_default_is_deny_when_omitted_and_a_rule_without_when_matches_everything() -> None:
    p = YamlPolicy.from_string("version: 1\npolicy_id: p\nrules: []\n")
    assert ask(p, "x").effect is Effect.DENY and p.rules == ()
    always = YamlPolicy.from_string("version: 1\npolicy_id: p\nrules:\n"
                                    "  - {id: all, effect: allow}\n")
    assert ask(always, "anything").policy_id == "p:all"
    assert ask(always, "anything").reason == "rule 'all' (allow)"


def test_mask_without_mask_in_masks_everywhere() -> None:
    p = one_rule("mask", "{tool: pay}", "fields: [card]")
    assert ask(p, "pay").mask_in == ("input", "output", "journal")


# -- fail closed: three-valued conditions --------------------------------------------------

RESTRICT = ["deny", "require_approval"]
GRANT = [("allow", ""), ("partial_allow", "fields: [a]"), ("mask", "fields: [a]"),
         ("degrade", "fallback: other")]


@pytest.mark.parametrize("args", [
    {}, {"amount": True}, {"amount": "500"}, {"amount": None}, {"amount": math.nan},
    {"amount": math.inf}, {"amount": [500]}, {"amount": {"value": 500}}, {"amount": Decimal("NaN")},
], ids=["missing", "bool", "string", "null", "nan", "inf", "list", "mapping", "decimal-nan"])
def test_an_uncomparable_argument_restricts_but_never_grants(args: dict[str, Any]) -> None:
    when = "{args: {amount: {gt: 100}}}"
    for effect in RESTRICT:
        decision = ask(one_rule(effect, when), args=args)
        assert (decision.effect.value, decision.policy_id) == (effect, "p:r")
        assert "could not be evaluated" in decision.reason and "fail closed" in decision.reason
    for effect, extra in GRANT:
        assert ask(one_rule(effect, when, extra, default="allow"), args=args).policy_id == \
            "p:default"


def test_comparisons_work_on_ints_floats_decimals_and_nested_paths() -> None:
    p = one_rule("allow", '{args: {"order.total": {gt: 10, le: 20}}}')
    for value, expected in [(15, True), (10, False), (20, True), (20.5, False),
                            (Decimal("10.01"), True), (Decimal("0.1"), False)]:
        assert matches(p, args={"order": {"total": value}}) is expected, value
    assert not matches(p, args={"order": 15})  # a path through a non-mapping is unknown
    assert not matches(p, args={"order": {"totals": 15}})
    eq = one_rule("allow", "{args: {n: {eq: 3}}}")
    assert matches(eq, args={"n": 3}) and matches(eq, args={"n": 3.0})
    assert not matches(eq, args={"n": 4})
    lt_ge = one_rule("allow", "{args: {n: {lt: 0}, m: {ge: 1.5}}}")
    assert matches(lt_ge, args={"n": -1, "m": 1.5}) and not matches(lt_ge, args={"n": -1, "m": 1})


def test_kleene_logic_for_all_any_and_not() -> None:
    unknown = "{args: {amount: {gt: 5}}}"  # the requests below never send amount
    # not(unknown) is unknown: it restricts and does not grant
    assert ask(one_rule("deny", f"{{not: {unknown}}}", default="allow")).policy_id == "p:r"
    assert ask(one_rule("allow", f"{{not: {unknown}}}")).policy_id == "p:default"
    # any(true, unknown) is true; any(false, unknown) is unknown
    assert matches(one_rule("allow", f"{{any: [{{tool: refund}}, {unknown}]}}"))
    assert not matches(one_rule("allow", f"{{any: [{{tool: other}}, {unknown}]}}"))
    assert matches(one_rule("deny", f"{{any: [{{tool: other}}, {unknown}]}}", default="allow"))
    # all(false, unknown) is false, even for a deny; all(true, unknown) is unknown
    assert not matches(one_rule("deny", f"{{all: [{{tool: other}}, {unknown}]}}",
                                default="allow"))
    assert matches(one_rule("deny", f"{{all: [{{tool: refund}}, {unknown}]}}", default="allow"))
    assert not matches(one_rule("allow", f"{{all: [{{tool: refund}}, {unknown}]}}"))
    # not of a definite value is definite
    assert matches(one_rule("allow", "{not: {tool: other}}"))
    assert not matches(one_rule("allow", "{not: {tool: refund}}"))


# -- each condition ------------------------------------------------------------------------

def test_subject_conditions() -> None:
    roles_in = one_rule("allow", "{roles: {in: [admin, clerk]}}")
    assert matches(roles_in, roles=("clerk", "x")) and not matches(roles_in, roles=("intern",))
    assert matches(one_rule("allow", "{roles: admin}"), roles=("admin",))
    none_of = one_rule("allow", "{roles: {not_in: [intern, guest]}}")
    assert matches(none_of, roles=("clerk",)) and matches(none_of)
    assert not matches(none_of, roles=("clerk", "guest"))
    both = one_rule("allow", "{roles: {in: [clerk], not_in: [suspended]}}")
    assert matches(both, roles=("clerk",)) and not matches(both, roles=("clerk", "suspended"))
    tenant = one_rule("allow", "{tenant: {in: [t1, t2]}}")
    assert matches(tenant, tenant="t2") and not matches(tenant, tenant="t3")
    assert matches(one_rule("allow", "{tenant: t1}"))
    user = one_rule("allow", "{user: u1}")
    assert matches(user) and not matches(user, user="u2")
    assert matches(one_rule("allow", "{agent: {in: [agent]}}"))


def test_a_missing_tenant_or_user_is_unknown() -> None:
    assert not matches(one_rule("allow", "{tenant: t1}"), tenant=None)
    assert matches(one_rule("deny", "{not: {tenant: t1}}", default="allow"), tenant=None)
    assert not matches(one_rule("allow", "{user: {in: [u1]}}"), user=None)
    assert matches(one_rule("require_approval", "{user: u9}"), user=None)


def test_resource_conditions() -> None:
    assert matches(one_rule("allow", "{resource: {side_effect: true}}"), side_effect=True)
    assert not matches(one_rule("allow", "{resource: {side_effect: true}}"))
    assert matches(one_rule("allow", "{resource: {egress: false}}"))
    assert matches(one_rule("allow", "{resource: {idempotent: true}}"), idempotent=True)
    any_tag = one_rule("allow", "{resource: {tags: {any: [a, b]}}}")
    assert matches(any_tag, tags=("b", "z")) and not matches(any_tag, tags=("z",))
    all_tags = one_rule("allow", "{resource: {tags: {all: [a, b]}}}")
    assert matches(all_tags, tags=("a", "b", "c")) and not matches(all_tags, tags=("a",))
    risk = one_rule("allow", "{resource: {risk: {in: [high, critical]}}}")
    assert matches(risk, risk="critical") and not matches(risk, risk="low")
    assert matches(one_rule("allow", "{resource: {risk: medium}}"), risk="medium")
    trust = one_rule("allow", "{resource: {output_trust: untrusted}}")
    assert matches(trust, output_trust="untrusted") and not matches(trust)
    several = one_rule("allow", "{resource: {side_effect: true, risk: high}}")
    assert matches(several, side_effect=True, risk="high")
    assert not matches(several, side_effect=True, risk="low")


def test_context_conditions() -> None:
    tainted = one_rule("allow", "{context: {tainted: true}}")
    assert matches(tainted, tainted=True) and not matches(tainted)
    step = one_rule("allow", "{context: {step: {ge: 3}}}")
    assert matches(step, step=3) and not matches(step, step=2)
    spend = one_rule("allow", "{context: {spend: {cost_usd: {gt: 0.1}}}}")
    assert matches(spend, spend={"cost_usd": Decimal("0.11")})
    assert not matches(spend, spend={"cost_usd": Decimal("0.1")})
    assert not matches(spend)  # missing: unknown, so no grant
    assert matches(one_rule("deny", "{context: {spend: {cost_usd: {gt: 0.1}}}}",
                            default="allow"))
    left = one_rule("require_approval", "{context: {budget_left: {tokens: {lt: 100}}}}",
                    default="allow")
    assert matches(left, left={"tokens": 50}) and not matches(left, left={"tokens": 500})
    assert matches(left, left={"tokens": None})  # unlimited is not a number: unknown


def test_context_extra_equality_is_typed_and_missing_is_unknown() -> None:
    channel = one_rule("allow", "{context: {extra: {channel: web, 'client.version': 2}}}")
    assert matches(channel, extra={"channel": "web", "client": {"version": 2}})
    assert matches(channel, extra={"channel": "web", "client": {"version": Decimal(2)}})
    assert not matches(channel, extra={"channel": "api", "client": {"version": 2}})
    assert not matches(channel, extra={"channel": "web"})
    flag = one_rule("allow", "{context: {extra: {beta: true}}}")
    assert matches(flag, extra={"beta": True})
    assert not matches(flag, extra={"beta": 1})  # 1 is not true here
    assert not matches(one_rule("allow", "{context: {extra: {n: 1}}}"), extra={"n": True})
    assert matches(one_rule("deny", "{context: {extra: {channel: web}}}", default="allow"))


def test_several_keys_in_one_condition_must_all_hold() -> None:
    p = one_rule("allow", "{tool: refund, roles: {in: [clerk]}, args: {amount: {lt: 10}}}")
    assert matches(p, args={"amount": 5}, roles=("clerk",))
    assert not matches(p, args={"amount": 50}, roles=("clerk",))
    assert not matches(p, tool="lookup", args={"amount": 5}, roles=("clerk",))


# -- the tool index never changes an answer ------------------------------------------------

def test_rules_scoped_to_tools_apply_only_to_those_tools() -> None:
    p = YamlPolicy.from_string("""
version: 1
policy_id: p
default: allow
rules:
  - {id: a-or-b, effect: deny, when: {any: [{tool: a}, {tool: b}]}}
  - {id: not-c, priority: -1, effect: require_approval, when: {not: {tool: c}}}
  - {id: c-and-tag, effect: deny, when: {all: [{tool: c}, {resource: {tags: {any: [x]}}}]}}
  - {id: any-unbounded, effect: mask, fields: [f],
     when: {any: [{tool: d}, {resource: {risk: critical}}]}}
""")
    assert ask(p, "a").policy_id == "p:a-or-b" and ask(p, "b").policy_id == "p:a-or-b"
    assert ask(p, "c").policy_id == "p:default"
    assert ask(p, "c", tags=("x",)).policy_id == "p:c-and-tag"
    assert ask(p, "zzz").policy_id == "p:not-c"
    assert ask(p, "d").policy_id == "p:any-unbounded"  # priority 0 beats not-c's -1
    assert ask(p, "c", risk="critical").policy_id == "p:any-unbounded"


# -- end to end through the runtime --------------------------------------------------------

def test_an_agent_governed_by_a_yaml_policy_never_runs_a_denied_tool() -> None:
    ran: list[int] = []

    @tool(side_effect=True, tags={"payments"}, risk="high")
    def refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        ran.append(amount)
        return "refunded"

    agent = Agent(model=ScriptedModel([call("refund", {"order_id": "A1", "amount": 500}),
                                       "could not refund"]),
                  reasoning=ReAct(), tools=[refund], policy=YamlPolicy.from_string(EXPENSES),
                  check_policy_names=False)  # EXPENSES also governs tools this agent lacks
    session = agent.session("refund A1", user_id="u1", tenant_id="t1", roles=["intern"])
    result = session.run()
    assert ran == []
    assert result.trajectory.steps[0].results[0].status == "denied"
    decision = next(e.data["decision"] for e in session.replay() if e.type == "tool.decision")
    assert decision["policy_id"] == "expenses:interns-no-refunds"
    assert decision["effect"] == "deny"


def test_the_policy_package_loads_yaml_only_when_a_policy_is_parsed() -> None:
    code = (
        "import sys; from tether.policy import YamlPolicy, load_policy, DenyOverrides, "
        "contain_untrusted, PolicyLoadError\n"
        "assert not {'yaml', 'pydantic'} & set(sys.modules), sorted(sys.modules)\n"
        "YamlPolicy.from_string('version: 1\\npolicy_id: p\\nrules: []\\n')\n"
        "assert 'yaml' in sys.modules and 'pydantic' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_yaml_policy_is_a_policy() -> None:
    assert isinstance(YamlPolicy.from_string(EXPENSES), Policy)
