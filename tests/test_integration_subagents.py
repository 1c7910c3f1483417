"""A sub-agent started inside a governed tool: governed or refused, never a hang, under every
adapter.

A sub-run made there with ``parent=run`` draws on the call's lease of the budget, obeys the
parent's policy too and charges its spend back. A sub-agent given the run's own tools or model
is refused at its first call (it would wait for the call it runs inside); the parent's call
fails with that message and the parent run goes on. A tether Agent started there runs, governed
as a session of its own. Every wait is bounded: a hang fails the test instead of stalling the
suite."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("agents")
pytest.importorskip("pydantic_ai")

import tether
from tether import Agent, Decision, Effect, ReAct, ScriptedModel
from tether.policy import Action, Context, Resource, Subject
from tether.tools import Calculator
from tether.tools.base import ToolMeta

ROOT = Path(__file__).resolve().parents[1]
SRC = Path(tether.__file__).resolve().parents[1]  # the tether under test, in the child too
BOUND = 30.0  # seconds a run may take before the test calls it a hang
DELEGATE = ("delegate", {"task": "add two and three"})
REFUSED = "called from inside one of its own tool calls"


class Allow:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        return Decision(Effect.ALLOW, "ok", "all")


def delegated(events: list[Any]) -> dict[str, Any]:
    (result,) = [e.data for e in events if e.type == "tool.result"]
    return result


async def test_pydantic_ai_a_sub_agent_on_the_same_run_is_refused_not_hung() -> None:
    from pydantic_ai import Agent as AIAgent
    from pydantic_ai import DeferredToolRequests
    from pydantic_ai.models.function import FunctionModel

    from test_integration_pydantic_ai import scripted
    from tether.integrations.pydantic_ai import PydanticAIRun

    held: dict[str, Any] = {}

    async def delegate(task: str) -> str:
        """Ask a helper agent."""
        return str((await held["agent"].run(task)).output)

    run = PydanticAIRun([delegate], model=FunctionModel(scripted(DELEGATE)), policy=Allow(),
                        request="x", meta={"delegate": ToolMeta()})
    held["agent"] = AIAgent(run.model, toolsets=[run.toolset],
                            output_type=[str, DeferredToolRequests])  # type: ignore[arg-type]
    answer = await asyncio.wait_for(held["agent"].run("x"), BOUND)
    result = delegated(run.journal.events())
    assert result["status"] == "error" and REFUSED in result["content"]
    assert REFUSED in str(answer.output) and run.governed.stopped is None


async def test_pydantic_ai_a_tether_agent_inside_a_governed_tool_runs_governed() -> None:
    from pydantic_ai import Agent as AIAgent
    from pydantic_ai.models.function import FunctionModel

    from test_integration_pydantic_ai import scripted
    from tether.integrations.pydantic_ai import PydanticAIRun

    helper = Agent(model=ScriptedModel.tool_then_answer("calculator", {"expression": "2+3"}, "5"),
                   reasoning=ReAct(), tools=[Calculator()])

    async def delegate(task: str) -> str:
        """Ask a helper agent."""
        return (await helper.session(task).arun()).answer

    run = PydanticAIRun([delegate], model=FunctionModel(scripted(DELEGATE)), policy=Allow(),
                        request="x", meta={"delegate": ToolMeta()})
    answer = await asyncio.wait_for(AIAgent(run.model, toolsets=[run.toolset]).run("x"), BOUND)
    assert answer.output == "done: 5" and delegated(run.journal.events())["status"] == "ok"


async def test_langgraph_a_sub_agent_on_the_same_run_is_refused_not_hung() -> None:
    from langchain.agents import create_agent

    from test_integration_langgraph import scripted
    from tether.integrations.langgraph import LangGraphRun

    held: dict[str, Any] = {}

    async def delegate(task: str) -> str:
        """Ask a helper agent."""
        state = await held["agent"].ainvoke({"messages": [{"role": "user", "content": task}]})
        return str(state["messages"][-1].content)

    model = scripted([DELEGATE])
    run = LangGraphRun([delegate], model=model, policy=Allow(), request="x",
                       meta={"delegate": ToolMeta()})
    held["agent"] = create_agent(model, tools=run.tools, middleware=[run.middleware])
    state = await asyncio.wait_for(held["agent"].ainvoke(
        {"messages": [{"role": "user", "content": "x"}]}), BOUND)
    result = delegated(run.journal.events())
    assert result["status"] == "error" and REFUSED in result["content"]
    assert REFUSED in str(state["messages"][-1].content)


SYNC_SCENARIO = """
from langchain.agents import create_agent
from test_integration_langgraph import scripted
from test_integration_subagents import DELEGATE, Allow, delegated
from tether.integrations.langgraph import LangGraphRun
from tether.tools.base import ToolMeta

held = {}

def delegate(task: str) -> str:
    \"\"\"Ask a helper agent.\"\"\"
    state = held["agent"].invoke({"messages": [{"role": "user", "content": task}]})
    return str(state["messages"][-1].content)

model = scripted([DELEGATE])
run = LangGraphRun([delegate], model=model, policy=Allow(), request="x",
                   meta={"delegate": ToolMeta()})
held["agent"] = create_agent(model, tools=run.tools, middleware=[run.middleware])
state = held["agent"].invoke({"messages": [{"role": "user", "content": "x"}]})
run.close(state)
print(delegated(run.journal.events())["content"])
"""


def test_langgraph_a_sub_agent_on_the_same_run_through_the_sync_api_is_refused_not_hung(
        ) -> None:
    # its own process: a sync graph that deadlocks holds LangGraph's worker threads, which the
    # interpreter waits for at exit; the process is ended at the bound instead
    done = subprocess.run([sys.executable, "-c", SYNC_SCENARIO], capture_output=True,
                          text=True, timeout=BOUND, cwd=ROOT, env={
                              **os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{ROOT / 'tests'}"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert REFUSED in done.stdout


async def test_agents_sdk_a_sub_agent_on_the_same_run_is_refused_not_hung() -> None:
    from agents import Agent as SDKAgent
    from agents import Runner, function_tool, set_tracing_disabled

    from test_integration_openai_agents import Script
    from tether.integrations.openai_agents import OpenAIAgentsRun

    set_tracing_disabled(True)
    held: dict[str, Any] = {}

    async def delegate(task: str) -> str:
        """Ask a helper agent."""
        return str((await Runner.run(held["agent"], task)).final_output)

    script = Script(DELEGATE)
    run = OpenAIAgentsRun([function_tool(delegate)], model=script.model, policy=Allow(),
                          request="x", meta={"delegate": ToolMeta()})
    assert run.model is not None
    held["agent"] = SDKAgent(name="helper", model=run.model, tools=run.tools)
    answer = await asyncio.wait_for(Runner.run(held["agent"], "x"), BOUND)
    result = delegated(run.journal.events())
    assert result["status"] == "error" and REFUSED in result["content"]
    assert REFUSED in str(answer.final_output)


async def test_a_sub_run_draws_on_its_parents_call_and_is_bound_by_its_denials() -> None:
    from pydantic_ai import Agent as AIAgent
    from pydantic_ai.models.function import FunctionModel

    from test_integration_pydantic_ai import Rules, scripted
    from tether import Budget
    from tether.integrations.pydantic_ai import PydanticAIRun

    sent: list[str] = []

    def send_email(to: str, body: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    subs: list[PydanticAIRun] = []

    async def delegate(task: str) -> str:
        """Ask a helper agent."""
        sub = PydanticAIRun([send_email], parent=run, policy=Allow(), request=task,
                            model=FunctionModel(scripted(
                                ("send_email", {"to": "mallory@evil.test", "body": "x"}),
                                ("send_email", {"to": "alice@corp.test", "body": "y"}))),
                            meta={"send_email": ToolMeta()}, budget=Budget(max_tokens=10_000))
        subs.append(sub)
        answer = str((await AIAgent(sub.model, toolsets=[sub.toolset]).run(task)).output)
        sub.close(answer)
        return answer

    run = PydanticAIRun([delegate], model=FunctionModel(scripted(DELEGATE)), policy=Rules(),
                        request="x", meta={"delegate": ToolMeta()},
                        budget=Budget(max_tokens=1_000))
    await asyncio.wait_for(AIAgent(run.model, toolsets=[run.toolset]).run("x"), BOUND)
    assert sent == ["alice@corp.test"]  # the parent's policy denies mallory: so does the sub-run
    (sub,) = subs
    start = sub.journal.events()[0].data
    assert start["budget"]["max_tokens"] < 1_000  # the parent's lease, not its own 10 000
    assert start["context"]["parent_session"] == run.id
    charged = [e.data for e in run.journal.events() if e.type == "subagent.charge"]
    assert charged and charged[0]["input_tokens"] == 150  # three model calls of 50: the parent's
    assert run.governed.remaining_budget()["tokens"] == 1_000 - 2 * 60 - 180


def test_a_sub_run_outside_its_parents_tool_calls_is_refused() -> None:
    from tether.integrations.pydantic_ai import PydanticAIRun

    def look() -> str:
        """Look."""
        return "seen"

    run = PydanticAIRun([look], policy=Allow(), request="x")
    with pytest.raises(ValueError, match="inside one of its tool calls"):
        PydanticAIRun([look], policy=Allow(), request="x", parent=run)


def mailer(sent: list[str]) -> Any:
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"
    return send_email


MALLORY_THEN_ALICE = (("send_email", {"to": "mallory@evil.test", "body": "x"}),
                      ("send_email", {"to": "alice@corp.test", "body": "y"}))


def charged_back(run: Any, sub: Any) -> None:
    """The sub-run recorded its parent, and its spend landed on the parent's call."""
    assert sub.journal.events()[0].data["context"]["parent_session"] == run.id
    assert [e.type for e in run.journal.events()].count("subagent.charge") == 1


async def test_langgraph_a_sub_run_is_bound_by_its_parents_denials() -> None:
    from langchain.agents import create_agent

    from test_integration_langgraph import Rules, scripted
    from tether.integrations.langgraph import LangGraphRun

    sent: list[str] = []
    subs: list[LangGraphRun] = []

    async def delegate(task: str) -> str:
        """Ask a helper agent."""
        model = scripted(*[[c] for c in MALLORY_THEN_ALICE])
        sub = LangGraphRun([mailer(sent)], parent=run, policy=Allow(), request=task,
                           model=model, meta={"send_email": ToolMeta()})
        subs.append(sub)
        state = await create_agent(model, tools=sub.tools, middleware=[sub.middleware]).ainvoke(
            {"messages": [{"role": "user", "content": task}]})
        sub.close(state)
        return str(state["messages"][-1].content)

    model = scripted([DELEGATE])
    run = LangGraphRun([delegate], model=model, policy=Rules(), request="x",
                       meta={"delegate": ToolMeta()})
    agent = create_agent(model, tools=run.tools, middleware=[run.middleware])
    await asyncio.wait_for(agent.ainvoke({"messages": [{"role": "user", "content": "x"}]}),
                           BOUND)
    assert sent == ["alice@corp.test"]
    charged_back(run, subs[0])


async def test_agents_sdk_a_sub_run_is_bound_by_its_parents_denials() -> None:
    from agents import Agent as SDKAgent
    from agents import Runner, function_tool, set_tracing_disabled

    from test_integration_openai_agents import Rules, Script
    from tether.integrations.openai_agents import OpenAIAgentsRun

    set_tracing_disabled(True)
    sent: list[str] = []
    subs: list[OpenAIAgentsRun] = []

    async def delegate(task: str) -> str:
        """Ask a helper agent."""
        script = Script(*MALLORY_THEN_ALICE)
        sub = OpenAIAgentsRun([function_tool(mailer(sent))], parent=run, policy=Allow(),
                              request=task, model=script.model,
                              meta={"send_email": ToolMeta()})
        subs.append(sub)
        assert sub.model is not None
        answer = await Runner.run(SDKAgent(name="helper", model=sub.model, tools=sub.tools),
                                  task)
        sub.close(str(answer.final_output))
        return str(answer.final_output)

    script = Script(DELEGATE)
    run = OpenAIAgentsRun([function_tool(delegate)], model=script.model, policy=Rules(),
                          request="x", meta={"delegate": ToolMeta()})
    assert run.model is not None
    await asyncio.wait_for(Runner.run(SDKAgent(name="boss", model=run.model, tools=run.tools),
                                      "x"), BOUND)
    assert sent == ["alice@corp.test"]
    charged_back(run, subs[0])
