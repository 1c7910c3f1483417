"""The agent the evaluation examples measure (``examples/evaluate.py``, ``tether eval run``).

The model is scripted but fallible the way real ones are: it reads the prompt and the tools it is
offered, and on some wordings or tool sets it slips (answers from memory, refunds part of the
order). Each slip is a function of what the trial showed it, so every run is reproducible.
"""

import random
import re

from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.tools import Calculator


@tool(side_effect=True)
def refund(order_id: str, amount_cents: int) -> str:
    """Refund part or all of an order."""
    return f"refunded {amount_cents} cents on {order_id}"


def respond(request):
    prompt = next(m.content for m in request.messages if m.role == "user")
    tools = ",".join(t.name for t in request.tools)
    slip = random.Random(f"1|{prompt}|{tools}").random() < 0.2
    if any(m.role == "tool" for m in request.messages):
        return "Done: " + request.messages[-1].content
    if "refund" in prompt.lower():
        amount = 5000 if slip else 12000  # the order is 120.00; a slip refunds part of it
        return ModelResponse(tool_calls=(ToolCall("c1", "refund", {"order_id": "A1",
                                                                    "amount_cents": amount}),))
    if slip:
        return "About 400."  # answered from memory
    a, b = re.findall(r"\d+", prompt)[:2]
    return ModelResponse(tool_calls=(ToolCall("c1", "calculator",
                                              {"expression": f"{a} * {b}"}),))


def my_checker(outcome):  # a grader is any function of the trial's Outcome
    return any(c.tool == "refund" and c.ran and c.arguments == {"order_id": "A1",
                                                                "amount_cents": 12000}
               for c in outcome.calls)


def make_agent() -> Agent:
    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[Calculator(), refund])
