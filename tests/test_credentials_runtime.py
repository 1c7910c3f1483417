"""Credentials through the runtime: injected, scoped, scrubbed, revoked — and never leaked."""

from __future__ import annotations

import json
import logging

import pytest

from tether import Agent, ReAct, ScriptedModel, tool
from tether.credentials import CredentialBroker, CredentialError, ScopedToken

from conftest import call

SECRET = "sk-live-9f8e7d6c5b4a39281706"


def leaky_tools(seen: list[ScopedToken]) -> list[object]:
    @tool(egress=True)
    def charge(amount: int, credentials: ScopedToken) -> str:
        """Charge a card through the payment API."""
        seen.append(credentials)
        key = credentials.reveal()
        # a careless tool that echoes its key in the result
        return f"charged {amount} using key {key}"

    @tool
    def explode(credentials: ScopedToken) -> str:
        """Fail with the key in the message."""
        raise RuntimeError(f"auth failed for key={credentials.reveal()}")

    return [charge, explode]


def test_token_is_injected_hidden_from_schema_scrubbed_and_revoked(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[ScopedToken] = []
    broker = CredentialBroker()
    broker.register("charge", SECRET, ttl=30, max_uses=1)
    broker.register("explode", SECRET)
    tools = leaky_tools(seen)
    assert "credentials" not in json.dumps(tools[0].spec.parameters)  # type: ignore[attr-defined]
    agent = Agent(model=ScriptedModel([call("charge", {"amount": 5}), call("explode", {}),
                                       "done"]),
                  reasoning=ReAct(), tools=tools, credentials=broker)
    session = agent.session("charge 5", user_id="u1")
    result = session.run()

    token = seen[0]
    assert token.session_id == session.id and token.tool == "charge"
    assert token.revoked  # revoked when the session ended
    with pytest.raises(CredentialError):
        token.reveal()
    charge, explode = (s.results[0] for s in result.trajectory.steps[:2])
    assert charge.status == "ok" and "charged 5" in charge.content
    assert explode.status == "error"

    # the scan: the secret is nowhere a person or a model could see it
    places = {
        "result": repr(result) + repr(result.trajectory.steps) + result.answer,
        "events": json.dumps([e.data for e in session.replay()]),
        "export": "\n".join(json.dumps({"seq": e.seq, "type": e.type, "data": e.data,
                                        "hash": e.hash}) for e in session.replay()),
        "logs": caplog.text,
        "reprs": repr(session) + repr(agent) + repr(broker) + repr(token) + str(token),
    }
    for where, text in places.items():
        assert SECRET not in text, f"secret leaked into {where}"
    assert "[secret redacted]" in charge.content
    assert session.verify() is None


def test_a_tool_needing_credentials_without_a_broker_does_not_run() -> None:
    seen: list[ScopedToken] = []
    agent = Agent(model=ScriptedModel([call("charge", {"amount": 5}), "done"]),
                  reasoning=ReAct(), tools=leaky_tools(seen))
    result = agent.run("x")
    res = result.trajectory.steps[0].results[0]
    assert seen == [] and res.status == "error" and "CredentialBroker" in res.content


def test_a_tool_with_no_registered_credential_does_not_run() -> None:
    seen: list[ScopedToken] = []
    agent = Agent(model=ScriptedModel([call("charge", {"amount": 5}), "done"]),
                  reasoning=ReAct(), tools=leaky_tools(seen), credentials=CredentialBroker())
    res = agent.run("x").trajectory.steps[0].results[0]
    assert seen == [] and "no credential is registered" in res.content


def test_a_failing_provider_is_a_tool_error_without_the_secret() -> None:
    seen: list[ScopedToken] = []
    broker = CredentialBroker()

    def provider() -> str:
        raise OSError(f"vault said no for {SECRET}")

    broker.register("charge", provider=provider)
    agent = Agent(model=ScriptedModel([call("charge", {"amount": 5}), "done"]),
                  reasoning=ReAct(), tools=leaky_tools(seen), credentials=broker)
    session = agent.session("x")
    res = session.run().trajectory.steps[0].results[0]
    assert seen == [] and res.status == "error"
    assert SECRET not in json.dumps([e.data for e in session.replay()])
