"""Nothing loads silently wrong: every invalid policy is a PolicyLoadError that points and advises.

Each case is a whole file (so line numbers are meaningful) and the fragments its message must
contain: the file, the line, the rule (index and id) and the key, plus what to do about it.
"""

from __future__ import annotations

import pytest

from tether.policy import PolicyLoadError, YamlPolicy

HEAD = "version: 1\npolicy_id: p\nrules:\n"


def rule(body: str, id: str = "r") -> str:
    """A file whose single rule (on line 4) is ``- id: <id>`` followed by ``body`` lines."""
    lines = "".join(f"    {line}\n" for line in body.strip("\n").splitlines())
    return f"{HEAD}  - id: {id}\n{lines}"


def load_error(text: str) -> str:
    with pytest.raises(PolicyLoadError) as info:
        YamlPolicy.from_string(text, source="pol.yaml")
    return str(info.value)


def expect(text: str, *fragments: str) -> None:
    message = load_error(text)
    assert message.startswith("pol.yaml"), message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


# -- the file as a whole -------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "   \n", "# only a comment\n"])
def test_an_empty_file_is_an_error(text: str) -> None:
    expect(text, "pol.yaml: the policy file is empty", "version: 1")


def test_malformed_yaml_reports_the_line() -> None:
    expect("version: 1\npolicy_id: p\nrules: [\n  - id: x\n", "not valid YAML", "line ")
    expect("version: 1\npolicy_id: 'p\n", "line 2", "not valid YAML", "quotes")
    expect("version: 1\n---\nversion: 1\n", "not valid YAML")  # two documents


@pytest.mark.parametrize(("text", "fragments"), [
    ("- version: 1\n", ["expected a policy mapping", "got a list"]),
    ("version: 1\npolcy_id: p\nrules: []\n", ["line 2", "key 'polcy_id'", "unknown key",
                                              "allowed keys here: version, policy_id"]),
    ("policy_id: p\nrules: []\n", ["the required key 'version' is missing"]),
    ("version: 1\nrules: []\n", ["'policy_id' is missing"]),
    ("version: 1\npolicy_id: p\n", ["'rules' is missing"]),
    ("version: 2\npolicy_id: p\nrules: []\n", ["key 'version'", "unsupported policy version 2",
                                               "write 'version: 1'"]),
    ("version: '1'\npolicy_id: p\nrules: []\n", ["unsupported policy version '1'"]),
    ("version: true\npolicy_id: p\nrules: []\n", ["unsupported policy version True"]),
    ("version: 1.0\npolicy_id: p\nrules: []\n", ["unsupported policy version 1.0"]),
    ("version: 1\npolicy_id: ''\nrules: []\n", ["key 'policy_id'", "expected a name"]),
    ("version: 1\npolicy_id: my policy\nrules: []\n", ["'my policy' is not a valid id"]),
    ("version: 1\npolicy_id: a:b\nrules: []\n", ["not a valid id", "letters, digits"]),
    ("version: 1\npolicy_id: p\ndefault: maybe\nrules: []\n",
     ["line 3", "key 'default'", "expected one of deny, allow, require_approval"]),
    ("version: 1\npolicy_id: p\ndefault: mask\nrules: []\n", ["expected one of deny"]),
    ("version: 1\npolicy_id: p\ndefault: no\nrules: []\n", ["a bool; YAML reads unquoted"]),
    ("version: 1\npolicy_id: p\nrules: {id: x}\n", ["key 'rules'", "expected a list of rules"]),
    ("version: 1\npolicy_id: p\ndescription: 3\nrules: []\n", ["key 'description'"]),
    ("version: 1\npolicy_id: p\nversion: 1\nrules: []\n",
     ["line 3", "the key 'version' appears twice", "first on line 1"]),
    ("version: 1\npolicy_id: p\n1: x\nrules: []\n", ["line 3", "keys must be strings"]),
])
def test_top_level_errors(text: str, fragments: list[str]) -> None:
    expect(text, *fragments)


# -- rules ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "fragments"), [
    (HEAD + "  - just a string\n", ["line 4", "rules[0]", "expected a rule mapping"]),
    (HEAD + "  - effect: deny\n", ["rules[0]", "the required key 'id' is missing"]),
    (rule("when: {tool: x}"), ["rules[0] (id 'r')", "required key 'effect' is missing"]),
    (rule("effect: deny\nefect: allow"),
     ["line 6", "rules[0] (id 'r')", "key 'efect'", "unknown key", "allowed keys here: id"]),
    (rule("effect: permit"), ["line 5", "rules[0] (id 'r')", "key 'effect'",
                              "expected one of allow, deny, require_approval"]),
    (rule("effect: no"), ["key 'effect'", "false (a bool; YAML reads unquoted"]),
    (rule("effect: deny\npriority: high"), ["key 'priority'", "expected a whole number"]),
    (rule("effect: deny\npriority: true"), ["key 'priority'", "true (a bool"]),
    (rule("effect: deny\npriority: 1.5"), ["key 'priority'", "the number 1.5"]),
    (rule("effect: deny\nreason: 5"), ["key 'reason'", "expected a non-empty string"]),
    (rule("effect: deny", id="default"), ["key 'id'", "'default' is reserved"]),
    (rule("effect: deny", id="'has space'"), ["key 'id'", "not a valid id"]),
    (rule("effect: deny", id="7"), ["key 'id'", "the integer 7", "quote it"]),
    (rule("effect: deny") + "  - id: r\n    effect: allow\n",
     ["line 6", "rules[1] (id 'r')", "the rule id 'r' is already used by rules[0]"]),
])
def test_rule_errors(text: str, fragments: list[str]) -> None:
    expect(text, *fragments)


@pytest.mark.parametrize(("body", "fragments"), [
    ("effect: partial_allow", ["key 'effect'", "a partial_allow rule needs 'fields'"]),
    ("effect: mask", ["a mask rule needs 'fields'", "fields: [card_number]"]),
    ("effect: mask\nfields: []", ["key 'fields'", "got an empty list"]),
    ("effect: mask\nfields: card", ["key 'fields'", "expected a list of strings"]),
    ("effect: mask\nfields: [a, a]", ["key 'fields[1]'", "'a' is listed twice"]),
    ("effect: mask\nfields: [a, 3]", ["key 'fields[1]'", "the integer 3"]),
    ("effect: mask\nfields: [a]\nmask_in: [disk]",
     ["key 'mask_in[0]'", "expected one of input, output, journal"]),
    ("effect: degrade", ["a degrade rule needs 'fallback'", "fallback: cheap_search"]),
    ("effect: degrade\nfallback: [a]", ["key 'fallback'", "expected a tool name"]),
    ("effect: degrade\nfallback: ' x'", ["key 'fallback'", "leading or trailing spaces"]),
    ("effect: degrade\nfallback: search\nwhen: {tool: {in: [search, web]}}",
     ["key 'fallback'", "is one of the tools this rule degrades"]),
    ("effect: deny\nfields: [a]", ["key 'fields'", "no meaning for effect deny",
                                   "only partial_allow, mask and require_approval rules take it"]),
    ("effect: partial_allow\nfields: [a]\nmask_in: [journal]",
     ["key 'mask_in'", "only mask rules take it"]),
    ("effect: allow\nfallback: x", ["key 'fallback'", "only degrade rules take it"]),
])
def test_effect_specific_keys(body: str, fragments: list[str]) -> None:
    expect(rule(body), "rules[0] (id 'r')", *fragments)


# -- conditions ----------------------------------------------------------------------------

@pytest.mark.parametrize(("when", "fragments"), [
    ("{}", ["key 'when'", "the condition is empty", "leave out 'when'"]),
    ("[tool: x]", ["key 'when'", "expected a condition mapping"]),
    ("{tools: x}", ["key 'when.tools'", "unknown key", "allowed keys here: tool, roles"]),
    ("{tool: 5}", ["key 'when.tool'", "expected a name or {in: [...]}"]),
    ("{tool: {in: []}}", ["key 'when.tool.in'", "empty list"]),
    ("{tool: {not_in: [a]}}", ["key 'when.tool.not_in'", "unknown key"]),
    ("{tool: {}}", ["key 'when.tool'", "the mapping is empty"]),
    ("{roles: {any: [a]}}", ["key 'when.roles.any'", "allowed keys here: in, not_in"]),
    ("{roles: {in: [a, a]}}", ["key 'when.roles.in[1]'", "listed twice"]),
    ("{tenant: {not_in: [a]}}", ["key 'when.tenant.not_in'"]),
    ("{user: [u1]}", ["key 'when.user'", "got a list"]),
    ("{args: {amount: {gte: 5}}}",
     ["key 'when.args.amount.gte'", "unknown key", "allowed keys here: gt, lt, ge, le, eq"]),
    ("{args: {amount: {gt: '100'}}}", ["key 'when.args.amount.gt'", "expected a number",
                                       "the string '100'", "no quotes"]),
    ("{args: {amount: {gt: true}}}", ["key 'when.args.amount.gt'", "true (a bool"]),
    ("{args: {amount: {gt: .nan}}}", ["key 'when.args.amount.gt'", "expected a finite number"]),
    ("{args: {amount: {lt: -.inf}}}", ["key 'when.args.amount.lt'", "finite"]),
    ("{args: {amount: {}}}", ["key 'when.args.amount'", "no comparison given"]),
    ("{args: {amount: 5}}", ["key 'when.args.amount'", "expected comparisons such as"]),
    ("{args: {}}", ["key 'when.args'", "expected argument comparisons"]),
    ("{args: {'a..b': {gt: 1}}}", ["key 'when.args.a..b'", "not a valid path"]),
    ("{resource: {risk: extreme}}",
     ["key 'when.resource.risk'", "expected one of low, medium, high, critical"]),
    ("{resource: {risk: {in: [high, huge]}}}", ["key 'when.resource.risk.in[1]'"]),
    ("{resource: {output_trust: sketchy}}", ["expected one of trusted, untrusted"]),
    ("{resource: {side_effect: 'yes'}}", ["key 'when.resource.side_effect'",
                                          "expected true or false"]),
    ("{resource: {tags: {some: [a]}}}", ["key 'when.resource.tags.some'"]),
    ("{resource: {tags: [a]}}", ["key 'when.resource.tags'", "{any: [...]} or {all: [...]}"]),
    ("{resource: {name: x}}", ["key 'when.resource.name'", "unknown key"]),
    ("{resource: {}}", ["key 'when.resource'", "is empty"]),
    ("{context: {tainted: 1}}", ["key 'when.context.tainted'", "expected true or false"]),
    ("{context: {step: 3}}", ["key 'when.context.step'", "expected comparisons"]),
    ("{context: {step: {gt: x}}}", ["key 'when.context.step.gt'", "expected a number"]),
    ("{context: {spend: {cost: {gt: 1}}}}",
     ["key 'when.context.spend.cost'", "allowed keys here: tokens, cost_usd"]),
    ("{context: {budget_left: {}}}", ["key 'when.context.budget_left'", "is empty"]),
    ("{context: {extra: {channel: [web]}}}",
     ["key 'when.context.extra.channel'", "expected a string, number or bool"]),
    ("{context: {extra: {n: .nan}}}", ["key 'when.context.extra.n'", "finite"]),
    ("{context: {extra: {}}}", ["key 'when.context.extra'", "expected extra values"]),
    ("{context: {time: 1}}", ["key 'when.context.time'", "unknown key"]),
    ("{all: []}", ["key 'when.all'", "got an empty list"]),
    ("{any: {tool: x}}", ["key 'when.any'", "expected a list of conditions"]),
    ("{not: [{tool: x}]}", ["key 'when.not'", "expected a condition mapping"]),
    ("{all: [{tool: x}, {any: [{args: {n: {gt: true}}}]}]}",
     ["key 'when.all[1].any[0].args.n.gt'", "true (a bool"]),
])
def test_condition_errors_name_the_exact_key(when: str, fragments: list[str]) -> None:
    expect(rule(f"effect: deny\nwhen: {when}"), "rules[0] (id 'r')", *fragments)


def test_the_line_points_into_a_block_style_rule() -> None:
    text = rule("""
effect: deny
when:
  all:
    - tool: refund
    - args:
        amount: {gt: yes}
""", id="interns")
    expect(text, "pol.yaml, line 10, rules[0] (id 'interns'), key 'when.all[1].args.amount.gt'",
           "true (a bool")


def test_duplicate_keys_inside_a_rule_are_errors() -> None:
    expect(rule("effect: allow\neffect: deny"), "line 6", "the key 'effect' appears twice",
           "first on line 5")
