"""YAML policies: permission rules a reviewer can read, checked at load, decided in microseconds.

Why: most permission rules are data — "interns cannot refund more than 100", "mask the card
number in the journal" — and should live in a file that security reviews, not in code. The
decisions this engine embodies:

- **Nothing loads silently wrong.** Unknown keys, wrong types, duplicate keys or rule ids, NaN
  and infinities, bools where numbers are compared, unknown effects or operators, ``fields`` on
  an effect that takes none: each is a ``PolicyLoadError`` naming file, line, rule and key.
- **Deny wins, then priority.** Among the rules that match, the highest-priority DENY decides;
  if none denies, the highest-priority match decides (ties: the earlier rule in the file); if no
  rule matches, ``default`` decides.
- **Fail closed on unknowns.** Conditions are three-valued (see ``yaml_conditions``). A rule
  whose condition is *unknown* — e.g. it compares an argument the call did not send — matches if
  its effect is ``deny`` or ``require_approval`` and never if it would grant (``allow``,
  ``partial_allow``, ``mask``, ``degrade``).
- **Compiled once.** Rules become closures at load and are indexed by the tools they can match,
  so a decision over a 50-rule policy is a handful of closure calls.

File format::

    version: 1                 # required; the only version is 1
    policy_id: expenses        # required; decisions say "expenses:<rule id>"
    default: deny              # deny (when omitted) | allow | require_approval
    description: free text     # optional
    rules:                     # required; may be empty
      - id: interns-no-refunds # required, unique; letters, digits, - _ .
        priority: 100          # optional integer, default 0; higher is considered first
        effect: deny           # allow | deny | require_approval | partial_allow | mask | degrade
        reason: interns cannot refund   # optional; shown to the model and journaled
        when:                  # optional (omitted: every call); see yaml_conditions for keys
          all:
            - tool: refund
            - roles: {in: [intern]}
            - args: {amount: {gt: 100}}
      - id: mask-card
        effect: mask
        fields: [card_number]  # partial_allow: fields that pass; mask: fields redacted;
                               # require_approval (optional): fields hidden from approvers
        mask_in: [journal]     # mask only: input / output / journal (default: all three)
        when: {tool: pay}
      - id: cheap-search
        effect: degrade
        fallback: cheap_search # degrade only: the tool that runs instead (through the gate)
        when: {resource: {tags: {any: [expensive]}}}
    quotas:                    # optional: limits over many sessions (see yaml_quotas)
      - {id: refunds, tool: refund, limit: 20, window: 1h, per: tenant}

A decision's ``policy_id`` is ``"<policy_id>:<rule id>"`` or ``"<policy_id>:default"``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from tether.policy.base import Action, Context, Decision, Effect, Resource, Subject
from tether.policy.quotas import Quota
from tether.policy.yaml_conditions import Condition, Test, compile_condition
from tether.policy.yaml_quotas import read_quotas
from tether.policy.yaml_source import Node, PolicyLoadError, parse_yaml

VERSION = 1
MASK_PLACES = ("input", "output", "journal")
DEFAULTS = (Effect.DENY, Effect.ALLOW, Effect.REQUIRE_APPROVAL)
#: Effects a rule may have even when its condition is unknown: they restrict, never grant.
RESTRICTING = frozenset({Effect.DENY, Effect.REQUIRE_APPROVAL})
_TOP_KEYS = ("version", "policy_id", "default", "description", "rules", "quotas")
_RULE_KEYS = ("id", "priority", "effect", "reason", "when", "fields", "mask_in", "fallback")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
_ALWAYS = Condition(lambda s, a, r, c: True, None)
_UNKNOWN_NOTE = (" (a condition could not be evaluated — e.g. a missing or non-numeric "
                 "argument — so this restricting rule applied; fail closed)")


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled rule: what it decides, and the test that says whether it matches."""

    id: str
    index: int  # position in the file
    priority: int
    decision: Decision
    unknown_decision: Decision  # what it decides when its condition is unknown (restricting)
    test: Test
    tools: frozenset[str] | None  # the tools it can match; None: any tool
    names: frozenset[str] = frozenset()  # tool names it mentions (conditions and fallback)
    args: frozenset[str] = frozenset()  # argument names it mentions (conditions and fields)
    origins: bool = False  # it reads where arguments came from (``args_from``)

    @property
    def effect(self) -> Effect:
        return self.decision.effect


# A rule as the evaluation loop sees it: (test, decision, decision-when-unknown or None).
_Entry = tuple[Test, Decision, "Decision | None"]
_Deny = tuple[Test, Decision, Decision]


class YamlPolicy:
    """A policy loaded from YAML; ``evaluate`` is the Policy protocol."""

    __slots__ = ("_default", "_deny_rules", "_index", "_others", "default", "description",
                 "policy_id", "quotas", "rules", "source")
    inline = True  # rules over the request alone: no I/O (see tether.policy.deadline)

    def __init__(self, policy_id: str, default: Effect, rules: tuple[Rule, ...], source: str,
                 description: str = "", quotas: tuple[Quota, ...] = ()) -> None:
        self.policy_id = policy_id
        self.quotas = quotas  # tether.policy.yaml_quotas: counted by the runtime, not decided
        self.default = default
        self.rules = rules
        self.source = source
        self.description = description
        self._default = Decision(default, f"no rule in policy '{policy_id}' matched; default "
                                 f"{default.value}", f"{policy_id}:default")
        ordered = sorted(rules, key=lambda rule: (-rule.priority, rule.index))

        def entries(tool: str | None) -> tuple[tuple[_Deny, ...], tuple[_Entry, ...]]:
            chosen = [r for r in ordered
                      if r.tools is None or (tool is not None and tool in r.tools)]
            denies = tuple((r.test, r.decision, r.unknown_decision) for r in chosen
                           if r.effect is Effect.DENY)
            return denies, tuple(_entry(r) for r in chosen if r.effect is not Effect.DENY)

        named = {tool for rule in rules if rule.tools is not None for tool in rule.tools}
        self._index = {tool: entries(tool) for tool in named}
        self._others = entries(None)  # for tools no rule names
        self._deny_rules = tuple(_DenyRule(r) for r in ordered if r.effect is Effect.DENY)

    @classmethod
    def from_string(cls, text: str, source: str = "<string>") -> YamlPolicy:
        """Parse and validate a policy; raises PolicyLoadError saying where and what to fix."""
        return _build(parse_yaml(text, source), source)

    def __repr__(self) -> str:
        return (f"YamlPolicy(policy_id={self.policy_id!r}, rules={len(self.rules)}, "
                f"default={self.default.value!r}, source={self.source!r})")

    @property
    def reads_provenance(self) -> bool:
        """Whether a rule decides on where arguments came from (``args_from``): then results
        inherit the distrust of the calls that asked for them (``tether.policy.reads``)."""
        return any(rule.origins for rule in self.rules)

    @property
    def deny_parts(self) -> tuple[object, ...]:
        """Its deny rules, each a policy of its own: denies are weighed first, so one that
        matches (or is unknown) makes the whole deny (``tether.policy.base.DenyParts``)."""
        return self._deny_rules

    def evaluate(
        self, subject: Subject, action: Action, resource: Resource, context: Context
    ) -> Decision:
        denies, others = self._index.get(action.tool, self._others)
        for test, decision, unknown in denies:
            matched = test(subject, action, resource, context)
            if matched:
                return decision
            if matched is None:
                return unknown
        for test, decision, maybe in others:
            matched = test(subject, action, resource, context)
            if matched:
                return decision
            if matched is None and maybe is not None:
                return maybe
        return self._default


class _DenyRule:
    """One deny rule asked alone: its deny where it matches or is unknown, else abstains."""

    __slots__ = ("rule",)
    inline = True

    def __init__(self, rule: Rule) -> None:
        self.rule = rule

    def __repr__(self) -> str:
        return f"DenyRule({self.rule.id!r})"

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision | None:
        rule = self.rule
        matched = rule.test(subject, action, resource, context)
        if matched is None:
            return rule.unknown_decision
        return rule.decision if matched else None


def _entry(rule: Rule) -> _Entry:
    unknown = rule.unknown_decision if rule.effect in RESTRICTING else None
    return rule.test, rule.decision, unknown


def load_policy(path: str | os.PathLike[str]) -> YamlPolicy:
    """Load a YAML policy file; raises PolicyLoadError if it is unreadable or invalid."""
    source = os.fspath(path)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyLoadError(f"{source}: cannot read the policy file ({exc.strerror or exc}); "
                              "check the path and its permissions") from exc
    except UnicodeDecodeError as exc:
        raise PolicyLoadError(f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                              "save the policy as UTF-8") from exc
    return YamlPolicy.from_string(text, source)


# -- validation and compilation --------------------------------------------------------------

def _build(document: object, source: str) -> YamlPolicy:
    if document is None:
        raise PolicyLoadError(f"{source}: the policy file is empty; start it with 'version: 1', "
                              "'policy_id: <name>' and 'rules:'")
    top = Node.root(document, source).mapping(
        _TOP_KEYS, required=("version", "policy_id", "rules"),
        what="a policy mapping with version, policy_id, default and rules")
    version = top["version"]
    if type(version.value) is not int or version.value != VERSION:
        version.fail(f"unsupported policy version {version.value!r}",
                     f"this tether reads version {VERSION}; write 'version: {VERSION}'")
    policy_id = _identifier(top["policy_id"])
    default = Effect.DENY
    if "default" in top:
        default = Effect(top["default"].choice(e.value for e in DEFAULTS))
    description = top["description"].text() if "description" in top else ""
    quotas = read_quotas(top["quotas"]) if "quotas" in top else ()
    rules_node = top["rules"]
    if rules_node.value is None or rules_node.value == []:
        return YamlPolicy(policy_id, default, (), source, description, quotas)
    rules: list[Rule] = []
    seen: dict[str, int] = {}
    for index, node in enumerate(rules_node.items("a list of rules")):
        rule = _rule(node, index, policy_id)
        if rule.id in seen:
            node.within(f"rules[{index}] (id {rule.id!r})").fail(
                f"the rule id {rule.id!r} is already used by rules[{seen[rule.id]}]",
                "give every rule its own id")
        seen[rule.id] = index
        rules.append(rule)
    return YamlPolicy(policy_id, default, tuple(rules), source, description, quotas)


def _identifier(node: Node) -> str:
    value = node.text("a name")
    if not _ID.fullmatch(value):
        node.fail(f"{value!r} is not a valid id", "use letters, digits, '-', '_' and '.', "
                  "starting with a letter or digit")
    return value


def _rule(node: Node, index: int, policy_id: str) -> Rule:
    scope = f"rules[{index}]"
    if isinstance(node.value, dict) and isinstance(node.value.get("id"), str):
        scope += f" (id {node.value['id']!r})"
    keys = node.within(scope).mapping(_RULE_KEYS, required=("id", "effect"),
                                      what="a rule mapping with id, effect and when")
    rule_id = _identifier(keys["id"])
    if rule_id == "default":
        keys["id"].fail("the rule id 'default' is reserved",
                        f"'{policy_id}:default' names the policy's default decision; rename it")
    effect = Effect(keys["effect"].choice(e.value for e in Effect))
    priority = keys["priority"].integer() if "priority" in keys else 0
    reason = keys["reason"].text() if "reason" in keys else f"rule '{rule_id}' ({effect.value})"
    condition = compile_condition(keys["when"]) if "when" in keys else _ALWAYS
    fields, mask_in, fallback = _extras(keys, effect, condition)
    decision = Decision(effect, reason, f"{policy_id}:{rule_id}", fields, mask_in, fallback)
    unknown = Decision(effect, reason + _UNKNOWN_NOTE, decision.policy_id)
    names = condition.names | ({fallback} if fallback else set())
    return Rule(rule_id, index, priority, decision, unknown, condition.test, condition.tools,
                names, condition.args | set(fields), condition.origins)


def _extras(keys: dict[str, Node], effect: Effect,
            condition: Condition) -> tuple[tuple[str, ...], tuple[str, ...], str | None]:
    """``fields``, ``mask_in``, ``fallback``: required where the effect takes them, else errors."""
    takes = {"fields": effect in (Effect.PARTIAL_ALLOW, Effect.MASK, Effect.REQUIRE_APPROVAL),
             "mask_in": effect is Effect.MASK, "fallback": effect is Effect.DEGRADE}
    for key, allowed in takes.items():
        if key in keys and not allowed:
            users = {"fields": "partial_allow, mask and require_approval", "mask_in": "mask",
                     "fallback": "degrade"}[key]
            keys[key].fail(f"'{key}' has no meaning for effect {effect.value}",
                           f"only {users} rules take it; remove it or change the effect")
    anchor = keys["effect"]
    fields: tuple[str, ...] = ()
    if takes["fields"]:
        # require_approval: optional fields hidden from approvers and the journal
        if "fields" not in keys and effect is not Effect.REQUIRE_APPROVAL:
            anchor.fail(f"a {effect.value} rule needs 'fields'",
                        "list the argument fields, e.g. fields: [card_number]")
        fields = keys["fields"].texts() if "fields" in keys else ()
    mask_in = keys["mask_in"].texts(MASK_PLACES) if "mask_in" in keys else ()
    if effect is Effect.MASK and not mask_in:
        mask_in = MASK_PLACES
    fallback = None
    if takes["fallback"]:
        if "fallback" not in keys:
            anchor.fail("a degrade rule needs 'fallback'",
                        "name the tool to run instead, e.g. fallback: cheap_search")
        fallback = _identifier_like(keys["fallback"])
        if condition.tools is not None and fallback in condition.tools:
            keys["fallback"].fail(
                f"the fallback {fallback!r} is one of the tools this rule degrades",
                "the fallback call goes through the policy too and would be degraded again; "
                "name a different tool")
    return fields, mask_in, fallback


def _identifier_like(node: Node) -> str:
    value = node.text("a tool name")
    if value != value.strip():
        node.fail(f"{value!r} has leading or trailing spaces", "write the tool name exactly")
    return value
