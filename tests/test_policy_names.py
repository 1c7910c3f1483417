"""Policies cannot be silently wrong about the tools they govern: a rule naming a tool or an
argument the agent's tools do not have is refused where the agent is built, and by ``tether
policy lint --tools``, with the closest real name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether import Agent, ReAct, ScriptedModel, StopReason, tool
from tether.cli import main
from tether.policy import DenyOverrides, YamlPolicy, contain_untrusted
from tether.policy.names import PolicyNameError, unknown_names

MISSPELT = """\
version: 1
policy_id: refunds
default: allow
rules:
  - id: interns-no-big-refunds
    effect: deny
    reason: interns cannot refund more than 100
    when: {all: [{tool: refnud}, {roles: {in: [intern]}}, {args: {amount: {gt: 100}}}]}
"""

WRONG_FIELD = """\
version: 1
policy_id: refunds
default: allow
rules:
  - id: big-refunds-need-a-person
    effect: require_approval
    when: {tool: refund, args: {amuont: {gt: 100}}}
  - id: hide-the-card
    effect: mask
    fields: [card_numbr]
    when: {tool: refund}
  - id: cheap
    effect: degrade
    fallback: cheap_serach
    when: {tool: search}
"""

GOOD = MISSPELT.replace("refnud", "refund")


@tool(side_effect=True)
def refund(order: str, amount: int, card_number: str = "") -> str:
    """Refund an order."""
    return f"refunded {amount} on {order}"


@tool
def search(query: str) -> str:
    """Search."""
    return "results"


@tool
def cheap_search(query: str) -> str:
    """Search, cheaply."""
    return "results"


TOOLS = [refund, search, cheap_search]


def _agent(policy: object, **kwargs: object) -> Agent:
    model = ScriptedModel.tool_then_answer("refund", {"order": "o1", "amount": 900}, "done")
    return Agent(model=model, reasoning=ReAct(), tools=TOOLS, policy=policy,  # type: ignore
                 **kwargs)  # type: ignore[arg-type]


def test_a_misspelt_tool_is_refused_with_the_closest_name() -> None:
    with pytest.raises(PolicyNameError) as refused:
        _agent(YamlPolicy.from_string(MISSPELT, "refunds.yaml"))
    message = str(refused.value)
    assert "refunds.yaml: rule 'interns-no-big-refunds' names tool 'refnud'" in message
    assert "did you mean 'refund'?" in message
    assert "check_policy_names=False" in message


def test_misspelt_arguments_fields_and_fallbacks_are_refused() -> None:
    problems = unknown_names(YamlPolicy.from_string(WRONG_FIELD, "p.yaml"),
                             [t.spec for t in TOOLS])
    assert len(problems) == 3
    assert "names argument 'amuont', which refund does not take (did you mean 'amount'?)" \
        in problems[0]
    assert "'card_numbr'" in problems[1] and "'card_number'" in problems[1]
    assert "names tool 'cheap_serach'" in problems[2] and "'cheap_search'" in problems[2]


def test_policies_inside_combinators_are_checked_too() -> None:
    inner = YamlPolicy.from_string(MISSPELT, "refunds.yaml")
    with pytest.raises(PolicyNameError, match="refnud"):
        _agent(DenyOverrides(contain_untrusted, inner))


def test_a_shared_policy_may_opt_out_and_a_correct_one_passes() -> None:
    shared = _agent(YamlPolicy.from_string(MISSPELT, "shared.yaml"), check_policy_names=False)
    assert shared.run("refund").stop_reason is StopReason.FINISHED
    agent = _agent(YamlPolicy.from_string(GOOD, "refunds.yaml"))
    assert unknown_names(agent.policy, agent.registry.specs) == []


def test_lint_with_tools_does_the_same_check(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "refunds.yaml"
    policy.write_text(MISSPELT)
    module = tmp_path / "shop_tools.py"
    module.write_text("from tether import tool\n\n"
                      "@tool\ndef refund(order: str, amount: int) -> str:\n"
                      "    \"\"\"Refund.\"\"\"\n    return 'ok'\n\nTOOLS = [refund]\n")
    assert main(["policy", "lint", str(policy)]) == 0  # without --tools: a valid file
    capsys.readouterr()
    assert main(["policy", "lint", str(policy), "--tools", f"{module}:TOOLS"]) == 1
    err = capsys.readouterr().err
    assert "names tool 'refnud'" in err and "did you mean 'refund'?" in err
    policy.write_text(GOOD)
    assert main(["policy", "lint", str(policy), "--tools", f"{module}:TOOLS"]) == 0
    assert "every name found among 1 tools" in capsys.readouterr().out
    assert main(["policy", "lint", str(policy), "--tools", f"{module}:MISSING"]) == 2


async def test_a_gateway_refuses_a_misspelt_policy_too() -> None:
    """A Gateway built in Python (tools called by no model) is an entry point like Agent."""
    from tether.runtime.chokepoint.gateway import Gateway

    with pytest.raises(PolicyNameError) as refused:
        Gateway(TOOLS, policy=YamlPolicy.from_string(MISSPELT, "refunds.yaml"), client="ide",
                roles=["intern"])
    assert "names tool 'refnud', which none of the gateway's tools is (did you mean " \
        "'refund'?)" in str(refused.value)
    assert "Gateway(..., check_policy_names=False)" in str(refused.value)
    shared = Gateway(TOOLS, policy=YamlPolicy.from_string(MISSPELT, "shared.yaml"),
                     client="ide", check_policy_names=False)
    assert (await shared.call("search", {"query": "x"})).status == "ok"
    shared.close()


def test_a_names_guard_refuses_while_the_tools_do_not_match_and_recovers() -> None:
    """The proxy's fail-closed wrapper: while its last check failed every call is denied with
    the rules named; when the tools match again the policy decides again."""
    from tether.policy.base import Action, Context, Resource, Subject
    from tether.policy.names import NamesGuard

    guard = NamesGuard(YamlPolicy.from_string(GOOD, "refunds.yaml"), whose="the upstream's tools",
                       advice="Restart it.")
    intern = Subject("u", None, frozenset({"intern"}), "t")
    search_call = (intern, Action("search", {"query": "x"}), Resource("search"),
                   Context("s", 1, {}, {}))
    specs = [t.spec for t in TOOLS]
    assert not guard.check(specs) and guard.evaluate(*search_call).allowed
    assert guard.check([t.spec for t in TOOLS if t.name != "refund"])  # refund went away
    refused = guard.evaluate(*search_call)
    assert not refused.allowed and refused.policy_id == "tether:policy-names"
    assert "names tool 'refund', which none of the upstream's tools is" in refused.reason
    assert refused.reason.endswith("Restart it.")
    assert not guard.check([t.spec for t in TOOLS if t.name != "refund"])  # no change
    assert guard.check(specs) and guard.problems == ()  # back: it decides again
    assert guard.evaluate(*search_call).allowed and guard.policy_id == "refunds"
