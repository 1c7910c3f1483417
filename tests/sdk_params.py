"""Validate a recorded request body against the SDK's own request param types, strictly.

The official SDKs describe every request body as TypedDicts (``CompletionCreateParams...``,
``MessageCreateParams...``) generated from the providers' API specifications. This walks a JSON
body against such a type: required keys present, no unknown keys (at any depth), literals,
unions, lists, mappings and scalars checked. Pydantic's TypedDict validation ignores extra keys
and validates ``Iterable`` lazily, so it would miss exactly the mistakes that matter here.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

import typing_extensions

_SEQUENCES = {list, collections.abc.Iterable, collections.abc.Sequence}
_WRAPPERS = {typing.Required, typing.NotRequired, typing_extensions.Required,
             typing_extensions.NotRequired, typing.Annotated, typing_extensions.Annotated}


def problems(value: Any, tp: Any, path: str = "body") -> list[str]:
    """Everything wrong with ``value`` as an instance of ``tp`` ([] if nothing)."""
    origin = get_origin(tp)
    if origin in _WRAPPERS:
        return problems(value, get_args(tp)[0], path)
    if tp is Any or tp is object:
        return []
    if tp is type(None) or tp is None:
        return [] if value is None else [f"{path}: expected null, got {value!r}"]
    if origin in (Union, types.UnionType):
        branches = [problems(value, arm, path) for arm in get_args(tp)]
        if any(not b for b in branches):
            return []
        def distance(found: list[str]) -> int:  # a wrong discriminator is a different type
            tags = (f"{path}.type: ", f"{path}.role: ")
            return (len(found) + 100 * any(f.startswith(tags) for f in found)
                    + 50 * any(f.startswith(f"{path}: expected") for f in found))
        best = min(branches, key=distance)
        return [f"{path}: matches no member of the union; closest: {best}"]
    if origin is Literal:
        return [] if value in get_args(tp) else [f"{path}: {value!r} not in {get_args(tp)}"]
    if typing_extensions.is_typeddict(tp):
        return _typeddict(value, tp, path)
    if origin in _SEQUENCES or getattr(origin, "__name__", "") == "SequenceNotStr":
        if not isinstance(value, list):
            return [f"{path}: expected a list, got {type(value).__name__}"]
        (item,) = get_args(tp) or (Any,)
        return [p for i, v in enumerate(value) for p in problems(v, item, f"{path}[{i}]")]
    if origin in (dict, collections.abc.Mapping) or tp is dict:
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {type(value).__name__}"]
        args = get_args(tp)
        return [p for k, v in value.items() for p in problems(v, args[1] if args else Any,
                                                               f"{path}.{k}")]
    if tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif isinstance(tp, type):
        ok = isinstance(value, tp)
    else:
        raise TypeError(f"{path}: the validator does not understand {tp!r}")
    return [] if ok else [f"{path}: expected {tp}, got {value!r}"]


def _typeddict(value: Any, td: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object ({td.__name__}), got {type(value).__name__}"]
    hints = typing.get_type_hints(td, include_extras=True)
    out = [f"{path}: missing required key {k!r} of {td.__name__}"
           for k in td.__required_keys__ if k not in value]
    out += [f"{path}: unknown key {k!r} for {td.__name__}" for k in value if k not in hints]
    for k, v in value.items():
        if k in hints:
            out += problems(v, hints[k], f"{path}.{k}")
    return out


def assert_valid(value: Any, tp: Any) -> None:
    found = problems(value, tp)
    assert not found, "\n".join(found)
