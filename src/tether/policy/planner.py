"""A model's reading of the request, checked against it: what the planner may add to the plan.

Why: the rules of ``tether.policy.plan`` read a request by its words, so a paraphrase they have
no intent for ("settle up with Bob for last night's dinner") asks for nothing, and the payment
the user wanted waits for a person. A model reads paraphrases well; but what it answers must not
become a privilege the request never gave — a tool that changes nothing it was not asked to, a
value nobody typed, a negated clause read as an ask.

Decision: the model only *points*: for each side effect it says the request asks for, it names
the tool and copies the clause that asks. ``validated`` keeps an ask only when its tool is one a
request can ask for (side-effecting, declaring intents: ``plan.askable``), and the words it
copied are in the request (whitespace and case aside) within clauses the rules read as asking —
none with a negation, a reminder or the user's own future action (``plan.cue_in``): there the
rules' fail-closed reading is the only one. The entry keeps the request's own clauses the copy
spans, whole, so the parties its clause names bind as they bind a rules entry (copying "settle
up with Bob" out of "settle up with Bob, IBAN X, ..." still binds the recipient to X), and the
model cannot add a value: the plan's named values are the rules' alone, and an entry's count
is its clause's own (``asked_count``), so a model's reading never lets a side effect run more
often than the words say. The merged plan is the rules' entries, then the kept
ones (marked ``by="model"``), with the rules' aside and named values: it is never narrower than
the rules' plan. An answer that is not the JSON asked for leaves the rules' plan, with why.

Pure: the prompt, the answer's schema and the check; the governed call is
``tether.runtime.lifecycle.planning``.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tether.policy.base import Resource
from tether.policy.plan import (
    PlanEntry,
    RequestPlan,
    askable,
    asked_count,
    clauses,
    cue_in,
)
from tether.tokens import tokens

MAX_ASKS = 20  # asks past it are not read (and are listed as rejected)

INSTRUCTIONS = (
    "You read a user's request to an assistant, before the assistant does anything, and list "
    "the actions with side effects (sending, paying, booking, changing or deleting something) "
    "that the request asks the assistant to take. Only the tools listed can be named. For each "
    "action, copy the words of the request that ask for it exactly as written (one sentence or "
    "part of one). These are NOT asks: what the request says not to do ('don't pay Bob'), what "
    "the user wants to be reminded of ('remind me to book a hotel' asks for a reminder only), "
    "and what the user says they will do themselves ('I'll pay later'). Do not guess: list an "
    "action only when the request asks for it. Answer with JSON only, no other text: "
    '{"asks": [{"tool": "<tool name>", "clause": "<words copied from the request>"}]}, or '
    '{"asks": []} when it asks for no such action.')


def answer_schema(tools: Sequence[str]) -> dict[str, Any]:
    """The JSON schema the planner answers in (sent natively where the model supports it)."""
    return {
        "title": "RequestAsks", "type": "object", "additionalProperties": False,
        "required": ["asks"],
        "properties": {"asks": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["tool", "clause"],
            "properties": {"tool": {"type": "string", "enum": list(tools)},
                           "clause": {"type": "string"}}}}}}


def prompt(request: str, resources: Iterable[Resource],
           descriptions: Mapping[str, str]) -> tuple[str, str]:
    """The planner's system prompt and user message: the instructions, then the tools a
    request can ask for (each with its description and the words that ask for it) and the
    request. Nothing else: no tool result, no earlier turn."""
    lines = []
    for r in askable(resources):
        about = " ".join(descriptions.get(r.name, "").split()) or "(no description)"
        words = ", ".join(sorted(i.replace("+", " ") for i in r.intents))
        lines.append(f"- {r.name}: {about} (words that ask for it: {words})")
    tools = "\n".join(lines) or "(none)"
    return INSTRUCTIONS, (f"Tools with side effects:\n{tools}\n\nThe request:\n<<<\n{request}"
                          "\n>>>")


def parse(raw: str) -> list[Any] | str:
    """The asks of a planner's answer, or why it has none that can be read."""
    text = raw.strip()
    if text.startswith("```"):  # a fenced block: the JSON inside it
        text = text.strip("`").removeprefix("json").strip()
    try:
        answer = json.loads(text)
    except (ValueError, RecursionError):
        return f"the planner's answer is not JSON ({_cut(raw)!r})"
    if not isinstance(answer, dict) or not isinstance(answer.get("asks"), list):
        return "the planner's answer is not {\"asks\": [...]}"
    asks: list[Any] = answer["asks"]
    return asks


def validated(raw: str, request: str, resources: Iterable[Resource],
              rules: RequestPlan) -> tuple[RequestPlan, list[str]]:
    """The rules' plan widened by the planner's answer ``raw``, and why each ask that was not
    kept was rejected (see the module's docstring)."""
    asks = parse(raw)
    if isinstance(asks, str):
        return rules, [asks]
    tools = {r.name for r in askable(resources)}
    parts = clauses(request)
    cues = [cue_in(p) for p in parts]
    rejected: list[str] = []
    kept: list[PlanEntry] = []
    for n, ask in enumerate(asks[:MAX_ASKS], 1):
        entry = _entry(ask, tools, parts, cues)
        if isinstance(entry, str):
            rejected.append(f"ask {n}: {entry}")
        else:
            kept.append(entry)
    if len(asks) > MAX_ASKS:
        rejected.append(f"asks {MAX_ASKS + 1}-{len(asks)}: not read (at most {MAX_ASKS})")
    seen = {(e.tool, _norm(e.clause)) for e in rules.entries}
    added = []
    for entry in kept:
        key = (entry.tool, _norm(entry.clause))
        if key not in seen:
            seen.add(key)
            added.append(entry)
    return RequestPlan((*rules.entries, *added), rules.aside, rules.named), rejected


def _entry(ask: Any, tools: set[str], parts: list[str], cues: list[str]) -> PlanEntry | str:
    """The plan entry an ask reads as, or why it is rejected (``cues``: each clause's)."""
    if not isinstance(ask, dict):
        return f"not an object ({_cut(ask)!r})"
    tool, clause = ask.get("tool"), ask.get("clause")
    if not isinstance(tool, str) or tool not in tools:
        return (f"{_cut(tool)!r} is not a tool a request can ask for (side-effecting, with "
                f"intents: {', '.join(sorted(tools)) or 'none'})")
    if not isinstance(clause, str) or not tokens(clause):
        return f"{tool}: no clause copied from the request ({_cut(clause)!r})"
    spans = _spans(clause, parts)
    if not spans:
        return f"{tool}: {_cut(clause)!r} is not in the request"
    asking = [(a, b) for a, b in spans if not any(cues[a:b + 1])]
    if not asking:
        a, b = spans[0]
        why = next(cue for cue in cues[a:b + 1] if cue)
        return (f"{tool}: {_cut(clause)!r} is in a clause the rules read as {why}, which asks "
                "for nothing")
    first, last = asking[0]
    whole = " ".join(parts[first:last + 1])
    return PlanEntry(tool, whole, asked_count(whole), "model")


def _spans(text: str, parts: list[str]) -> list[tuple[int, int]]:
    """The ranges of clauses (first, last) each occurrence of ``text`` in them covers,
    whitespace and case aside, in order."""
    normed = [_norm(p) for p in parts]
    starts, at = [], 0
    for n in normed:
        starts.append(at)
        at += len(n) + 1
    whole, needle = " ".join(normed), _norm(text)
    found: list[tuple[int, int]] = []
    i = whole.find(needle)
    while i != -1:
        span = (bisect.bisect_right(starts, i) - 1,
                bisect.bisect_right(starts, i + len(needle) - 1) - 1)
        if span not in found:
            found.append(span)
        i = whole.find(needle, i + 1)
    return found


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _cut(value: Any, limit: int = 80) -> str:
    flat = " ".join(str(value).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"
