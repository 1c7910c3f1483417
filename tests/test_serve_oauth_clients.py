"""With authorization, a governed client is an identity: the server's client key carries the
verified token's identity, and a gateway's Subject is that identity's — never the deployment's
``--client``/``--role``, never another identity's, sessionless or not (``tether.serve.server``,
``tether.serve.clients``). The SDK already refuses a session to a token of another principal
(tests/test_serve_oauth.py); these hold without it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from tether import tool
from tether.errors import InvalidArgument
from tether.policy import AllowAll
from tether.serve.clients import ClientGateways, Governance
from tether.serve.oauth import IDENTITY, Identity, OAuth
from tether.serve.server import SESSIONLESS_CLIENT, client_key, request_identity
from tether.serve.transports import check_bind
from tether.store.memory import MemoryStore

ALICE = Identity("alice", "acme", ("writer",), "https://idp.example.com")
ALICE_GLOBEX = Identity("alice", "globex", ("writer",), "https://idp.example.com")
BOB = Identity("bob", "globex", (), "https://idp.example.com")


@tool
def ping() -> str:
    """Ping."""
    return "pong"


def ctx(identity: Identity | None, session: str | None = "s1",
        version: str = "2025-11-25") -> Any:
    scope: dict[str, Any] = {}
    if identity is not None:
        scope["user"] = AuthenticatedUser(AccessToken(
            token="sha256:x", client_id="app", scopes=[], subject=identity.user_id,
            claims={"iss": identity.issuer, IDENTITY: identity}))
    headers = {} if session is None else {"mcp-session-id": session}
    return SimpleNamespace(request=SimpleNamespace(headers=headers, scope=scope),
                           protocol_version=version)


def test_the_client_key_carries_the_identity() -> None:
    assert client_key(ctx(None)) == "http:s1"
    keys = {client_key(ctx(who)) for who in (ALICE, ALICE_GLOBEX, BOB)}
    assert len(keys) == 3 and all(k.startswith("http:s1#") for k in keys)
    sessionless = {client_key(ctx(who, None)) for who in (ALICE, BOB)}
    assert len(sessionless) == 2
    assert all(k.startswith(SESSIONLESS_CLIENT + "#") for k in sessionless)
    assert request_identity(ctx(ALICE)) == ALICE and request_identity(ctx(None)) is None
    assert "alice" not in client_key(ctx(ALICE))  # a digest, never a claim's text


async def test_each_identity_gets_a_gateway_with_its_own_subject() -> None:
    store = MemoryStore()
    gateways = ClientGateways([ping], Governance(AllowAll(), store, client="deployment",
                                                 roles=("admin",), tenant_id="default"),
                              lasting=(SESSIONLESS_CLIENT,), idle_timeout=60.0)
    outcomes = {}
    for who in (ALICE, ALICE_GLOBEX, BOB):
        request = ctx(who)
        outcomes[who] = await gateways.call(client_key(request), "ping", {},
                                            identity=request_identity(request))
    assert len({o.session_id for o in outcomes.values()}) == 3
    for who, outcome in outcomes.items():
        start = store.read(outcome.session_id)[0]
        assert start.data["subject"] == {"user_id": who.user_id, "tenant_id": who.tenant_id,
                                         "roles": list(who.roles)}
    unnamed = await gateways.call("http:s2#x", "ping", {},
                                  identity=Identity("carol", None, (), "https://i"))
    start = store.read(unnamed.session_id)[0]
    assert start.data["subject"]["tenant_id"] == "default"  # no tenant claim: the server's
    assert start.data["subject"]["roles"] == []  # never the deployment's roles
    gateways.end("http:s1", "the client ended its MCP session")
    assert len(gateways) == 1  # every identity's gateway of that session ended
    sessionless = client_key(ctx(ALICE, None))
    await gateways.call(sessionless, "ping", {}, identity=ALICE)
    gateways.end(sessionless, "never")
    assert gateways.gateway(sessionless) is not None  # the sessionless one lasts


def test_a_non_loopback_host_needs_authorization() -> None:
    for host in ("0.0.0.0", "192.168.1.10", "::", "tools.example.com"):
        with pytest.raises(InvalidArgument, match="--oauth-issuer"):
            check_bind(host, None)
        check_bind(host, OAuth(issuer="https://idp.example.com"))
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        check_bind(host, None)
