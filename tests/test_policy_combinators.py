"""Combinators: abstain is skipped, deny wins over anything, errors deny, the rest as documented."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.policy import (
    RESTRICTIVENESS,
    Action,
    Context,
    Decision,
    DefaultDeny,
    DenyOverrides,
    Effect,
    FirstMatch,
    Resource,
    Subject,
    YamlPolicy,
    contain_untrusted,
    decide,
)

REQUEST = (Subject("u1", "t1"), Action("refund", {"amount": 5}), Resource("refund"),
           Context("s1", 1, {}, {}))


class Fixed:
    """A member that always gives the same answer (an Effect, None to abstain, or raises)."""

    def __init__(self, answer: Effect | str | None, name: str) -> None:
        self.answer, self.policy_id, self.calls = answer, name, 0

    def evaluate(self, *request: Any) -> Any:
        self.calls += 1
        if self.answer == "raise":
            raise RuntimeError(f"{self.policy_id} broke")
        if self.answer == "junk":
            return "allow"
        if self.answer is None:
            return None
        return Decision(Effect(self.answer), f"{self.policy_id} says {self.answer}",
                        self.policy_id)


def members(*answers: Effect | str | None) -> list[Fixed]:
    return [Fixed(answer, f"m{i}") for i, answer in enumerate(answers)]


def test_restrictiveness_orders_every_effect_once() -> None:
    assert RESTRICTIVENESS == (Effect.DENY, Effect.REQUIRE_APPROVAL, Effect.DEGRADE,
                               Effect.PARTIAL_ALLOW, Effect.MASK, Effect.ALLOW)
    assert set(RESTRICTIVENESS) == set(Effect)


# -- FirstMatch ----------------------------------------------------------------------------

def test_first_match_takes_the_first_member_that_decides() -> None:
    ms = members(None, Effect.MASK, Effect.ALLOW)
    decision = FirstMatch(*ms).evaluate(*REQUEST)
    assert (decision.effect, decision.policy_id) == (Effect.MASK, "m1")


def test_first_match_lets_a_later_deny_win_and_stops_there() -> None:
    ms = members(Effect.ALLOW, Effect.DENY, Effect.ALLOW)
    decision = FirstMatch(*ms).evaluate(*REQUEST)
    assert (decision.effect, decision.policy_id) == (Effect.DENY, "m1")
    assert [m.calls for m in ms] == [1, 1, 0]


@pytest.mark.parametrize("default", [Effect.DENY, Effect.ALLOW, "require_approval"])
def test_first_match_falls_back_to_its_default(default: Effect | str) -> None:
    combo = FirstMatch(*members(None, None), default=default)
    decision = combo.evaluate(*REQUEST)
    assert decision.effect == default
    assert decision.policy_id == "first-match(m0, m1):default"
    assert "no policy" in decision.reason
    assert FirstMatch().evaluate(*REQUEST).effect is Effect.DENY  # nothing at all: deny


@pytest.mark.parametrize("default", [Effect.MASK, "partial_allow", "degrade", "permit", 3])
def test_first_match_rejects_defaults_that_need_fields_or_do_not_exist(default: Any) -> None:
    with pytest.raises(ValueError, match="default must be one of allow, deny, require_approval"):
        FirstMatch(default=default)


# -- DenyOverrides -------------------------------------------------------------------------

def test_deny_overrides_takes_the_most_restrictive_answer() -> None:
    combo = DenyOverrides(*members(Effect.ALLOW, Effect.MASK, Effect.DEGRADE, None,
                                   Effect.PARTIAL_ALLOW))
    decision = combo.evaluate(*REQUEST)
    assert decision is not None and (decision.effect, decision.policy_id) == (
        Effect.DEGRADE, "m2")


def test_deny_overrides_breaks_ties_by_order_and_denies_on_any_deny() -> None:
    first = DenyOverrides(*members(Effect.REQUIRE_APPROVAL, Effect.REQUIRE_APPROVAL))
    decision = first.evaluate(*REQUEST)
    assert decision is not None and decision.policy_id == "m0"
    ms = members(Effect.REQUIRE_APPROVAL, Effect.DENY, Effect.ALLOW)
    decision = DenyOverrides(*ms).evaluate(*REQUEST)
    assert decision is not None and (decision.effect, decision.policy_id) == (Effect.DENY, "m1")
    assert ms[2].calls == 0


def test_deny_overrides_abstains_when_everyone_does_and_default_deny_closes_it() -> None:
    inner = DenyOverrides(*members(None, None))
    assert inner.evaluate(*REQUEST) is None
    closed = DefaultDeny(inner).evaluate(*REQUEST)
    assert (closed.effect, closed.policy_id) == (
        Effect.DENY, "default-deny(deny-overrides(m0, m1)):default")
    # nested, an abstaining set leaves the decision to its siblings
    outer = FirstMatch(inner, *members(Effect.ALLOW))
    assert outer.evaluate(*REQUEST).policy_id == "m0"


def test_deny_overrides_needs_a_member() -> None:
    with pytest.raises(ValueError, match="DenyOverrides needs at least 1 policy"):
        DenyOverrides()


# -- failures close every combinator -------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda ms: FirstMatch(*ms, default=Effect.ALLOW), lambda ms: DenyOverrides(*ms),
    lambda ms: DefaultDeny(ms[0]),
], ids=["first-match", "deny-overrides", "default-deny"])
def test_a_member_that_raises_denies_with_the_error_in_the_reason(make: Any) -> None:
    combo = make(members("raise", Effect.ALLOW))
    decision = combo.evaluate(*REQUEST)
    assert decision.effect is Effect.DENY
    assert "RuntimeError: m0 broke" in decision.reason and "fail closed" in decision.reason
    assert decision.policy_id == f"{combo.policy_id}:error"


@pytest.mark.parametrize("make", [FirstMatch, DenyOverrides, DefaultDeny])
def test_a_member_that_answers_junk_denies(make: Any) -> None:
    decision = make(*members("junk")).evaluate(*REQUEST)
    assert decision.effect is Effect.DENY and "returned str, not a Decision" in decision.reason


def test_a_raising_member_after_an_allow_still_denies() -> None:
    decision = FirstMatch(*members(Effect.ALLOW, "raise")).evaluate(*REQUEST)
    assert decision.effect is Effect.DENY and "m1 broke" in decision.reason


@pytest.mark.parametrize("make", [FirstMatch, DenyOverrides, DefaultDeny])
def test_members_without_evaluate_are_rejected_at_construction(make: Any) -> None:
    with pytest.raises(TypeError, match=r"member 0 \('allow'\) has no evaluate"):
        make("allow")


def test_a_list_of_members_gets_a_hint_to_unpack_it() -> None:
    with pytest.raises(TypeError, match=r"pass the policies as separate arguments"):
        DenyOverrides(members(Effect.ALLOW))  # type: ignore[arg-type]


def test_default_deny_passes_decisions_through() -> None:
    decision = DefaultDeny(*members(Effect.MASK)).evaluate(*REQUEST)
    assert (decision.effect, decision.policy_id) == (Effect.MASK, "m0")


def test_policy_ids_can_be_named_and_reprs_show_the_members() -> None:
    combo = FirstMatch(*members(None), default="allow", policy_id="house")
    assert combo.evaluate(*REQUEST).policy_id == "house:default"
    assert DenyOverrides(*members(Effect.ALLOW), policy_id="d").policy_id == "d"
    assert DefaultDeny(*members(None), policy_id="dd").evaluate(*REQUEST).policy_id == \
        "dd:default"
    assert "Fixed" in repr(DenyOverrides(*members(None)))
    assert repr(DefaultDeny(contain_untrusted)).startswith("DefaultDeny(ContainUntrusted(")
    assert "default=deny" in repr(FirstMatch())


def test_decide_denies_an_abstaining_policy_and_says_how_to_give_it_a_default() -> None:
    decision = decide(DenyOverrides(*members(None)), *REQUEST)
    assert decision.effect is Effect.DENY and "abstained" in decision.reason
    assert "DefaultDeny" in decision.reason


# -- the invariants, for any members -------------------------------------------------------

answers = st.lists(st.sampled_from([*Effect, None, "raise"]), min_size=1, max_size=6)


@given(answers)
def test_combination_invariants(behaviour: list[Effect | str | None]) -> None:
    first = FirstMatch(*members(*behaviour)).evaluate(*REQUEST)
    over = DenyOverrides(*members(*behaviour)).evaluate(*REQUEST)
    decided = [b for b in behaviour if b is not None]
    if "raise" in behaviour or Effect.DENY in behaviour:
        # explicit deny or an error wins over anything, in either combinator
        assert first.effect is Effect.DENY
        assert over is not None and over.effect is Effect.DENY
        return
    if not decided:
        assert over is None and first.policy_id.endswith(":default")
        return
    assert first.effect is decided[0]
    assert over is not None
    assert over.effect is min(decided, key=RESTRICTIVENESS.index)
    assert over.policy_id == f"m{behaviour.index(over.effect)}"


@given(answers, st.randoms())
def test_deny_overrides_effect_does_not_depend_on_member_order(
        behaviour: list[Effect | str | None], rng: Any) -> None:
    shuffled = list(behaviour)
    rng.shuffle(shuffled)
    a = DenyOverrides(*members(*behaviour)).evaluate(*REQUEST)
    b = DenyOverrides(*members(*shuffled)).evaluate(*REQUEST)
    assert (a is None) == (b is None)
    if a is not None and b is not None:
        assert a.effect is b.effect


# -- the preset ------------------------------------------------------------------------------

def ask_preset(tainted: bool, **meta: Any) -> Decision:
    return contain_untrusted.evaluate(Subject(), Action("send_email", {}),
                                      Resource("send_email", **meta),
                                      Context("s", 1, {}, {}, tainted))


@pytest.mark.parametrize(("meta", "what"), [
    ({"egress": True}, "sends data out (egress)"),
    ({"side_effect": True}, "has side effects"),
    ({"egress": True, "side_effect": True}, "sends data out (egress) and has side effects"),
])
def test_contain_untrusted_asks_for_approval_after_untrusted_input(
        meta: dict[str, bool], what: str) -> None:
    decision = ask_preset(True, **meta)
    assert (decision.effect, decision.policy_id) == (Effect.REQUIRE_APPROVAL, "contain-untrusted")
    assert "read untrusted content" in decision.reason and what in decision.reason
    assert "'send_email'" in decision.reason


@pytest.mark.parametrize(("tainted", "meta"), [
    (True, {}), (False, {"egress": True}), (False, {"side_effect": True, "egress": True}),
])
def test_contain_untrusted_allows_otherwise(tainted: bool, meta: dict[str, bool]) -> None:
    assert ask_preset(tainted, **meta).effect is Effect.ALLOW


def test_contain_untrusted_stacks_with_yaml_rules_under_deny_overrides() -> None:
    rules = YamlPolicy.from_string("""
version: 1
policy_id: house
default: allow
rules:
  - {id: no-wire, effect: deny, reason: no wires, when: {tool: wire}}
""")
    combo = DenyOverrides(rules, contain_untrusted)
    tainted = Context("s", 1, {}, {}, True)
    email = combo.evaluate(Subject(), Action("email", {}), Resource("email", egress=True),
                           tainted)
    assert (email.effect, email.policy_id) == (Effect.REQUIRE_APPROVAL, "contain-untrusted")
    wire = combo.evaluate(Subject(), Action("wire", {}), Resource("wire", egress=True), tainted)
    assert (wire.effect, wire.policy_id) == (Effect.DENY, "house:no-wire")
    clean = combo.evaluate(Subject(), Action("email", {}), Resource("email", egress=True),
                           Context("s", 1, {}, {}))
    assert (clean.effect, clean.policy_id) == (Effect.ALLOW, "house:default")
