"""A pydantic-ai agent under tether (README: "Under pydantic-ai"; docs/guide/integrations.md).

    pip install -e '.[pydantic-ai]'
    python examples/pydantic_ai_agent.py

pydantic-ai runs its own loop; tether decides, budgets and journals every tool call it makes and
meters every model request. The model here is pydantic-ai's ``FunctionModel`` playing a script,
so the example needs no key and costs nothing: it tries to mail someone the policy forbids
(refused, with the reason, and the model reads it), then the CEO (a person must approve: the
run pauses with pydantic-ai's ``DeferredToolRequests`` and resumes once approved), and the
journal verifies and reads as ``tether audit show`` shows it.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from tether import Budget, Decision, Effect
from tether.integrations.pydantic_ai import PydanticAIRun
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


def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model: mail a friend outside, then the CEO, then say what happened."""
    turns = sum(isinstance(m, ModelResponse) for m in messages)
    usage = RequestUsage(input_tokens=120, output_tokens=20)
    if turns == 0:
        return ModelResponse([ToolCallPart("send_email", {"to": "friend@gmail.test",
                                                          "body": "the Q3 numbers"})], usage=usage)
    if turns == 1:
        return ModelResponse([ToolCallPart("send_email", {"to": "ceo@corp.test",
                                                          "body": "the Q3 numbers"})], usage=usage)
    said = [p.model_response_str() for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
    return ModelResponse([TextPart(f"Done: {'; '.join(said)}")], usage=usage)


async def main(folder: Path) -> None:
    store = SQLiteStore(folder / "journal.db")
    request = "send the Q3 numbers to my friend and to the CEO"
    run = PydanticAIRun([send_email], model=FunctionModel(script), policy=MailRules(),
                        request=request, store=store, budget=Budget(max_tokens=20_000),
                        meta={"send_email": ToolMeta(side_effect=True, egress=True,
                                                     parties=frozenset({"to"}))})
    agent = Agent(run.model, toolsets=[run.toolset],  # type: ignore[arg-type]
                  output_type=[str, DeferredToolRequests])
    paused = await agent.run(request)
    assert isinstance(paused.output, DeferredToolRequests)
    for call in paused.output.approvals:  # what a person is asked, and tether's approval id
        print(f"paused: {call.tool_name}({call.args}) waits for", paused.output.metadata[
            call.tool_call_id]["tether_approval_id"])
    for pending in run.approvals.pending():
        run.approvals.approve(pending.id, approver="cfo", note="yes, the CEO may have them")
    done = await agent.run(message_history=paused.all_messages(),
                           deferred_tool_results=run.resume_with(paused.output))
    run.close(done.output)
    print("answer:", done.output)
    print("sent:", outbox, "(the friend's mail was refused)")
    events = store.read(run.id)
    print("journal verifies" if verify_chain(events) is None else "JOURNAL BROKEN")
    print("\n".join(header(events) + timeline(events)))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
