"""A LangGraph agent under tether (README: "Under LangGraph"; docs/guide/integrations.md).

    pip install -e '.[langgraph]'
    python examples/langgraph_agent.py

LangChain's ``create_agent`` runs its own LangGraph loop; tether's middleware decides, budgets
and journals every tool call it makes and meters every model call. The model here is a scripted
chat model, so the example needs no key and costs nothing: it tries to mail someone the policy
forbids (refused, with the reason, and the model reads it), then the CEO (a person must approve:
the graph pauses with LangGraph's ``interrupt`` and resumes once approved), and the journal
verifies and reads as ``tether audit show`` shows it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from tether import Budget, Decision, Effect
from tether.integrations.langgraph import LangGraphRun
from tether.journal.chain import verify_chain
from tether.journal.views.timeline import header, timeline
from tether.policy import Action, Context, Resource, Subject
from tether.store import SQLiteStore
from tether.tools import ToolMeta

outbox: list[str] = []


def send_email(to: str, body: str) -> str:
    """Send an email."""
    outbox.append(to)
    return f"sent to {to}"


class MailRules:
    """No mail outside the company; mail to the CEO waits for a person."""

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        to = str(action.arguments.get("to", ""))
        if not to.endswith("@corp.test"):
            return Decision(Effect.DENY, f"{to} is outside the company", "mail")
        if to == "ceo@corp.test":
            return Decision(Effect.REQUIRE_APPROVAL, "mail to the CEO needs a person", "mail")
        return Decision(Effect.ALLOW, "colleagues may be mailed", "mail")


class ScriptedModel(BaseChatModel):
    """The model: mail a friend outside, then the CEO, then say what happened."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **settings: Any) -> Any:
        return self.bind(**settings)  # the output cap tether sets arrives as max_tokens

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **settings: Any) -> ChatResult:
        turns = sum(isinstance(m, AIMessage) for m in messages)
        usage: Any = {"input_tokens": 120, "output_tokens": 20, "total_tokens": 140}
        to = {0: "friend@gmail.test", 1: "ceo@corp.test"}.get(turns)
        if to is not None:
            message = AIMessage(content="", usage_metadata=usage, tool_calls=[{
                "name": "send_email", "args": {"to": to, "body": "the Q3 numbers"},
                "id": f"call_{turns}", "type": "tool_call"}])
        else:
            said = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
            message = AIMessage(content=f"Done: {'; '.join(said)}", usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])


def main(folder: Path) -> None:
    store = SQLiteStore(folder / "journal.db")
    request = "send the Q3 numbers to my friend and to the CEO"
    model = ScriptedModel()
    run = LangGraphRun([send_email], model=model, policy=MailRules(), request=request,
                       store=store, budget=Budget(max_tokens=20_000),
                       meta={"send_email": ToolMeta(side_effect=True, egress=True,
                                                    parties=frozenset({"to"}))})
    agent = create_agent(model, tools=run.tools, middleware=[run.middleware],
                         checkpointer=InMemorySaver())  # approvals pause the graph
    thread = {"configurable": {"thread_id": "q3"}}
    paused = agent.invoke({"messages": [{"role": "user", "content": request}]}, thread)
    for asked in paused["__interrupt__"]:  # what a person is asked, and tether's approval id
        value = asked.value
        print(f"paused: {value['tool']}({value['arguments']}) waits for",
              value["tether_approval_id"], f"({value['reason']})")
    for pending in run.approvals.pending():
        run.approvals.approve(pending.id, approver="cfo", note="yes, the CEO may have them")
    done = agent.invoke(Command(resume="approved"), thread)  # tether's store decides, once
    run.close(done)
    print("answer:", done["messages"][-1].content)
    print("sent:", outbox, "(the friend's mail was refused)")
    events = store.read(run.id)
    print("journal verifies" if verify_chain(events) is None else "JOURNAL BROKEN")
    print("\n".join(header(events) + timeline(events)))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(Path(tmp))
