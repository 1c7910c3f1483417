"""A second process writing a session while the console watches (tests/test_console_live.py).

``python console_writer.py STORE_URL SESSION_ID``: runs one session whose tool prints ``ready``
once the session is stored and then waits for a line on stdin before it returns, so the test
decides when the rest of the session is journaled — by this process, not the console's."""

from __future__ import annotations

import sys

from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool


@tool
def wait_for_go() -> str:
    """Wait until the test says go."""
    print("ready", flush=True)
    return sys.stdin.readline().strip() or "eof"


def main(url: str, session_id: str) -> None:
    model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("c1", "wait_for_go", {}),)),
                           "done"])
    agent = Agent(model=model, reasoning=ReAct(), tools=[wait_for_go], store=url, name="writer")
    agent.session("write while watched", session_id=session_id).run()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
