"""A strict OCSF event validator over ocsf-lib's schema model, for the OCSF tests.

ocsf-lib validates schema *repositories* (and compiles them); it has no validator for *events*.
So this one walks an event against the compiled 1.8.0 schema ocsf-lib loads
(``ocsf.schema.from_file`` of ``tests/ocsf/schema-1.8.0.json``, see ``build_schema.py``):
every required attribute present; no attribute the class or object does not define (anything
goes under ``unmapped``); an attribute a profile adds only when ``metadata.profiles`` lists that
profile; each value of its type (strings, integers, longs, floats, booleans, timestamps, ranges
and regexes of the type, arrays exactly where ``is_array``); enum ids among the enum's values,
and a sibling caption (``activity_name`` for ``activity_id`` ...) equal to the enum's caption
unless the id is Other (99); ``type_uid`` = ``class_uid`` * 100 + ``activity_id``; and objects'
``at_least_one`` / ``just_one`` constraints.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from ocsf.schema import OcsfAttr, OcsfSchema, from_file

SCHEMA = Path(__file__).parent / "ocsf" / "schema-1.8.0.json"


@cache
def schema() -> OcsfSchema:
    return from_file(str(SCHEMA))


def validate(event: dict[str, Any]) -> list[str]:
    """Every way ``event`` breaks the schema; empty when it is valid."""
    s = schema()
    problems: list[str] = []
    classes = {c.uid: c for c in s.classes.values()}
    cls = classes.get(event.get("class_uid"))  # type: ignore[arg-type]
    if cls is None:
        return [f"class_uid {event.get('class_uid')!r} is not a vendored class"]
    metadata = event.get("metadata") or {}
    profiles = set(metadata.get("profiles") or [])
    unknown = profiles - set(cls.profiles or [])
    if unknown:
        problems.append(f"profiles {sorted(unknown)} do not apply to {cls.name}")
    if metadata.get("version") != s.version:
        problems.append(f"metadata.version {metadata.get('version')!r} != {s.version}")
    _check(cls.name, cls.attributes, None, event, profiles, problems)
    if event.get("type_uid") != cls.uid * 100 + event.get("activity_id", -1):  # type: ignore
        problems.append("type_uid is not class_uid * 100 + activity_id")
    return problems


def _check(where: str, attrs: dict[str, OcsfAttr], constraints: dict[str, list[str]] | None,
           value: dict[str, Any], profiles: set[str], problems: list[str]) -> None:
    for name, attr in attrs.items():
        gate = attr.profile if isinstance(attr.profile, str) else None
        if attr.requirement == "required" and name not in value and (
                gate is None or gate in profiles):
            problems.append(f"{where}.{name} is required")
    for name, item in value.items():
        path = f"{where}.{name}"
        attr = attrs.get(name)
        if attr is None:
            problems.append(f"{path} is not an attribute of {where.split('.')[-1]}")
            continue
        gate = attr.profile if isinstance(attr.profile, str) else None
        if gate is not None and gate not in profiles:
            problems.append(f"{path} needs the {gate} profile in metadata.profiles")
        if name == "unmapped":
            if not isinstance(item, dict):
                problems.append(f"{path} must be an object")
            continue
        if attr.is_array:
            if not isinstance(item, list):
                problems.append(f"{path} must be an array")
                continue
            for i, element in enumerate(item):
                _value(f"{path}[{i}]", attr, element, profiles, problems)
        else:
            _value(path, attr, item, profiles, problems)
        if attr.enum is not None and isinstance(item, int):
            if str(item) not in attr.enum:
                problems.append(f"{path} {item} is not one of {sorted(attr.enum)}")
            elif attr.sibling and attr.sibling in value and item != 99 and \
                    value[attr.sibling] != attr.enum[str(item)].caption:
                problems.append(f"{where}.{attr.sibling} {value[attr.sibling]!r} is not the "
                                f"caption of {name} {item} ({attr.enum[str(item)].caption!r})")
    for rule, names in (constraints or {}).items():
        present = [n for n in names if n in value]
        if rule == "at_least_one" and not present:
            problems.append(f"{where} needs at least one of {names}")
        if rule == "just_one" and len(present) != 1:
            problems.append(f"{where} needs exactly one of {names}")


_BASE = {"string_t": str, "integer_t": int, "long_t": int, "float_t": (int, float),
         "boolean_t": bool, "json_t": object}


def _value(path: str, attr: OcsfAttr, item: Any, profiles: set[str],
           problems: list[str]) -> None:
    s = schema()
    if attr.type in s.objects:
        obj = s.objects[attr.type]
        if not isinstance(item, dict):
            problems.append(f"{path} must be a {attr.type} object")
            return
        _check(path, obj.attributes, obj.constraints, item, profiles, problems)
        return
    if attr.type == "object":  # unmapped-like: any JSON object
        if not isinstance(item, dict):
            problems.append(f"{path} must be an object")
        return
    kind = s.types.get(attr.type)
    if kind is None:
        problems.append(f"{path}: type {attr.type} is not in the vendored schema")
        return
    base = kind.type or attr.type
    expected = _BASE.get(base)
    if expected is None:
        problems.append(f"{path}: unknown base type {base}")
        return
    if expected is not object and (not isinstance(item, expected) or (
            expected is not bool and isinstance(item, bool))):
        problems.append(f"{path} {item!r} is not a {attr.type}")
        return
    if base == "integer_t" and not -2**31 <= item < 2**31:
        problems.append(f"{path} {item} is out of the integer range")
    if kind.range is not None and not kind.range[0] <= item <= kind.range[1]:
        problems.append(f"{path} {item} is outside {kind.range}")
    if kind.max_len is not None and len(item) > kind.max_len:
        problems.append(f"{path} is longer than {kind.max_len}")
    if kind.regex and isinstance(item, str) and not re.fullmatch(kind.regex, item):
        problems.append(f"{path} {item!r} does not match {kind.regex}")
