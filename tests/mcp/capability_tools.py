"""Tools that ask their MCP client for what it may not have declared, for
tests/test_mcp_missing_capability.py: one needs sampling, one an elicitation, one asks for
sampling and does without it, so only a call that *needed* the capability is refused."""

from __future__ import annotations

from tether.tools import tool
from tether.tools.caller import Caller, CallerCannot


@tool
async def summarize(text: str, caller: Caller) -> str:
    """Summarize a text with the client's model."""
    return await caller.sample(f"Summarize: {text}", max_tokens=50)


@tool
async def confirm(question: str, caller: Caller) -> str:
    """Ask the client's user to confirm."""
    answer = await caller.elicit(question, {"type": "object",
                                            "properties": {"ok": {"type": "boolean"}}})
    return answer.action


@tool
async def best_effort(text: str, caller: Caller) -> str:
    """Summarize with the client's model when it can, else return the text as it is."""
    try:
        return await caller.sample(f"Summarize: {text}", max_tokens=50)
    except CallerCannot:
        return text


tools = [summarize, confirm, best_effort]
