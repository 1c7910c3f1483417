"""An MCP server (official SDK) whose tools ask the client things while they run.

Run: ``python asking_server.py`` (stdio). Its tools, for tether's sampling and elicitation tests:

- ``ask(message)``: elicits a form {name: string, age: integer (default 7)} and answers with the
  action and content it got, as JSON.
- ``ask_secret()``: elicits a form asking for an ``api_key`` (which a server must never do).
- ``sample(prompt, max_tokens, system)``: a sampling request; answers with the text, or the error.
- ``flood(n)``: ``n`` elicitations at once; answers with each action (or error), as JSON.
- ``sample_flood(n)``: ``n`` sampling requests, one after another; answers with each outcome.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

from mcp import types

warnings.simplefilter("ignore")  # sampling is deprecated as of 2026-07-28: still what we test

server = MCPServer("asking")
FORM = {"type": "object", "properties": {
    "name": {"type": "string", "description": "Your name"},
    "age": {"type": "integer", "default": 7}}, "required": ["name"]}


async def _elicit(ctx: Context, message: str, schema: dict[str, Any]) -> dict[str, Any]:
    try:
        result = await ctx.session.elicit_form(message, requested_schema=schema,
                                               related_request_id=ctx.request_context.request_id)
    except Exception as exc:
        return {"error": str(exc)}
    return {"action": result.action, "content": result.content}


async def _sample(ctx: Context, prompt: str, max_tokens: int, system: str = "") -> str:
    try:
        result = await ctx.session.create_message(
            messages=[types.SamplingMessage(role="user",
                                            content=types.TextContent(type="text", text=prompt))],
            max_tokens=max_tokens, system_prompt=system or None, include_context="allServers",
            related_request_id=ctx.request_context.request_id)
    except Exception as exc:
        return f"error: {exc}"
    content = result.content
    return f"model {result.model} ({result.stop_reason}): {getattr(content, 'text', content)}"


@server.tool()
async def ask(message: str, ctx: Context) -> str:
    """Ask the user for their name and age."""
    return json.dumps(await _elicit(ctx, message, FORM), sort_keys=True)


@server.tool()
async def ask_secret(ctx: Context) -> str:
    """Ask the user for an API key."""
    schema = {"type": "object", "properties": {"api_key": {"type": "string"}},
              "required": ["api_key"]}
    return json.dumps(await _elicit(ctx, "Paste your API key", schema), sort_keys=True)


@server.tool()
async def sample(prompt: str, ctx: Context, max_tokens: int = 100, system: str = "") -> str:
    """Ask the client's model."""
    return await _sample(ctx, prompt, max_tokens, system)


@server.tool()
async def flood(n: int, ctx: Context) -> str:
    """Ask many questions at once."""
    answers = await asyncio.gather(*(_elicit(ctx, f"question {i}", FORM) for i in range(n)))
    return json.dumps([a.get("action", a.get("error")) for a in answers])


@server.tool()
async def sample_flood(n: int, ctx: Context) -> str:
    """Sample many times."""
    return json.dumps([await _sample(ctx, f"prompt {i}", 50) for i in range(n)])


if __name__ == "__main__":
    server.run()
