"""A conformance client for ``elicitation-sep1034-client-defaults``, built on tether's MCP client.

Run by the suite: ``conformance client --command "python conformance_elicitation_client.py"
--scenario elicitation-sep1034-client-defaults``; the suite appends the server's URL. A tether
Agent (scripted) calls the scenario's tool through the chokepoint; the server's elicitation goes
to that call's session, where the server's configured answerer accepts the form with the
schema's defaults (``tether.mcp.requests.accept_defaults``; the SDK fills none). Exits 0 when
the call succeeded, 1 otherwise.
"""

from __future__ import annotations

import os
import sys

from tether import Agent, ReAct, ScriptedModel
from tether.mcp import MCPServer, accept_defaults, connect
from tether.types import ModelResponse, ToolCall

SCENARIO = "elicitation-sep1034-client-defaults"
TOOL = "test_client_elicitation_defaults"


def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", SCENARIO)
    if scenario != SCENARIO:
        print(f"this driver runs only {SCENARIO}, not {scenario}", file=sys.stderr)
        return 2
    server = MCPServer.http("conformance", url, prefix="", elicitation=accept_defaults,
                            call_timeout=20)
    with connect(server) as tools:
        model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("c1", TOOL, {}),)), "done"])
        session = Agent(model=model, reasoning=ReAct(), tools=[*tools]).session(
            "answer the server's question with its defaults")
        result = session.run()
    outcome = [(r.status, r.content) for r in result.trajectory.tool_results]
    print(outcome)
    answered = [e.data for e in session.replay() if e.type == "elicitation.answered"]
    print(answered)
    ok = len(outcome) == 1 and outcome[0][0] == "ok" and [a["action"] for a in answered] == [
        "accept"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[-1]))
