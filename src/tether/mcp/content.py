"""What an MCP tool result becomes in the conversation: text, never raw binary.

Why: a model reads text; a base64 image or a binary resource dumped into the conversation costs
tokens, says nothing, and can smuggle data past a reader. So text blocks are joined as they are,
embedded text resources are shown with their URI, and every other block (image, audio, blob,
resource link, anything a newer server invents) is summarised in one bracketed line with its type,
MIME type and size. Structured content is shown as JSON only when the server sent no text, since
the spec asks servers to mirror it in a text block.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


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


def render(content: Sequence[Mapping[str, Any]], structured: Any = None) -> str:
    """One string for the model from a result's content blocks (wire form, camelCase)."""
    parts = [_block(block) for block in content if isinstance(block, Mapping)]
    has_text = any(isinstance(b, Mapping) and b.get("type") == "text" for b in content)
    if structured is not None and not has_text:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    return "\n".join(parts)
