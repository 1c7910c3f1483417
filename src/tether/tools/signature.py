"""Plain signatures, described and checked without pydantic.

Why: pydantic is what turns a tool's signature into its schema and validates the arguments a
model sends, and it stays the authority. But importing it costs more than all of tether (tens of
milliseconds at start), and validating through it costs more than the rest of a step's gates.
Most tools take plain parameters: ``int``, ``str``, ``float``, ``bool``, lists and string-keyed
dicts of those, ``X | None``, ``Literal`` of strings or of integers.

Decision: for such a signature the schema is written here, exactly as pydantic writes it (a test
compares the two over generated signatures), and arguments that already have exactly the
declared types are accepted here, unchanged (an integer for a float as pydantic converts it) —
the one case where pydantic's answer is known without asking it. Everything else (a coercion
such as ``"1"`` for an ``int``, a missing or unknown field, any other annotation) goes to
pydantic, imported then, so its rules and its messages stay the only ones.
"""

from __future__ import annotations

import copy
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union, get_args, get_origin

# a check returns the value as pydantic would give it back, or NOT_PLAIN when pydantic must say
NOT_PLAIN = object()
Check = Callable[[Any], Any]

_SCALARS: dict[type, str] = {int: "integer", str: "string", float: "number", bool: "boolean"}
_NULL = {"type": "null"}


def _scalar(kind: type) -> Check:
    if kind is float:
        return _number
    return lambda value: value if type(value) is kind else NOT_PLAIN


def _number(value: Any) -> Any:
    """A float as pydantic gives it back: itself, or an integer (a model writes 1000, not
    1000.0) as ``float(value)`` — one too large for a float is pydantic's to refuse."""
    if type(value) is float:
        return value
    if type(value) is int and -_FLOAT_MAX <= value <= _FLOAT_MAX:
        return float(value)
    return NOT_PLAIN


_FLOAT_MAX = int(sys.float_info.max)


def describe(annotation: Any) -> tuple[dict[str, Any], Check] | None:
    """The JSON schema pydantic writes for ``annotation`` and a check of values of exactly that
    type, or None when the annotation is not plain."""
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}, _scalar(annotation)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list and len(args) == 1:
        item = describe(args[0])
        if item is None:
            return None
        item_check = item[1]

        def check_list(value: Any) -> Any:
            if type(value) is not list:
                return NOT_PLAIN
            out = [item_check(each) for each in value]
            return NOT_PLAIN if any(each is NOT_PLAIN for each in out) else out

        return {"items": item[0], "type": "array"}, check_list
    if origin is dict and len(args) == 2 and args[0] is str:
        entry = describe(args[1])
        if entry is None:
            return None
        entry_check = entry[1]

        def check_dict(value: Any) -> Any:
            if type(value) is not dict:
                return NOT_PLAIN
            out = {key: entry_check(each) for key, each in value.items()}
            if any(type(key) is not str for key in out) or any(
                    each is NOT_PLAIN for each in out.values()):
                return NOT_PLAIN
            return out

        return {"additionalProperties": entry[0], "type": "object"}, check_dict
    if origin in (Union, types.UnionType) and len(args) == 2 and type(None) in args:
        (other,) = (arg for arg in args if arg is not type(None))
        if get_origin(other) is Literal:  # pydantic folds None into the enum: not plain here
            return None
        inner = describe(other)
        if inner is None:
            return None
        inner_check = inner[1]
        return ({"anyOf": [inner[0], _NULL]},
                lambda value: None if value is None else inner_check(value))
    if origin is Literal and args:
        for kind in (str, int):
            if all(type(arg) is kind for arg in args):
                allowed = frozenset(args)
                values = {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
                return ({**values, "type": _SCALARS[kind]},
                        lambda value, kind=kind, allowed=allowed: value
                        if type(value) is kind and value in allowed else NOT_PLAIN)
    return None


_IMMUTABLE = (type(None), bool, int, float, str)


class PlainSignature:
    """The schema and argument check of a signature whose parameters are all plain."""

    __slots__ = ("_checks", "_defaults", "_required", "schema")

    def __init__(self, checks: dict[str, Check], defaults: dict[str, Any],
                 schema: dict[str, Any]) -> None:
        self._checks = checks
        self._defaults = defaults
        self._required = frozenset(checks) - frozenset(defaults)
        self.schema = schema

    @classmethod
    def of(cls, fields: Mapping[str, tuple[Any, Any]]) -> PlainSignature | None:
        """From ``{name: (annotation, default or ...)}``, or None if any parameter is not plain
        (or has a default pydantic would write differently than this module)."""
        checks: dict[str, Check] = {}
        defaults: dict[str, Any] = {}
        properties: dict[str, Any] = {}
        for name, (annotation, default) in fields.items():
            if name.startswith("_") or name == "model_config":  # not fields to pydantic
                return None
            described = describe(annotation)
            if described is None:
                return None
            prop, checks[name] = dict(described[0]), described[1]
            if default is not ...:
                if not _jsonable(default):
                    return None
                defaults[name] = default
                prop["default"] = default
            properties[name] = dict(sorted(prop.items()))
        schema: dict[str, Any] = {"additionalProperties": False, "properties": properties}
        required = [name for name in fields if name not in defaults]
        if required:
            schema["required"] = required
        schema["type"] = "object"
        return cls(checks, defaults, schema)

    def accept(self, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        """The validated arguments when every one has exactly its declared type and none is
        missing or unknown; None when pydantic must decide (and explain)."""
        if type(arguments) is not dict or not self._required <= arguments.keys():
            return None
        out: dict[str, Any] = {}
        for name, check in self._checks.items():
            if name in arguments:
                value = check(arguments[name])
                if value is NOT_PLAIN:
                    return None
                out[name] = value
            else:
                default = self._defaults[name]
                out[name] = default if type(default) in _IMMUTABLE else copy.deepcopy(default)
        if len(arguments) != sum(1 for name in arguments if name in self._checks):
            return None  # an unknown argument: pydantic refuses it by name
        return out


def _jsonable(value: Any) -> bool:
    if type(value) in _IMMUTABLE:
        return not (type(value) is float and value != value)  # NaN: pydantic writes it apart
    if type(value) is list:
        return all(_jsonable(each) for each in value)
    if type(value) is dict:
        return all(type(k) is str and _jsonable(v) for k, v in value.items())
    return False
