"""ReAct: think, act with tools, observe, repeat until the model answers without a tool call.

Decision: the strategy is the loop and nothing else. Budgets, policy, loop detection and the
record all live behind the handle; a stop is raised from inside it and handled by the session.
"""

from __future__ import annotations

from tether.runtime.strategy.handle import Handle


class ReAct:
    def __repr__(self) -> str:
        return "ReAct()"

    async def run(self, handle: Handle) -> str:
        while True:
            turn = await handle.ask_model()
            if not turn.tool_calls:
                return turn.text
            await handle.call_tools(turn.tool_calls)
