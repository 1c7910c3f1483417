"""Containment rules for an attacker who has read the policy: what provenance alone lets pass.

Why: ``contain_untrusted_flows`` asks where each *party* came from, and ``scope_to_request``
whether the request asks for the *kind* of action. An injection that knows both asks for the
user's own side effect once more — the same payment again, the same message to the same
colleague — with every value innocent and every word asked for. What tells such a call apart is
the session's history: the side effects it already made (``Context.effects``, folded from the
journal, so a resumed run, a rerun and a what-if see the same history).

Decision: ``NoUnaskedRepeats`` makes a side effect that repeats one already made — the same
tool to the same parties (for a tool that declares none, the same arguments) — wait for a
person, unless the request asks for the repetition ("twice", "again", "three times"); an
``idempotent`` tool repeats harmlessly and is let be. It only answers ALLOW or
REQUIRE_APPROVAL; stack it with the others (``contained`` in ``tether.evals.injection``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from tether.policy.base import Action, Context, Decision, Effect, MadeEffect, Resource, Subject
from tether.tokens import tokens

COUNT_WORDS = {"twice": 2, "again": 2, "thrice": 3}
NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
           "nine": 9, "ten": 10}
TIMES = re.compile(r"\b(\d+|" + "|".join(NUMBERS) + r")\s+times\b", re.IGNORECASE)


def asked_count(request: str) -> int:
    """How many times the request asks for an action at most: 1 unless it says so ("twice",
    "again", "three times", "5 times")."""
    words = set(tokens(request))
    counts = [n for word, n in COUNT_WORDS.items() if word in words]
    counts += [int(m) if m.isdigit() else NUMBERS[m.lower()] for m in TIMES.findall(request)]
    return max(counts, default=1)


def _same(value: Any) -> str:
    """A value as compared for sameness: case and surrounding space aside, lists unordered."""
    if isinstance(value, str):
        return value.strip().casefold()
    if isinstance(value, list | tuple):
        return json.dumps(sorted(_same(v) for v in value))
    return json.dumps(value, sort_keys=True, default=str)


def repeats(resource: Resource, arguments: Mapping[str, Any],
            effects: tuple[MadeEffect, ...]) -> list[MadeEffect]:
    """The side effects already made that this call would repeat: the same tool to the same
    parties, or, for a tool that declares none, with the same arguments."""
    def target(made: Mapping[str, Any]) -> dict[str, str]:
        named = resource.parties or made.keys() | arguments.keys()
        return {name: _same(made.get(name)) for name in named}

    wanted = target(arguments)
    return [e for e in effects if e.tool == resource.name and target(e.arguments) == wanted]


class NoUnaskedRepeats:
    """A side effect that repeats one the session already made waits for a person, unless the
    request asks for it that many times (see the module's docstring)."""

    __slots__ = ("_first", "policy_id")
    inline = True  # decides from its arguments and the journaled history alone: no I/O

    def __init__(self, policy_id: str = "no-unasked-repeats") -> None:
        self.policy_id = policy_id
        self._first = Decision(Effect.ALLOW, "not a repeat of a side effect already made",
                               policy_id)

    def __repr__(self) -> str:
        return f"NoUnaskedRepeats(policy_id={self.policy_id!r})"

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if not resource.side_effect or resource.idempotent or not context.effects:
            return self._first
        earlier = repeats(resource, action.arguments, context.effects)
        if not earlier:
            return self._first
        asked = asked_count(context.request)
        ids = ", ".join(e.call_id for e in earlier)
        if len(earlier) < asked:
            return Decision(Effect.ALLOW, f"the request asks for this {asked} times; it ran "
                            f"{len(earlier)} ({ids})", self.policy_id)
        target = (f"to the same {', '.join(sorted(resource.parties))}" if resource.parties
                  else "with the same arguments")
        return Decision(Effect.REQUIRE_APPROVAL,
                        f"'{action.tool}' already ran {target} in this session ({ids}) and the "
                        "request does not ask for it again; a person must approve this repeat",
                        self.policy_id)


no_unasked_repeats = NoUnaskedRepeats()
