"""The OpenAI Agents SDK's real agent loop (``Runner.run`` with its ``ScriptedModel``) under
tether."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunState, Runner, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.testing.model import ModelCall
from agents.usage import Usage as AgentsUsage

from tether import Budget, Decision, Effect
from tether.cli import main
from tether.evals.injection import policy_named
from tether.integrations.governed import RunStopped
from tether.integrations.openai_agents import OpenAIAgentsRun
from tether.journal.chain import verify_chain
from tether.journal.views.timeline import header, timeline
from tether.policy import Action, Context, Resource, Subject
from tether.policy.overlay import parse_overlay
from tether.runtime.stop import StopReason
from tether.store.sqlite import SQLiteStore
from tether.tools.base import ToolMeta

ROOT = Path(__file__).resolve().parents[1]


class Mail:
    """A mailbox whose sends are counted: what the tests assert never happened did not."""

    def __init__(self, inbox: str = "Lunch is at noon.") -> None:
        self.sent: list[tuple[str, str]] = []
        self.inbox = inbox

    def tools(self) -> list[Any]:
        @function_tool
        def send_email(to: str, body: str) -> str:
            """Send an email."""
            self.sent.append((to, body))
            return f"sent to {to}"

        @function_tool
        def read_inbox() -> str:
            """Read the inbox."""
            return self.inbox

        return [send_email, read_inbox]


META = {"send_email": ToolMeta(side_effect=True, egress=True, parties=frozenset({"to"}),
                               intents=frozenset({"email", "send", "tell"})),
        "read_inbox": ToolMeta(output_trust="untrusted")}


class Rules:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        to = action.arguments.get("to")
        if to == "mallory@evil.test":
            return Decision(Effect.DENY, "mallory is not a colleague", "mail")
        if to == "ceo@corp.test":
            return Decision(Effect.REQUIRE_APPROVAL, "mail to the CEO needs a person", "mail")
        return Decision(Effect.ALLOW, "ok", "mail")


def usage(input_tokens: int = 50, output_tokens: int = 10) -> AgentsUsage:
    return AgentsUsage(requests=1, input_tokens=input_tokens, output_tokens=output_tokens,
                       total_tokens=input_tokens + output_tokens)


def outputs(call: ModelCall) -> list[str]:
    """The tool outputs the model was sent, in order."""
    items = [] if isinstance(call.input, str) else call.input
    return [str(i["output"]) for i in items
            if isinstance(i, dict) and i.get("type") == "function_call_output"]


class Script:
    """A model that makes ``calls`` one turn each, then answers with the last tool output; it
    answers for as long as it is asked (a resumed run asks it again)."""

    def __init__(self, *calls: tuple[str, dict[str, Any]], spent: AgentsUsage | None = None,
                 stream: bool = False) -> None:
        self.calls, self.spent, self.seen = calls, spent or usage(), []
        self.model = ScriptedModel([ModelStep.respond(self.turn) for _ in range(40)])
        self.stream = stream

    def turn(self, call: ModelCall) -> ModelStep:
        said = outputs(call)
        self.seen.extend(said)
        done = 0 if isinstance(call.input, str) else sum(
            1 for i in call.input if isinstance(i, dict) and i.get("type") == "function_call")
        if done < len(self.calls):
            name, args = self.calls[done]
            return ModelStep(output=[function_call(name, args, call_id=f"call_{done}")],
                             usage=self.spent)
        return ModelStep(output=[assistant_message(f"done: {said[-1] if said else 'nothing'}")],
                         usage=self.spent)


def governed(mail: Mail, script: Script, request: str = "email alice@corp.test the menu",
             **options: Any) -> tuple[OpenAIAgentsRun, Agent[Any]]:
    options.setdefault("policy", Rules())
    run = OpenAIAgentsRun(mail.tools(), model=script.model, request=request, meta=META,
                          **options)
    assert run.model is not None
    return run, Agent(name="mail", model=run.model, tools=run.tools)


async def test_an_allowed_call_runs_and_the_journal_reads_like_a_native_session(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mail, store = Mail(), SQLiteStore(tmp_path / "j.db")
    run, agent = governed(mail, Script(("send_email", {"to": "alice@corp.test",
                                                       "body": "menu"})), store=store)
    result = await Runner.run(agent, "email alice@corp.test the menu")
    run.close(result.final_output)
    assert result.final_output == "done: sent to alice@corp.test"
    assert mail.sent == [("alice@corp.test", "menu")]
    events = store.read(run.id)
    assert verify_chain(events) is None
    types = [e.type for e in events]
    assert types[0] == "session.start" and types[-1] == "session.end"
    assert "client.call" not in types  # the model's own call, decided as a native one
    assert types.count("model.request") == 2 and types.count("model.response") == 2
    shown = "\n".join(header(events) + timeline(events))
    assert "agent openai-agents, model ScriptedModel" in shown
    assert "task: email alice@corp.test the menu" in shown
    assert "calls send_email(" in shown and "ok" in shown
    assert "the request asks for: send_email" in shown
    assert "spend (ended): 120 tokens" in shown
    store.close()
    url = f"sqlite:///{tmp_path / 'j.db'}"
    assert main(["audit", "verify", "--store", url]) == 0
    assert main(["audit", "show", run.id, "--store", url]) == 0
    out = capsys.readouterr().out
    assert "agent openai-agents" in out and "calls send_email(" in out
