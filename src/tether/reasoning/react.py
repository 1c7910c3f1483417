"""ReAct: think, act with tools, observe, repeat until the model answers without a tool call.

Decision: the strategy is the loop and nothing else. Budgets, policy, loop detection and the
record all live behind the handle; a stop is raised from inside it and handled by the session.
"""

from __future__ import annotations

from tether.runtime.strategy.handle import Handle


class ReAct:
    """The default strategy: ask the model; run the tool calls it makes (each decided, budgeted
    and journaled behind the handle); show it the results; repeat until it answers without a
    tool call. Takes no arguments: ``Agent(model=..., reasoning=ReAct())``."""

    def __repr__(self) -> str:
        return "ReAct()"

    async def run(self, handle: Handle) -> str:
        """Drive one run through ``handle``; the model's last text is the answer. A budget,
        loop or denial stop is raised from inside the handle and handled by the session."""
        while True:
            turn = await handle.ask_model()
            if not turn.tool_calls:
                return turn.text
            await handle.call_tools(turn.tool_calls)
