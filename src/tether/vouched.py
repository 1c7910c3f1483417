"""The values an untrusted result's trusted fields hold, read from the text the model saw.

Why: an e-mail is a stranger's text next to values the mail system wrote (its id, its sender);
a tool declares the keys the system writes (``trusted_fields``), and provenance and the trust
audit must both read exactly those values — and nothing a third party wrote — from the result
as recorded: JSON, possibly cut short by the size limit. It is a ground module because both the
runtime (provenance) and the journal's views (the trust audit) read it.

Decision: a key counts only where an unescaped quote opens it after ``{``, ``,`` or white
space — every quote inside a JSON string is escaped, so no text written into a string, nor a
key a third party chose, can pose as one — and its value only when it is whole: a string, a
number, or a flat list or mapping of them (a mapping vouches for its keys too:
``{"ann@x.com": "rw"}``). Anything else, or a value cut in half, stays with the rest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

_STRING = r'"(?:[^"\\]|\\.)*"'
_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
_SCALAR = f"(?:{_STRING}|{_NUMBER})"
_PAIR = rf"{_STRING}\s*:\s*{_SCALAR}"
_VALUE = (rf"{_SCALAR}|\[\s*(?:{_SCALAR}\s*(?:,\s*{_SCALAR}\s*)*)?\]"
          rf"|\{{\s*(?:{_PAIR}\s*(?:,\s*{_PAIR}\s*)*)?\}}")


def split_vouched(content: str, fields: Sequence[str]) -> tuple[list[str], str]:
    """The values under ``fields`` in ``content``, and the rest of the text with those values
    replaced by null."""
    keys = "|".join(re.escape(json.dumps(field)) for field in fields)
    pattern = re.compile(rf'(?<=[{{,\s])({keys})\s*:\s*({_VALUE})(?=\s*[,}}\]])')
    vouched: list[str] = []

    def cut(match: re.Match[str]) -> str:
        value = json.loads(match.group(2))
        if isinstance(value, dict):  # {"ann@x.com": "rw"}: who, as much as what
            vouched.extend(value)
        vouched.extend(leaves(value))
        return f"{match.group(1)}: null"

    return vouched, pattern.sub(cut, content)


def leaves(value: Any) -> Iterator[str]:
    """The scalar leaves of a value, as text (booleans and None carry none)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, Mapping):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from leaves(item)
    else:
        yield str(value)
