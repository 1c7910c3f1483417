"""What an MCP tool result becomes in the conversation: text, never raw binary.

Why: a model reads text; a base64 image or a binary resource dumped into the conversation costs
tokens, says nothing, and can smuggle data past a reader. So text blocks are joined as they are,
embedded text resources are shown with their URI, and every other block (image, audio, blob,
resource link, anything a newer server invents) is summarised in one bracketed line with its type,
MIME type and size. Structured content is shown as JSON only when the server sent no text, since
the spec asks servers to mirror it in a text block.

The rendering keeps the blocks it was made from (``Rendered.blocks``): a tool of a proxied
server hands them on to the proxy's clients as they are (``parts_of``: ``tether.tools.content``
parts, binary decoded, MIME types checked), while the model and the journal get this text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tether.tools.content import Audio, Image, Part, Resource, Text, check_mime, decode_base64


def _size(data: Any) -> str:
    if not isinstance(data, str):
        return "unknown size"
    n = len(data) * 3 // 4 - data[-2:].count("=")  # base64 length to bytes
    return f"{n} bytes" if n < 10_240 else f"{n / 1024:.0f} KiB"


def _block(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return (f"[{kind} content: {block.get('mimeType', 'unknown type')}, "
                f"{_size(block.get('data'))}; not shown]")
    if kind == "resource_link":
        name = block.get("name") or block.get("title")
        label = f"{name} " if name else ""
        mime = f", {block['mimeType']}" if block.get("mimeType") else ""
        return f"[resource link: {label}<{block.get('uri', '?')}>{mime}]"
    if kind == "resource":
        resource = block.get("resource") or {}
        uri = resource.get("uri", "?")
        if isinstance(resource.get("text"), str):
            return f"[resource {uri}]\n{resource['text']}"
        return (f"[resource {uri}: {resource.get('mimeType', 'binary')}, "
                f"{_size(resource.get('blob'))}; not shown]")
    return f"[{kind or 'unknown'} content; not shown]"


class Rendered(str):
    """A result's text for the model, with the content blocks it was rendered from."""

    __slots__ = ("blocks",)
    blocks: tuple[Mapping[str, Any], ...]


def render(content: Sequence[Mapping[str, Any]], structured: Any = None) -> str:
    """One string for the model from a result's content blocks (wire form, camelCase); it is a
    ``Rendered`` holding the blocks (with the structured content as a text block when it was
    shown)."""
    blocks = [block for block in content if isinstance(block, Mapping)]
    parts = [_block(block) for block in blocks]
    has_text = any(b.get("type") == "text" for b in blocks)
    if structured is not None and not has_text:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
        blocks.append({"type": "text", "text": parts[-1]})
    rendered = Rendered("\n".join(parts))
    rendered.blocks = tuple(blocks)
    return rendered


def has_binary(text: str) -> bool:
    """Whether ``text`` was rendered from more than text blocks."""
    return any(b.get("type") != "text" for b in getattr(text, "blocks", ()))


def parts_of(blocks: Sequence[Mapping[str, Any]]) -> tuple[Part, ...]:
    """Content blocks (wire form) as tether's parts: text, image, audio and embedded resources
    as they are (binary decoded; ValueError for malformed base64 or a bogus MIME type), any
    other block (a resource link, a kind a newer server invents) as its one line of text."""
    out: list[Part] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            out.append(Text(str(block.get("text", ""))))
        elif kind == "image":
            out.append(Image(decode_base64(block.get("data"), "image content"),
                             check_mime(block.get("mimeType"), "image")))
        elif kind == "audio":
            out.append(Audio(decode_base64(block.get("data"), "audio content"),
                             check_mime(block.get("mimeType"), "audio")))
        elif kind == "resource" and isinstance(block.get("resource"), Mapping):
            resource = block["resource"]
            mime = resource.get("mimeType")
            uri = str(resource.get("uri") or "")
            if isinstance(resource.get("text"), str):
                out.append(Resource(uri, mime, text=resource["text"]))
            else:
                out.append(Resource(uri, mime,
                                    blob=decode_base64(resource.get("blob"), "resource blob")))
        else:
            out.append(Text(_block(block)))
    return tuple(out)
