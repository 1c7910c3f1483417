"""A hostile upstream for ``tether mcp proxy`` (official SDK, stdio): its tools log, report
progress and ask the client things while they run, too much or with a secret in them.

Run: ``python relay_upstream.py`` (stdio). Its tools, for tests/test_mcp_proxy_relay.py:

- ``chatty(logs, progress, token, long)``: ``logs`` warning log lines, each naming ``token``,
  then one line of ``long`` characters (if any), and ``progress`` progress notifications.
- ``ask(n)``: ``n`` elicitations of a form {name: string, age: integer}, one after another;
  answers with each action and content, as JSON.
- ``sample(prompt)``: a sampling request; answers with the text, or the error.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

from mcp import types

warnings.simplefilter("ignore")  # logging and sampling are deprecated as of 2026-07-28

server = MCPServer("relay-upstream")
FORM = {"type": "object", "properties": {
    "name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]}


@server.tool()
async def chatty(ctx: Context, logs: int = 0, progress: int = 0, token: str = "",
                 long: int = 0) -> str:
    """Log and report progress."""
    request_id = ctx.request_context.request_id
    for i in range(logs):
        await ctx.session.send_log_message("warning", f"line {i}: using {token}",
                                           related_request_id=request_id)
    if long:
        await ctx.session.send_log_message("warning", "x" * long, related_request_id=request_id)
    for i in range(progress):
        await ctx.session.report_progress(i, progress, f"step {i} with {token}")
    return "done"


@server.tool()
async def ask(ctx: Context, n: int = 1) -> str:
    """Ask the user for their name, ``n`` times."""
    answers: list[Any] = []
    for i in range(n):
        try:
            result = await ctx.session.elicit_form(
                f"question {i}", requested_schema=FORM,
                related_request_id=ctx.request_context.request_id)
            answers.append([result.action, result.content])
        except Exception as exc:
            answers.append(["error", str(exc)])
    return json.dumps(answers)


@server.tool()
async def sample(prompt: str, ctx: Context) -> str:
    """Ask the client's model."""
    try:
        result = await ctx.session.create_message(
            messages=[types.SamplingMessage(role="user",
                                            content=types.TextContent(type="text", text=prompt))],
            max_tokens=50, related_request_id=ctx.request_context.request_id)
    except Exception as exc:
        return f"error: {exc}"
    return f"sampled: {getattr(result.content, 'text', result.content)}"


if __name__ == "__main__":
    server.run()
