"""tether's MCP client against an OAuth-protected server: the flows, the errors, the hostile cases.

The server is ``tests/mcp/oauth_server.py`` (the official SDK's server behind a bearer check,
with a toy authorization server on the same origin), run on 127.0.0.1. It writes every token it
issues to a file, so the scan can search what the client produced for each one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import pickle
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcp_servers import MCP_DIR, free_port, http_server
from tether import Agent, ReAct, ScriptedModel
from tether.credentials import Secret
from tether.mcp import MCPConnectionError, MCPServer, connect
from tether.mcp.oauth import (
    AuthorizationCode,
    ClientCredentials,
    PrivateKeyJWT,
    TokenStore,
    code_from,
    loopback_authorize,
)
from tether.observe import OTelSink

from conftest import call

CLIENT_SECRET = "cs-" + "7f3a9c1e5b2d4f6a8c0e"


class Protected:
    def __init__(self, port: int, tokens: Path) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.issuer = f"http://127.0.0.1:{port}"
        self.tokens_file = tokens

    def tokens(self) -> list[str]:
        if not self.tokens_file.exists():
            return []
        return [t for t in self.tokens_file.read_text().splitlines() if t]

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = httpx2.get(f"http://127.0.0.1:{self.port}/_counts").json()
        return counts


@contextmanager
def protected(tmp_path: Path, mode: str = "ok") -> Iterator[Protected]:
    port = free_port()
    tokens = tmp_path / f"tokens-{mode}.txt"
    argv = [sys.executable, str(MCP_DIR / "oauth_server.py"), str(port)]
    with http_server(argv, port, env={"TETHER_OAUTH_MODE": mode,
                                      "TETHER_OAUTH_TOKENS": str(tokens)}):
        yield Protected(port, tokens)


async def no_follow(url: str) -> str:
    """A user agent that approves at once: the authorization server's redirect, unfollowed."""
    async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as client:
        response = await client.get(url)
    return str(response.headers["location"])


def code_flow(**options: Any) -> AuthorizationCode:
    return AuthorizationCode(redirect_uri="http://127.0.0.1:1/callback", authorize=no_follow,
                             **options)


def server(url: str, auth: Any, **options: Any) -> MCPServer:
    return MCPServer.http("vault", url, auth=auth, connect_timeout=10, call_timeout=10,
                          close_timeout=5, **options)


# -- configuration -------------------------------------------------------------------------------


def test_secrets_in_the_configuration_never_show() -> None:
    flows = [
        AuthorizationCode(client_id="app", client_secret=CLIENT_SECRET, scopes=["mcp:read"]),
        ClientCredentials("machine", Secret(CLIENT_SECRET), method="client_secret_post"),
        PrivateKeyJWT("machine", Secret(CLIENT_SECRET), algorithm="ES256"),
    ]
    for flow in flows:
        config = MCPServer.http("api", "https://mcp.example.com/mcp", auth=flow)
        for text in (repr(flow), str(flow), repr(config), config.where()):
            assert CLIENT_SECRET not in text
        assert "Secret('****')" in repr(flow)
    assert isinstance(flows[0].client_secret, Secret)  # a str is wrapped at once


def test_configuration_mistakes_are_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="needs the client_id"):
        AuthorizationCode(client_secret=Secret(CLIENT_SECRET))
    with pytest.raises(ValueError, match="https URL with a path"):
        AuthorizationCode(client_metadata_url="http://example.com/client.json")
    with pytest.raises(ValueError, match="whitespace"):
        ClientCredentials("m", Secret("s"), scopes=["a b"])
    with pytest.raises(ValueError, match="PrivateKeyJWT"):
        ClientCredentials("m", Secret("s"), method="private_key_jwt")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="HTTP server"):
        MCPServer("local", command="server", auth=ClientCredentials("m", Secret("s")))
    with pytest.raises(TypeError, match="auth must be"):
        MCPServer.http("api", "https://x.example/mcp", auth="token")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="loopback"):
        loopback_authorize("https://app.example.com/callback")


async def test_the_token_store_keeps_secrets_as_secrets() -> None:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    store = TokenStore()
    assert await store.get_tokens() is None
    await store.set_tokens(OAuthToken(access_token="at-123456", refresh_token="rt-654321",
                                      expires_in=60, scope="mcp:read"))
    await store.set_client_info(OAuthClientInformationFull(
        client_id="c1", client_secret=CLIENT_SECRET, redirect_uris=None))
    tokens = await store.get_tokens()
    assert tokens.access_token == "at-123456" and tokens.refresh_token == "rt-654321"
    assert 0 < tokens.expires_in <= 60 and tokens.scope == "mcp:read"
    assert (await store.get_client_info()).client_secret == CLIENT_SECRET
    for text in (repr(store), str(store)):
        for secret in ("at-123456", "rt-654321", CLIENT_SECRET):
            assert secret not in text
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(store)
    store.drop_tokens()
    assert await store.get_tokens() is None and await store.get_client_info() is not None


def test_an_error_in_the_redirect_is_a_clear_refusal() -> None:
    with pytest.raises(MCPConnectionError, match="refused the authorization \\(access_denied"):
        code_from("http://127.0.0.1:9/cb?error=access_denied&state=x")
    with pytest.raises(MCPConnectionError, match="no code"):
        code_from("http://127.0.0.1:9/cb?state=x")


# -- the flows against a protected server ---------------------------------------------------------


def test_code_flow_with_dynamic_registration_then_the_tokens_are_reused(tmp_path: Path) -> None:
    flow = code_flow()
    with protected(tmp_path) as srv:
        with connect(server(srv.url, flow)) as tools:
            assert asyncio.run(tools.invoke("echo", {"text": "hi"})) == "echo: hi"
        assert flow.store.has_tokens and srv.counts()["authorize"] == 1
        with connect(server(srv.url, flow)) as tools:  # same configuration: no new login
            assert asyncio.run(tools.invoke("echo", {"text": "again"})) == "echo: again"
        assert srv.counts() == {"authorize": 1, "token": 1, "register": 1}


def test_the_default_user_agent_waits_on_a_loopback_listener(tmp_path: Path,
                                                             capfd: pytest.CaptureFixture[str],
                                                             ) -> None:
    redirect = f"http://127.0.0.1:{free_port()}/callback"
    listen = loopback_authorize(redirect, open_browser=False, timeout=10)

    async def browser_and_listener(url: str) -> str:
        async def browse() -> None:
            await asyncio.sleep(0.2)  # the user clicks the printed link
            async with httpx2.AsyncClient(follow_redirects=True, timeout=10) as client:
                page = await client.get(url)
            assert "authorization is complete" in page.text

        answer, _ = await asyncio.gather(listen(url), browse())
        return answer

    flow = AuthorizationCode(redirect_uri=redirect, authorize=browser_and_listener)
    with protected(tmp_path) as srv, connect(server(srv.url, flow)) as tools:
        assert asyncio.run(tools.invoke("echo", {"text": "loop"})) == "echo: loop"
    assert "open this URL in a browser" in capfd.readouterr().err


def test_a_dynamic_registration_keeps_its_loopback_redirect(tmp_path: Path) -> None:
    seen: list[str] = []

    async def remember(url: str) -> str:
        seen.append(parse_qs(urlsplit(url).query)["redirect_uri"][0])
        return await no_follow(url)

    flow = AuthorizationCode(authorize=remember)
    with protected(tmp_path) as srv:
        for _ in range(2):
            with connect(server(srv.url, flow)) as tools:
                assert asyncio.run(tools.invoke("echo", {"text": "x"})) == "echo: x"
            flow.store.drop_tokens()  # the next connection must sign in again
        assert srv.counts()["register"] == 1
    assert len(seen) == 2 and seen[0] == seen[1] == flow.store.redirect_uri()
    assert seen[0].startswith("http://127.0.0.1:")


def test_client_credentials(tmp_path: Path) -> None:
    with protected(tmp_path) as srv:
        flow = ClientCredentials("machine", Secret(CLIENT_SECRET), scopes=["mcp:read"],
                                 method="client_secret_post", issuer=srv.issuer)
        tools = connect(server(srv.url, flow)).open()
        try:
            assert asyncio.run(tools.invoke("echo", {"text": "m2m"})) == "echo: m2m"
        finally:
            tools.close()
        assert srv.counts()["authorize"] == 0 and srv.counts()["token"] == 1


def test_a_session_with_a_protected_server_leaks_no_token(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        capfd: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    exporter = InMemorySpanExporter()
    sink = OTelSink(exporter)
    flow = code_flow()
    with protected(tmp_path) as srv:
        config = server(srv.url, flow)
        with connect(config) as tools:
            agent = Agent(model=ScriptedModel([call("vault_echo", {"text": "hello"}), "done"]),
                          reasoning=ReAct(), tools=[*tools], telemetry=[sink])
            session = agent.session("echo hello")
            result = session.run()
            (echoed,) = result.trajectory.tool_results
            assert echoed.status == "ok" and echoed.content == "echo: hello"
            reprs = repr(tools) + repr(config) + repr(flow) + repr(flow.store) + repr(agent)
        sink.close()
        secrets = srv.tokens()
    assert len(secrets) == 3  # the client secret of the registration, access and refresh tokens
    spans = [span.to_json() for span in exporter.get_finished_spans()]
    assert spans
    places = {
        "result": repr(result) + repr(result.trajectory.steps) + result.answer,
        "events": json.dumps([e.data for e in session.replay()]),
        "journal": "\n".join(json.dumps({"seq": e.seq, "type": e.type, "data": e.data,
                                         "hash": e.hash}) for e in session.replay()),
        "logs": caplog.text,
        "stdio": "".join(capfd.readouterr()),
        "spans": "\n".join(spans),
        "reprs": reprs,
    }
    for secret in secrets:
        for where, text in places.items():
            assert secret not in text, f"an OAuth secret leaked into {where}"


# -- hostile servers -------------------------------------------------------------------------------


@pytest.mark.parametrize("flow_kind", ["client credentials", "authorization code"])
def test_a_server_that_echoes_its_bearer_token_gets_it_into_no_prompt_or_event(
        tmp_path: Path, flow_kind: str) -> None:
    """The server holds the token (it was sent it); echoing it back in a result must not put it
    in front of the model or into the journal: the connection's secrets are the session's —
    whichever flow got the token (the code flow's come with a registration and a refresh)."""
    seen: list[str] = []

    def model(request: Any) -> Any:
        seen.extend(str(m.content) for m in request.messages)
        asked = sum(1 for m in request.messages if m.role == "assistant")
        return call("vault_whoami", {}) if asked == 0 else "done"

    with protected(tmp_path) as srv:
        flow: Any = (ClientCredentials("machine", Secret(CLIENT_SECRET), issuer=srv.issuer)
                     if flow_kind == "client credentials" else code_flow())
        with connect(server(srv.url, flow)) as tools:
            agent = Agent(model=ScriptedModel(model), reasoning=ReAct(), tools=[*tools])
            session = agent.session("who am I?")
            result = session.run()
        secrets = srv.tokens()
    (answer,) = result.trajectory.tool_results
    assert answer.status == "ok" and answer.content.startswith("you are "), answer
    journal = json.dumps([e.data for e in session.replay()])
    assert secrets and seen
    for secret in secrets:
        assert secret not in answer.content and secret not in journal
        assert not any(secret in text for text in seen), "the token reached the model"



def test_a_refused_token_is_a_clear_error_that_quotes_no_token(tmp_path: Path) -> None:
    with protected(tmp_path, "refuse") as srv:
        flow = ClientCredentials("machine", Secret(CLIENT_SECRET), issuer=srv.issuer)
        with pytest.raises(MCPConnectionError) as caught:
            connect(server(srv.url, flow)).open()
        message = str(caught.value)
        assert "refused the access token" in message and "401 after authorization" in message
        assert srv.counts()["token"] <= 2  # bounded: no loop of new tokens
        for secret in [*srv.tokens(), CLIENT_SECRET]:
            assert secret not in message and secret not in repr(caught.value)
    assert not flow.store.has_tokens  # the refused token is dropped


def test_a_resource_mismatch_is_refused_before_any_authorization(tmp_path: Path) -> None:
    with protected(tmp_path, "mismatch") as srv:
        with pytest.raises(MCPConnectionError, match="another resource") as caught:
            connect(server(srv.url, code_flow())).open()
        assert "evil.example.com" in str(caught.value)
        assert srv.counts() == {"authorize": 0, "token": 0, "register": 0}
        assert srv.tokens() == []


def test_scope_step_up_is_bounded(tmp_path: Path) -> None:
    with protected(tmp_path, "stepup") as srv:
        with pytest.raises(MCPConnectionError, match="insufficient scope after authorizing again"):
            connect(server(srv.url, code_flow())).open()
        assert 1 <= srv.counts()["authorize"] <= 2


def test_a_server_demanding_auth_when_none_is_configured(tmp_path: Path) -> None:
    with protected(tmp_path) as srv:
        with pytest.raises(MCPConnectionError, match="demands OAuth authorization") as caught:
            connect(server(srv.url, None)).open()
        assert "auth=" in str(caught.value) and srv.counts()["authorize"] == 0


def test_a_static_bearer_header_the_server_refuses(tmp_path: Path) -> None:
    stale = "stale-" + CLIENT_SECRET
    with protected(tmp_path) as srv:
        config = server(srv.url, None, headers={"Authorization": f"Bearer {stale}"})
        with pytest.raises(MCPConnectionError, match="refused the credentials of the "
                                                     "Authorization header") as caught:
            connect(config).open()
        assert stale not in str(caught.value)


def test_a_user_who_denies_the_authorization(tmp_path: Path) -> None:
    async def deny(url: str) -> str:
        return "http://127.0.0.1:1/callback?error=access_denied&state=x"

    flow = AuthorizationCode(redirect_uri="http://127.0.0.1:1/callback", authorize=deny)
    with protected(tmp_path) as srv:
        with pytest.raises(MCPConnectionError, match="refused the authorization"):
            connect(server(srv.url, flow)).open()
        assert srv.counts()["token"] == 0
