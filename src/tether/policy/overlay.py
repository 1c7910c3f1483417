"""Tool metadata outside the code: a reviewed overlay file that declares what tools are and do.

Why: policies decide on declared metadata — side effects, egress, the trust of a tool's output,
risk, tags, the arguments that name a party, the words with which a request asks for the tool,
the fields of an untrusted result that the system (not a third party) writes, the private ones
(and for which calls), the arguments besides the parties that shape an effect —
but many tools are not yours to annotate: a third-party library's functions, an MCP server's
tools. An overlay (``tools.yaml``) declares
them in one reviewed file, by tool name or glob, and applies to any tools. Decision: the file is
read as strictly as a policy — unknown keys, wrong types, duplicate keys, a name that is none of
the tools (a typo would leave a tool undeclared), a party that is not an argument of the tool:
each an error naming file, line and key, and nothing is applied. A glob may match no tool (one
file can serve agents whose tools differ). Globs apply first, in file order, then exact names,
so a specific entry always has the last word. The tool itself is unchanged; it is wrapped with
its new metadata.

Format::

    tools:
      "read_*":             {output_trust: untrusted, trusted_fields: [id, sender]}
      send_money:           {side_effect: true, egress: true, risk: high, tags: [payments],
                             parties: [recipient], intents: [pay, send, transfer]}
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.policy.yaml_conditions import TRUSTS
from tether.policy.yaml_source import Node, PolicyLoadError, parse_yaml
from tether.tools.base import RISKS, Tool, ToolMeta, ToolWrapper

FLAGS = ("side_effect", "egress", "idempotent")
KEYS = (*FLAGS, "output_trust", "risk", "tags", "parties", "intents", "trusted_fields", "owner",
        "private", "private_when", "shapes", "selects")
ARGUMENT_KEYS = ("parties", "shapes", "selects", "private_when")  # name arguments of the tool


class OverlayError(PolicyLoadError):
    """A tools overlay is unreadable or does not fit the tools; nothing was applied."""


@dataclass(frozen=True, slots=True)
class Entry:
    pattern: str
    changes: Mapping[str, Any]
    node: Node  # where it was written, for errors found when applied

    @property
    def is_glob(self) -> bool:
        return any(ch in self.pattern for ch in "*?[")

    def matches(self, name: str) -> bool:
        return fnmatch.fnmatchcase(name, self.pattern) if self.is_glob else name == self.pattern


class Declared(ToolWrapper):
    """A tool with metadata declared by an overlay; everything else is the tool's own."""

    __slots__ = ("_meta", "source")

    def __init__(self, inner: Tool, meta: ToolMeta, source: tuple[str, ...]) -> None:
        super().__init__(inner)
        self._meta, self.source = meta, source  # source: where each entry was written

    @property
    def meta(self) -> ToolMeta:
        return self._meta


@dataclass(frozen=True, slots=True)
class Overlay:
    source: str
    entries: tuple[Entry, ...]

    def apply(self, tools: Iterable[Tool]) -> tuple[Tool, ...]:
        """``tools`` with the declared metadata; OverlayError if a name is none of the tools or
        a party is not one of its tool's arguments."""
        tools = tuple(tools)
        for entry in self.entries:
            if not entry.is_glob and not any(entry.matches(t.name) for t in tools):
                _fail(entry.node, f"{entry.pattern!r} names none of the tools "
                      f"({', '.join(sorted(t.name for t in tools))})",
                      "fix the name, or drop the entry")
        ordered = sorted(self.entries, key=lambda e: not e.is_glob)  # globs first, stable
        out: list[Tool] = []
        for tool in tools:
            meta, source = tool.meta, []
            for entry in ordered:
                if not entry.matches(tool.name):
                    continue
                arguments = set((tool.spec.parameters.get("properties") or {}).keys())
                for key in ARGUMENT_KEYS:
                    unknown = sorted(set(entry.changes.get(key) or ()) - arguments)
                    if unknown:
                        _fail(entry.node, f"{key} {unknown} are not arguments of "
                              f"{tool.name!r} ({', '.join(sorted(arguments)) or 'none'})",
                              "name arguments the tool has")
                try:
                    meta = dataclasses.replace(meta, **entry.changes)
                except (TypeError, ValueError) as exc:  # e.g. a party also declared a shape
                    _fail(entry.node, str(exc), "fix the entry")
                source.append(f"{self.source}, line {entry.node.line}")
            out.append(Declared(tool, meta, tuple(source)) if source else tool)
        return tuple(out)


def _fail(node: Node, problem: str, fix: str) -> None:
    try:
        node.fail(problem, fix)
    except PolicyLoadError as exc:
        raise OverlayError(str(exc)) from None


def load_overlay(path: str | Path) -> Overlay:
    """The overlay in ``path``; OverlayError (file, line, key) for anything not right."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise OverlayError(f"cannot read the tools overlay {path}: "
                           f"{exc.strerror or exc}") from None
    return parse_overlay(text, str(path))


def parse_overlay(text: str, source: str = "<string>") -> Overlay:
    try:
        top = Node.root(parse_yaml(text, source), source).mapping(("tools",), ("tools",),
                                                                  what="a tools overlay")
        tools = top["tools"].entries("a mapping of tool names (or globs) to their metadata")
        entries = tuple(Entry(pattern, _changes(node.within(f"tool {pattern!r}")), node)
                        for pattern, node in tools.items())
    except PolicyLoadError as exc:
        raise OverlayError(str(exc)) from None
    return Overlay(source, entries)


def _changes(node: Node) -> dict[str, Any]:
    keys = node.mapping(KEYS, what="tool metadata such as {side_effect: true}")
    if not keys:
        node.fail("the entry declares nothing", f"give some of: {', '.join(KEYS)}")
    out: dict[str, Any] = {}
    for key, child in keys.items():
        if key in FLAGS:
            out[key] = child.boolean()
        elif key == "output_trust":
            out[key] = child.choice(TRUSTS)
        elif key == "risk":
            out[key] = child.choice(RISKS)
        elif key == "owner":
            out[key] = child.text()
        elif key == "intents":
            out[key] = intents_of(child)
        elif key == "private":
            out[key] = private_of(child)
        elif key == "private_when":
            out[key] = private_when_of(child)
        else:  # tags, parties, trusted_fields, shapes, selects
            out[key] = frozenset(child.texts()) if child.value != [] else frozenset()
    return out


def private_of(node: Node) -> dict[str, str]:
    """The private keys of a result and their kinds, checked as ``ToolMeta`` does."""
    what = "result keys and their kinds, e.g. {passport_number: passport, '*': balance}"
    if not isinstance(node.value, dict):
        node.fail(f"expected {what}", "write {key: kind}, one word a kind")
    fields = node.mapping(tuple(node.value), what=what)
    out = {key: child.text("the kind of data, one word") for key, child in fields.items()}
    try:
        return dict(ToolMeta(private=out).private)
    except TypeError as exc:
        node.fail(str(exc), "write {key: kind}, one word a kind: {passport_number: passport}")


def private_when_of(node: Node) -> dict[str, frozenset[str]]:
    """For which argument values a result is private: ``{channel: [private]}``."""
    what = "arguments and the values for which the result is private, e.g. {channel: [private]}"
    if not isinstance(node.value, dict) or not node.value:
        node.fail(f"expected {what}", "write {argument: [value, ...]}")
    fields = node.mapping(tuple(node.value), what=what)
    return {key: frozenset(child.texts()) for key, child in fields.items()}


def intents_of(node: Node) -> frozenset[str]:
    """A list of intents, checked and normalised as ``ToolMeta`` does (policy cases use it too)."""
    words = frozenset(node.texts()) if node.value != [] else frozenset()
    try:
        return ToolMeta(intents=words).intents
    except ValueError as exc:
        node.fail(str(exc), "write words, or words joined by '+': [reservation, book+hotel]")
