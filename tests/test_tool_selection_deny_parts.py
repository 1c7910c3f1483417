"""Tool selection under policies whose one part refuses a tool outright while another part reads
the arguments: a ``FirstMatch`` (any member's deny wins there too) and a YAML policy (any deny
rule that matches wins).

Hostile first: the docs promise "a tool the policy denies outright is never offered", and the
probe kept it for a ``DenyOverrides`` or ``DefaultDeny`` only. ``FirstMatch(amounts, no_transfers)``
and a YAML file with a rule on ``amount`` above a rule refusing interns every transfer offered
``transfer_money`` on every turn, though no call to it could ever pass the gate: the first part
read the arguments, so the whole was not proven to deny, and its parts were never asked alone
(``tether.policy.base.DenyParts`` now names them; the probe asks each).
"""

from __future__ import annotations

from typing import Any

from test_tool_selection_probe import READERS, STYLES, AmountRule, Outright, transfer
from test_tool_selection_probe import run as probed
from tether import Decision, Effect
from tether.policy import Action, Context, Resource, Subject
from tether.policy.combinators import DenyOverrides, FirstMatch
from tether.policy.yaml_policy import YamlPolicy


class InlineAmounts(AmountRule):
    inline = True  # decides on the caller's thread, so a part of it may be asked alone


class InlineOutright(Outright):
    inline = True


AMOUNTS = InlineAmounts(READERS["dict()"], STYLES["get"])

BANK_YAML = """
version: 1
policy_id: bank
default: allow
rules:
  - id: big-transfers
    priority: 10
    effect: deny
    when: {all: [{tool: transfer_money}, {args: {amount: {gt: 100}}}]}
  - id: interns-never-transfer
    effect: deny
    when: {all: [{tool: transfer_money}, {roles: {in: [intern]}}]}
  - id: acme-transfers-elsewhere
    effect: deny
    when: {all: [{tool: transfer_money}, {tenant: {in: [acme]}}]}
  - id: approve-weather
    effect: require_approval
    when: {tool: get_weather}
"""


def run(policy: Any, script: list[Any], roles: tuple[str, ...] = (),
        tenant: str | None = "globex") -> tuple[list[list[str]], Any, list[int]]:
    return probed(policy, script, k=3, task="transfer money to bob, check the weather",
                  roles=roles, tenant_id=tenant)


def test_a_first_match_member_that_refuses_a_tool_outright_hides_it() -> None:
    for policy in (FirstMatch(AMOUNTS, InlineOutright()), FirstMatch(AMOUNTS, InlineOutright(),
                                                                default="allow"),
                   DenyOverrides(FirstMatch(AMOUNTS, InlineOutright()))):
        offers, result, ran = run(policy, [transfer(5), "done"])
        assert "transfer_money" not in offers[0], policy
        assert ran == [] and result.stop_reason.value == "finished"


def test_a_first_match_whose_members_read_the_arguments_leaves_the_tool_offered() -> None:
    offers, _, ran = run(FirstMatch(AMOUNTS, default="allow"),
                              [transfer(500), transfer(50), "done"])
    assert all("transfer_money" in o for o in offers[:2])
    assert ran == [50]


def test_a_yaml_deny_rule_that_matches_without_the_arguments_hides_the_tool() -> None:
    policy = YamlPolicy.from_string(BANK_YAML)
    offers, result, ran = run(policy, [transfer(5), "done"], roles=("intern",))
    assert "transfer_money" not in offers[0]
    assert "get_weather" in offers[0]  # waits for a person: not a deny
    assert ran == []
    # for anyone else only the rule on the amount can deny: offered, decided per call
    offers, result, ran = run(policy, [transfer(500), transfer(50), "done"])
    assert all("transfer_money" in o for o in offers[:2])
    assert [s.results[0].status for s in result.trajectory.steps[:2]] == ["denied", "ok"]
    assert ran == [50]
    # a rule on the tenant is unknown for a session without one: it denies every call
    offers, result, ran = run(policy, [transfer(5), "done"], tenant=None)
    assert "transfer_money" not in offers[0] and ran == []


class Misreports:
    """Claims a part that denies everything, while the whole allows: a part is only ever
    believed for a deny the whole also gives."""

    inline = True

    @property
    def deny_parts(self) -> tuple[object, ...]:
        return (InlineOutright(),)

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        return Decision(Effect.ALLOW, "ok", "misreports")


def test_parts_are_asked_only_when_the_whole_denies() -> None:
    offers, _, ran = run(Misreports(), [transfer(5), "done"])
    assert "transfer_money" in offers[0] and ran == [5]
