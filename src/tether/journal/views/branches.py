"""Timeline lines for a tree search: its branch calls, its simulated side effects, and its tree.

Why: a search (``tether.reasoning.lats``) asks the model on many branches and journals its tree;
``tether audit show`` must let a person see what was explored, what was only proposed and never
run, and which path was chosen — the tree drawn as an indented outline, children under parents,
each node with its action, value and visits.

Decision: like the rest of the timeline, a pure function of the stored event data (the views do
not import the strategy that wrote it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tether.journal.payloads import (
    BranchRequestData,
    BranchResponseData,
    CallData,
)
from tether.journal.views.text import excerpt
from tether.vocabulary import EventType

EXCERPT = 80


def _short(text: object, limit: int = EXCERPT) -> str:
    return excerpt(text, limit)


def tree_lines(data: Mapping[str, Any]) -> list[str]:
    """A journaled search tree (``lats.tree``) as an indented outline."""
    nodes: Sequence[Mapping[str, Any]] = data.get("nodes") or []
    children: dict[Any, list[Mapping[str, Any]]] = {}
    for n in nodes:
        children.setdefault(n.get("parent"), []).append(n)
    chosen, path = data.get("chosen"), set()
    parents = {n.get("id"): n.get("parent") for n in nodes}
    at = chosen
    while at is not None:
        path.add(at)
        at = parents.get(at)
    ended = "solved" if data.get("solved") else f"stopped: {data.get('stopped') or 'unsolved'}"
    lines = [f"strategy search tree ({len(nodes)} nodes; {ended}; chosen {chosen}; "
             "* marks the chosen path):"]

    def walk(parent: Any, depth: int) -> None:
        for n in children.get(parent, ()):
            mark = "*" if n.get("id") in path else " "
            lines.append(f"{'  ' * (depth + 1)}{mark} {n.get('id')} {_short(n.get('action'))} "
                         f"(value {n.get('value')}, visits {n.get('visits')})")
            walk(n.get("id"), depth + 1)

    walk(None, 0)
    return lines


def _branch_request(d: BranchRequestData) -> list[str]:
    tools = "no tools" if not d.get("tools") else f"{len(d['tools'])} tools"
    return [f"step {d.get('step')}: branch {d.get('key')} asked "
            f"({len(d.get('messages') or [])} branch messages, {tools})"]


def _branch_response(d: BranchResponseData) -> list[str]:
    r = d.get("response") or {}
    usage = r.get("usage") or {}
    text = _short(r.get("text") or "")
    lines = [f"branch {d.get('key')} answered: {json.dumps(text, ensure_ascii=False)} "
             f"({usage.get('input_tokens')} in, {usage.get('output_tokens')} out tokens, "
             f"${d.get('cost_usd')})"]
    for call in r.get("tool_calls") or []:
        args = json.dumps(call.get("arguments"), ensure_ascii=False, sort_keys=True)
        lines.append(f"  proposes {call.get('name')}({_short(args)}) [{call.get('id')}]")
    return lines


def _simulated(d: CallData) -> list[str]:
    c = d.get("call") or {}
    args = json.dumps(c.get("arguments"), ensure_ascii=False, sort_keys=True)
    lines = [f"simulated, not run (side effects, explored branch): {c.get('name')}"
             f"({_short(args)}) [{c.get('id')}]"]
    if d.get("invalid"):
        lines.append(f"  and malformed: {_short(d['invalid'], 120)}")
    return lines


BRANCH_RENDER: dict[str, Callable[[Any], list[str]]] = {  # each given its event's payload
    EventType.BRANCH_REQUEST: _branch_request,
    EventType.BRANCH_RESPONSE: _branch_response,
    EventType.BRANCH_SIMULATED: _simulated,
}
