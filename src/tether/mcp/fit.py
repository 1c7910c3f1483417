"""Whether an MCP tool's definition is fit to be shown to a model at all.

Why: a tool's description and input schema go into every model request as they were listed,
and a hostile (or broken) server controls both. A megabyte of description fills the context
window and the bill of every turn; a schema nested hundreds of levels deep, or one that is not
a JSON Schema, makes a provider refuse the whole request (every tool of the agent is lost, not
only this one) and gives a validator a recursion to fall into. Pinning does not help: it
approves whatever it sees first.

Decision: a definition past any of these bounds is *unfit*, and an unfit tool is offered like
a tool awaiting approval — its name and a one-line note, no server text, an empty schema — and
every call to it is refused before anything is sent, with the reason. The bounds are generous
for real servers (the longest descriptions of common servers are a few thousand characters)
and the same for every server; they are not a filter for instructions, which no size check
finds (the policy stops what such text asks for).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tether.mcp.pins import canonical_json

MAX_DESCRIPTION = 16_000  # characters of a tool's description
MAX_DEFINITION = 256 * 1024  # bytes of a definition's canonical JSON (name, description,
# input schema, annotations)
MAX_DEPTH = 32  # nesting of objects and arrays in an input schema


def depth(value: Any) -> int:
    """How deeply objects and arrays nest in ``value`` (a scalar: 0), without recursing."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        children: Any
        if isinstance(node, Mapping):
            children = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:  # enough to decide
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def unfit(definition: Mapping[str, Any], broken_schema: str | None = None) -> str | None:
    """Why ``definition`` may not be shown to a model, or None. ``broken_schema``: what was found
    wrong with its input schema (``ArgumentSchema.broken``), if anything."""
    description = definition.get("description")
    if isinstance(description, str) and len(description) > MAX_DESCRIPTION:
        return (f"its description is {len(description):,} characters long (at most "
                f"{MAX_DESCRIPTION:,} are shown to a model)")
    schema = definition.get("inputSchema")
    nested = depth(schema)
    if nested > MAX_DEPTH:
        return f"its input schema nests more than {MAX_DEPTH} levels deep"
    size = len(canonical_json(definition).encode())
    if size > MAX_DEFINITION:
        return (f"its definition is {size:,} bytes of JSON (at most {MAX_DEFINITION:,} are "
                "shown to a model)")
    if broken_schema is not None:
        return broken_schema
    return None
