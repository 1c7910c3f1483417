"""Agents for the evaluation tests (importable by reference, by worker processes too).

The scripted model multiplies the two numbers of the prompt with its tool and answers; it
answers wrong when the prompt was reworded as "Question: ..." (one of the paraphrase templates),
so a paraphrased evaluation has a known, seed-dependent failure rate. ``make_killer_agent``'s tool
kills its own process the first time it runs for the task "2 * 21" (a marker file, named by
``TETHER_TEST_KILL_MARKER``, says it already did).
"""

from __future__ import annotations

import os
import re
from typing import Any

from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool


def respond(request: Any) -> ModelResponse | str:
    prompt = next(m.content for m in request.messages if m.role == "user")
    results = [m.content for m in request.messages if m.role == "tool"]
    if not results:
        a, b = (int(n) for n in re.findall(r"\d+", prompt)[:2])
        return ModelResponse(tool_calls=(ToolCall("c1", "multiply", {"a": a, "b": b}),))
    value = results[-1]
    if prompt.startswith("Question:"):
        return f"The answer is {value}1."
    return f"The answer is {value}."


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def make_agent() -> Agent:
    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[multiply])


@tool(name="multiply")
def multiply_or_die(a: int, b: int) -> int:
    """Multiply two integers."""
    marker = os.environ.get("TETHER_TEST_KILL_MARKER", "")
    if marker and (a, b) == (2, 21) and not os.path.exists(marker):
        with open(marker, "w") as f:
            f.write(str(os.getpid()))
        os._exit(1)  # the worker dies mid-trial: no result, no grade
    return a * b


def make_killer_agent() -> Agent:
    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[multiply_or_die])
