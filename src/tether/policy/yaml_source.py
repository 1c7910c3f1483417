"""Reading YAML policy (and policy test) files into checked values, with errors that point.

Why: a permission file that loads "mostly right" is worse than one that does not load. PyYAML
alone silently keeps the last of two duplicate keys, reads ``no`` as ``False`` and gives no
position once a document is parsed. This module decides that every value is read through a
``Node`` that knows the file, the line, the rule and the key path it came from, so each check
(unknown key, wrong type, NaN, bool-for-number, ...) raises a ``PolicyLoadError`` that says
exactly where and what to write instead. Duplicate keys are load errors.

``yaml`` is imported only inside ``parse_yaml``: ``import tether.policy`` stays cheap.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, NoReturn

from tether.errors import UsageError


class PolicyLoadError(UsageError, ValueError):
    """A policy (or policy test) file is unreadable, malformed or invalid; nothing was loaded."""


class _Map(dict[str, Any]):
    """A YAML mapping that remembers its own line and the line of each key."""

    line = 0
    key_lines: dict[str, int]


class _Seq(list[Any]):
    """A YAML sequence that remembers its own line and the line of each item."""

    line = 0
    item_lines: list[int]


def parse_yaml(text: str, source: str) -> Any:
    """Parse one YAML document into plain values that remember their lines."""
    import yaml

    class Loader(yaml.SafeLoader):
        """A private SafeLoader, so the constructors added below touch no global one."""

    def fail(node: yaml.Node, message: str) -> NoReturn:
        raise PolicyLoadError(f"{source}, line {node.start_mark.line + 1}: {message}")

    def mapping(loader: Loader, node: yaml.MappingNode) -> _Map:
        loader.flatten_mapping(node)
        out, lines = _Map(), dict[str, int]()
        out.line = node.start_mark.line + 1
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                fail(key_node, f"the key {key!r} is {describe(key)}; keys must be strings "
                     "(quote it)")
            if key in out:
                fail(key_node, f"the key {key!r} appears twice in one mapping (first on line "
                     f"{lines[key]}); keep one")
            out[key] = loader.construct_object(value_node, deep=True)
            lines[key] = key_node.start_mark.line + 1
        out.key_lines = lines
        return out

    def sequence(loader: Loader, node: yaml.SequenceNode) -> _Seq:
        out = _Seq(loader.construct_object(item, deep=True) for item in node.value)
        out.line = node.start_mark.line + 1
        out.item_lines = [item.start_mark.line + 1 for item in node.value]
        return out

    Loader.add_constructor("tag:yaml.org,2002:map", mapping)
    Loader.add_constructor("tag:yaml.org,2002:seq", sequence)
    try:
        return yaml.load(text, Loader=Loader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        detail = " ".join((f"{context}: {problem}" if context else problem).split())
        start = getattr(exc, "context_mark", None)
        if start is not None and mark is not None and start.line != mark.line:
            detail += f"; that started on line {start.line + 1}"
        raise PolicyLoadError(f"{source}{where}: not valid YAML ({detail}); fix the syntax "
                              "there (check indentation, colons and quotes)") from None


def describe(value: object) -> str:
    """How a value reads to a person, for 'got ...' in error messages."""
    if isinstance(value, bool):
        return (f"{str(value).lower()} (a bool; YAML reads unquoted yes/no/on/off/true/false as "
                "bools)")
    if value is None:
        return "empty (null)"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float | Decimal):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__} ({value!r})"


@dataclass(frozen=True, slots=True)
class Node:
    """A value read from a file, with where it came from: file, line, rule and key path."""

    value: Any
    source: str
    line: int
    path: str = ""  # key path inside ``scope``, e.g. "when.all[0].args.amount.gt"
    scope: str = ""  # "rules[2] (id 'mask-card')" once inside a rule

    @classmethod
    def root(cls, value: Any, source: str) -> Node:
        return cls(value, source, getattr(value, "line", 1))

    def fail(self, problem: str, fix: str) -> NoReturn:
        where = ", ".join(p for p in (f"{self.source}, line {self.line}", self.scope,
                                      f"key '{self.path}'" if self.path else "") if p)
        raise PolicyLoadError(f"{where}: {problem}; {fix}")

    def within(self, scope: str) -> Node:
        """The same value, reported as part of ``scope`` with paths starting afresh."""
        return Node(self.value, self.source, self.line, "", scope)

    def _child(self, key: str | int, value: Any, line: int) -> Node:
        if isinstance(key, int):
            path = f"{self.path}[{key}]"
        else:
            path = f"{self.path}.{key}" if self.path else key
        return Node(value, self.source, line, path, self.scope)

    # -- shapes ---------------------------------------------------------------------------

    def mapping(self, allowed: Iterable[str], required: Iterable[str] = (),
                what: str = "a mapping") -> dict[str, Node]:
        """The mapping's children by key; unknown or missing keys are errors."""
        allowed = tuple(allowed)
        if not isinstance(self.value, dict):
            self.fail(f"expected {what}, got {describe(self.value)}",
                      f"write it as 'key: value' lines; allowed keys: {_listing(allowed)}")
        lines = getattr(self.value, "key_lines", {})
        for key in self.value:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                self._child(key, None, lines.get(key, self.line)).fail(
                    f"unknown key {key!r}", f"{hint}allowed keys here: {_listing(allowed)}")
        for key in required:
            if key not in self.value:
                self.fail(f"the required key {key!r} is missing", f"add '{key}: ...'")
        return {key: self._child(key, value, lines.get(key, self.line))
                for key, value in self.value.items()}

    def items(self, what: str = "a list") -> list[Node]:
        """A non-empty list's items."""
        if not isinstance(self.value, list):
            self.fail(f"expected {what}, got {describe(self.value)}",
                      "write it as '[a, b]' or as '- item' lines")
        if not self.value:
            self.fail(f"expected {what}, got an empty list", "give at least one item or drop "
                      "the key")
        lines = getattr(self.value, "item_lines", [self.line] * len(self.value))
        return [self._child(i, v, lines[i]) for i, v in enumerate(self.value)]

    def entries(self, what: str) -> dict[str, Node]:
        """A non-empty mapping with free-form keys (argument names, extra keys)."""
        if not isinstance(self.value, dict) or not self.value:
            self.fail(f"expected {what}, got {describe(self.value)}", f"write {what}")
        return self.mapping(tuple(self.value), what=what)

    # -- scalars --------------------------------------------------------------------------

    def text(self, what: str = "a non-empty string") -> str:
        if not isinstance(self.value, str) or not self.value.strip():
            self.fail(f"expected {what}, got {describe(self.value)}", "write a non-empty string "
                      "(quote it if YAML might read it as something else)")
        return self.value

    def choice(self, options: Iterable[str]) -> str:
        options = tuple(options)
        if not isinstance(self.value, str) or self.value not in options:
            self.fail(f"expected one of {_listing(options)}, got {describe(self.value)}",
                      f"use one of {_listing(options)}")
        return self.value

    def texts(self, options: Iterable[str] | None = None) -> tuple[str, ...]:
        """A non-empty list of distinct strings (each one of ``options``, if given)."""
        out: list[str] = []
        for item in self.items("a list of strings"):
            value = item.text() if options is None else item.choice(options)
            if value in out:
                item.fail(f"{value!r} is listed twice", "list it once")
            out.append(value)
        return tuple(out)

    def boolean(self) -> bool:
        if not isinstance(self.value, bool):
            self.fail(f"expected true or false, got {describe(self.value)}", "write true or false")
        return self.value

    def integer(self) -> int:
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            self.fail(f"expected a whole number, got {describe(self.value)}",
                      "write an integer such as 10")
        return self.value

    def number(self) -> int | float:
        """A finite int or float; bools, strings, NaN and infinities are errors."""
        value = self.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(f"expected a number, got {describe(value)}",
                      "write a plain number such as 100 or 0.5 (no quotes)")
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(f"expected a finite number, got {value}", "NaN and infinities cannot "
                      "be compared meaningfully; write a finite number")
        return value


def _listing(options: Iterable[str]) -> str:
    return ", ".join(options)
