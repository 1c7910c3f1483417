"""A rerun of an unchanged recipe reports no difference when the record hid an argument (a
masked integer, which the journal holds as ``[masked]``) or when a tool takes credentials (the
rerun hands it a stand-in token: the recorded result is replayed, no secret is fetched)."""

from __future__ import annotations

from typing import Any

import pytest

from test_masked_values import MaskCvv
from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.credentials import CredentialBroker, ScopedToken
from tether.runtime.rerun import rerun

charged: list[int] = []
fetched: list[str] = []


@tool(side_effect=True)
def charge(card: str, cvv: int) -> str:
    """Charge a card."""
    charged.append(cvv)
    return f"charged {card[-4:]}; cvv {cvv} accepted"


@tool(side_effect=True)
def deploy(service: str, credentials: ScopedToken) -> str:
    """Deploy a service."""
    assert credentials.reveal("deploy")
    return f"deployed {service}"


def _recorded(agent: Agent) -> list[Any]:
    session = agent.session("do it")
    session.run()
    return session.replay()


@pytest.mark.parametrize("cvv", [7, 737, 4242])
def test_a_masked_integer_argument_reruns_without_difference(cvv: int) -> None:
    def agent() -> Agent:
        model = ScriptedModel([ModelResponse(tool_calls=(ToolCall(
            "c1", "charge", {"card": "4111111111111111", "cvv": cvv}),)), "charged"])
        return Agent(model=model, reasoning=ReAct(), tools=[charge], policy=MaskCvv())

    events = _recorded(agent())
    assert any(e.type == "tool.result" and e.data["status"] == "ok" for e in events)
    charged.clear()
    report = rerun(agent(), events)
    assert report.divergences == () and report.matches
    assert charged == []  # nothing ran again
    assert str(cvv) not in str([e.data for e in report.events if e.type == "tool.result"])


def test_a_tool_taking_credentials_reruns_without_difference() -> None:
    def agent() -> Agent:
        broker = CredentialBroker()
        broker.register("deploy", provider=lambda: fetched.append("vault") or "s3cr3t-token")
        model = ScriptedModel([ModelResponse(tool_calls=(ToolCall(
            "d1", "deploy", {"service": "api"}),)), "deployed"])
        return Agent(model=model, reasoning=ReAct(), tools=[deploy], credentials=broker)

    events = _recorded(agent())
    assert [e.data["content"] for e in events if e.type == "tool.result"] == ["deployed api"]
    fetched.clear()
    report = rerun(agent(), events)
    assert report.divergences == () and report.matches
    assert fetched == []  # the rerun fetched no secret


def test_a_tool_whose_credential_was_missing_reruns_as_recorded() -> None:
    def agent() -> Agent:
        model = ScriptedModel([ModelResponse(tool_calls=(ToolCall(
            "d1", "deploy", {"service": "api"}),)), "could not deploy"])
        return Agent(model=model, reasoning=ReAct(), tools=[deploy],
                     credentials=CredentialBroker())

    events = _recorded(agent())
    (result,) = [e.data for e in events if e.type == "tool.result"]
    assert result["status"] == "error" and "no credential is registered" in result["content"]
    assert rerun(agent(), events).divergences == ()


@pytest.mark.parametrize("cvv", ["7", "737", "4242"])
def test_a_masked_string_argument_reruns_without_difference(cvv: str) -> None:
    from test_masked_values import charge as charge_text

    def agent() -> Agent:
        model = ScriptedModel([ModelResponse(text=f"using {cvv}", tool_calls=(ToolCall(
            "c1", "charge", {"card": "4111111111111111", "cvv": cvv}),)), f"done with {cvv}"])
        return Agent(model=model, reasoning=ReAct(), tools=[charge_text], policy=MaskCvv())

    report = rerun(agent(), _recorded(agent()))
    assert report.divergences == ()
