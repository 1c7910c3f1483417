"""A tool result of more than text: images, audio, embedded resources, in order (``Content``).

Why: an MCP client may show an image a tool made, play its audio or open the resource it
returned, and a proxy must hand on what its upstream server sent, intact. A model, though, reads
text, and the journal must stay small and free of what nobody can scrub. So a tool returns
``Content(Text(...), Image(png, "image/png"), ...)``; the caller that can use the parts (an MCP
client of ``tether mcp serve`` or ``tether mcp proxy``) receives them as they are, while the
model-facing text — what an agent's model reads and the journal records — has each binary part
as one bracketed line (its kind, MIME type, size and SHA-256), never its bytes.

Decisions:

- Bytes, not base64: a part holds the raw bytes (decoded once, so a malformed base64 string from
  an upstream is an error where it arrives), and the MCP server encodes them when it answers.
- MIME types are checked when a part is made: ``type/subtype`` in RFC 6838's characters, an
  image's ``image/...`` and audio's ``audio/...``. A bogus one is a ValueError, so the call is an
  error the caller can read, and what is journaled and shown is always a well-formed type.
- Binary parts are bounded per result (``MAX_BINARY_BYTES``, 8 MiB in all): past it the call is
  an error that says so, and none of its bytes are kept. Text parts are bounded by the result
  character limit, like any result: the part that crosses it is cut with an announcement, and
  later text parts are left out.
- Text (a ``Text`` part, an embedded text resource and its URI) is scrubbed like any result;
  binary cannot be scrubbed, which is one more reason the journal keeps only its digest.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tether.errors import InvalidArgument, RunError, WrongType
from tether.urls import redact_url

MAX_BINARY_BYTES = 8 * 1024 * 1024
_MIME = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}")


def check_mime(mime_type: object, kind: str, *, prefix: str = "") -> str:
    """``mime_type`` if it is a well-formed ``type/subtype`` (starting with ``prefix``), else
    ValueError naming the ``kind`` of part."""
    if not isinstance(mime_type, str) or _MIME.fullmatch(mime_type) is None:
        raise InvalidArgument(f"{kind} content has no valid MIME type ({str(mime_type)[:60]!r}); "
                              "expected type/subtype, such as image/png")
    if prefix and not mime_type.lower().startswith(prefix):
        raise InvalidArgument(f"{kind} content must have a {prefix}* MIME type, got {mime_type!r}")
    return mime_type


def decode_base64(data: object, what: str) -> bytes:
    """The bytes of base64 ``data`` (as MCP carries binary), or ValueError."""
    if not isinstance(data, str):
        raise InvalidArgument(f"{what} has no base64 data")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgument(f"{what} is not valid base64") from None


def _bytes(data: object, kind: str) -> bytes:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise WrongType(f"{kind} content holds bytes, got {type(data).__name__}")
    return bytes(data)


@dataclass(frozen=True, slots=True)
class Text:
    """Text, as the model reads it."""

    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise WrongType(f"Text holds a str, got {type(self.text).__name__}")


@dataclass(frozen=True, slots=True)
class Image:
    """An image: its bytes and MIME type (``image/...``)."""

    data: bytes
    mime_type: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", _bytes(self.data, "image"))
        check_mime(self.mime_type, "image", prefix="image/")


@dataclass(frozen=True, slots=True)
class Audio:
    """Audio: its bytes and MIME type (``audio/...``)."""

    data: bytes
    mime_type: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", _bytes(self.data, "audio"))
        check_mime(self.mime_type, "audio", prefix="audio/")


@dataclass(frozen=True, slots=True)
class Resource:
    """An embedded resource: its URI and either its ``text`` or its bytes (``blob``)."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: bytes | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.uri, str) or not self.uri:
            raise InvalidArgument("a resource needs a URI")
        if (self.text is None) == (self.blob is None):
            raise InvalidArgument(f"resource {redact_url(self.uri)} must have either text or a "
                                  "blob, not both or neither")
        if self.text is not None and not isinstance(self.text, str):
            raise WrongType(f"a resource's text is a str, got {type(self.text).__name__}")
        if self.blob is not None:
            object.__setattr__(self, "blob", _bytes(self.blob, "resource"))
        if self.mime_type is not None:
            check_mime(self.mime_type, "resource")


Part = Text | Image | Audio | Resource


def _binary(part: Part) -> bytes | None:
    if isinstance(part, Image | Audio):
        return part.data
    if isinstance(part, Resource):
        return part.blob
    return None


class Content:
    """What a tool returns for more than text: its parts, in order."""

    __slots__ = ("parts",)

    def __init__(self, *parts: Part | str) -> None:
        made = tuple(Text(p) if isinstance(p, str) else p for p in parts)
        for part in made:
            if not isinstance(part, Text | Image | Audio | Resource):
                raise WrongType(f"Content takes Text, Image, Audio, Resource or str parts, got "
                                f"{type(part).__name__}")
        self.parts: tuple[Part, ...] = made

    def __repr__(self) -> str:
        return f"Content({', '.join(type(p).__name__ for p in self.parts)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Content) and other.parts == self.parts

    def __hash__(self) -> int:
        return hash(self.parts)


class TooMuchBinary(RunError, ValueError):
    """A result's binary parts are more than ``MAX_BINARY_BYTES`` in all."""


def _size(n: int) -> str:
    return f"{n} bytes" if n < 10_240 else (f"{n / 1024:.0f} KiB" if n < 1_048_576
                                            else f"{n / 1048576:.1f} MiB")


def check_binary(parts: Iterable[Part], limit: int = MAX_BINARY_BYTES) -> None:
    """TooMuchBinary when ``parts`` hold more than ``limit`` bytes of binary in all."""
    total = sum(len(b) for b in (_binary(p) for p in parts) if b is not None)
    if total > limit:
        raise TooMuchBinary(
            f"the result holds {_size(total)} of binary content, more than tether's limit of "
            f"{_size(limit)} per result; none of it was kept. Return less (a smaller image, a "
            "link to the data) or split it over several calls")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def placeholder(part: Part) -> str:
    """What the model reads of a part: its text, or one bracketed line for binary."""
    if isinstance(part, Text):
        return part.text
    if isinstance(part, Resource) and part.text is not None:
        return f"[resource {redact_url(part.uri)}]\n{part.text}"
    data = _binary(part)
    assert data is not None
    if isinstance(part, Resource):
        kind = f"resource {redact_url(part.uri)}"
        mime = part.mime_type or "application/octet-stream"
    else:
        kind, mime = f"{type(part).__name__.lower()} content", part.mime_type
    return f"[{kind}: {mime}, {_size(len(data))}, sha256 {_digest(data)[:16]}; not shown]"


def render(parts: Iterable[Part]) -> str:
    """The model-facing text of ``parts``: text as it is, binary as a placeholder line."""
    return "\n".join(placeholder(p) for p in parts)


def describe(parts: Iterable[Part]) -> list[dict[str, Any]]:
    """The journal's record of a result's non-text parts: their position, kind, MIME type, URI
    (secrets masked), and for binary its size and SHA-256 — never the bytes."""
    out: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        if isinstance(part, Text):
            continue
        entry: dict[str, Any] = {"index": index, "type": type(part).__name__.lower()}
        if isinstance(part, Resource):
            entry["uri"] = redact_url(part.uri)
        if part.mime_type is not None:
            entry["mime_type"] = part.mime_type
        data = _binary(part)
        if data is not None:
            entry["bytes"] = len(data)
            entry["sha256"] = _digest(data)
        else:
            entry["chars"] = len(part.text or "") if isinstance(part, Resource) else 0
        out.append(entry)
    return out


def scrubbed(parts: Iterable[Part], scrub: Callable[[str], str]) -> tuple[Part, ...]:
    """``parts`` with every text (a Text part, a resource's text and URI) passed through
    ``scrub``; binary is left as it is."""
    out: list[Part] = []
    for part in parts:
        if isinstance(part, Text):
            part = Text(scrub(part.text))
        elif isinstance(part, Resource):
            part = Resource(scrub(part.uri), part.mime_type,
                            None if part.text is None else scrub(part.text), part.blob)
        out.append(part)
    return tuple(out)


def truncation_notice(shown: int, total: int) -> str:
    """The announcement that a result was cut (one wording for text and parts: a rerun finds
    it, see ``tether.runtime.chokepoint.additions``)."""
    return f"[tether: result truncated: showing the first {shown} of {total} characters]"


def cut(parts: Iterable[Part], limit: int) -> tuple[Part, ...]:
    """``parts`` whose model-facing text fits ``limit`` characters: binary parts stay (their
    placeholder lines count against the limit), the text part that crosses it is cut and
    followed by an announcement, later text parts are left out."""
    parts = tuple(parts)
    overhead = sum(len(placeholder(p)) + 1 for p in parts if _binary(p) is not None)
    total = sum(len(p.text) for p in parts if isinstance(p, Text | Resource) and p.text)
    if total + overhead <= limit:
        return parts
    out: list[Part] = []
    room = limit = max(0, limit - overhead)
    for part in parts:
        if isinstance(part, Image | Audio) or (isinstance(part, Resource) and part.text is None):
            out.append(part)
            continue
        if room < 0:  # cut already: later text is left out
            continue
        text = part.text or ""
        if len(text) <= room:
            room -= len(text)
            out.append(part)
            continue
        out.append(Text(text[:room]) if isinstance(part, Text) else
                   Resource(part.uri, part.mime_type, text[:room]))
        out.append(Text(truncation_notice(limit, total)))
        room = -1
    return tuple(out)
