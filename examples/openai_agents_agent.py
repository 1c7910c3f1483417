"""An OpenAI Agents SDK agent under tether (README: "Under the OpenAI Agents SDK";
docs/guide/integrations.md).

    pip install -e '.[openai-agents]'
    python examples/openai_agents_agent.py

The SDK runs its own loop (``Runner.run``); tether decides, budgets and journals every call of
the tools it governs and meters every model call. The model here is the SDK's own
``ScriptedModel`` playing a script, so the example needs no key and costs nothing: it tries to
mail someone the policy forbids (refused, with the reason, and the model reads it), then the
CEO (a person must approve: ``Runner.run`` returns with the SDK's interruptions and resumes once
approved), and the journal verifies and reads as ``tether audit show`` shows it.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.testing.model import ModelCall
from agents.usage import Usage

from tether import Budget, Decision, Effect
from tether.integrations.openai_agents import OpenAIAgentsRun
from tether.journal.chain import verify_chain
from tether.journal.views.timeline import header, timeline
from tether.policy import Action, Context, Resource, Subject
from tether.store import SQLiteStore
from tether.tools import ToolMeta

outbox: list[str] = []


@function_tool
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


def turn(call: ModelCall) -> ModelStep:
    """The model: mail a friend outside, then the CEO, then say what happened."""
    items = [i for i in call.input if isinstance(i, dict)] if isinstance(call.input, list) else []
    asked = sum(i.get("type") == "function_call" for i in items)
    usage = Usage(requests=1, input_tokens=120, output_tokens=20, total_tokens=140)
    if asked < 2:
        to = "friend@gmail.test" if asked == 0 else "ceo@corp.test"
        return ModelStep(output=[function_call("send_email", {"to": to, "body": "the Q3 numbers"},
                                               call_id=f"call_{asked}")], usage=usage)
    said = [str(i["output"]) for i in items if i.get("type") == "function_call_output"]
    return ModelStep(output=[assistant_message(f"Done: {'; '.join(said)}")], usage=usage)


async def main(folder: Path) -> None:
    store = SQLiteStore(folder / "journal.db")
    request = "send the Q3 numbers to my friend and to the CEO"
    run = OpenAIAgentsRun([send_email], model=ScriptedModel([ModelStep.respond(turn)] * 4),
                          policy=MailRules(), request=request, store=store,
                          budget=Budget(max_tokens=20_000),
                          meta={"send_email": ToolMeta(side_effect=True, egress=True,
                                                       parties=frozenset({"to"}))})
    assert run.model is not None
    agent = Agent(name="mail", model=run.model, tools=run.tools)
    paused = await Runner.run(agent, request)
    for item in paused.interruptions:  # the SDK's own pause: what a person is asked
        print(f"paused: {item.tool_name}({item.arguments}) waits for a person")
    for pending in run.approvals.pending():  # decided in tether's store, not the SDK's flag
        run.approvals.approve(pending.id, approver="cfo", note="yes, the CEO may have them")
    state = paused.to_state()
    run.resume_with(state)
    done = await Runner.run(agent, state)
    run.close(done.final_output)
    print("answer:", done.final_output)
    print("sent:", outbox, "(the friend's mail was refused)")
    events = store.read(run.id)
    print("journal verifies" if verify_chain(events) is None else "JOURNAL BROKEN")
    print("\n".join(header(events) + timeline(events)))


if __name__ == "__main__":
    set_tracing_disabled(True)  # the SDK would export its traces to OpenAI
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
