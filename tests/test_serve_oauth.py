"""``tether mcp serve`` / ``proxy --transport http --oauth-issuer``: an OAuth 2.1 resource server,
tested end to end against a real authorization server (tests/mcp/authz_server.py, its own
process on 127.0.0.1, minting RS256/ES256/EdDSA JWTs for the client_credentials grant) and the
real command line in another process, driven by the official SDK client and by raw HTTP.

Each check a token must pass is attacked on its own in tests/test_serve_oauth_tokens.py (where
the reason for a refusal is visible); here each attack is shown to end in the SDK's 401 with
the challenge, and the verified token's claims to be the Subject the journal records.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp.client.streamable_http import streamable_http_client

from mcp import ClientSession
from mcp_peers import NOTES_TOOLS, ROOT, http_server, journals, status, store_url, text
from mcp_servers import MCP_DIR, PY_SERVER, free_port
from mcp_servers import http_server as process_server
from tether.cli import main
from tether.store.sqlite import SQLiteStore

POLICY = str(MCP_DIR / "oauth_policy.yaml")
PROXY_POLICY = str(MCP_DIR / "oauth_proxy_policy.yaml")
SCOPE = "mcp:tools"
CLIENTS = {
    "acme-desk": {"secret": "s-acme-7f3a9c1e", "sub": "alice", "tenant": "acme",
                  "roles": ["writer"], "scopes": [SCOPE]},
    "globex-desk": {"secret": "s-globex-5b2d4f6a", "sub": "bob", "tenant": "globex",
                    "roles": ["writer"], "scopes": [SCOPE]},
    "reader": {"secret": "s-reader-8c0e1a2b", "sub": "carol", "tenant": "acme",
               "roles": [], "scopes": ["other"]},
    "tenantless": {"secret": "s-none-3c4d5e6f", "sub": "dave", "scopes": [SCOPE]},
}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}


@dataclass
class Served:
    url: str
    issuer: str
    db: Path
    log: list[str]
    notes: Path

    def token(self, client: str, **knobs: Any) -> str:
        form = {"grant_type": "client_credentials", "client_id": client,
                "client_secret": CLIENTS[client]["secret"], "resource": self.url, **knobs}
        answer = httpx2.post(f"{self.issuer}/token", data=form, timeout=30)
        assert answer.status_code == 200, answer.text
        return str(answer.json()["access_token"])

    def post(self, token: str | None, body: Any = None, **headers: str) -> httpx2.Response:
        sent = {**MCP_HEADERS, **headers}
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        return httpx2.post(self.url, json=body or INITIALIZE, headers=sent, timeout=30)


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    port = free_port()
    with process_server([sys.executable, str(MCP_DIR / "authz_server.py"), str(port)], port,
                        env={"TETHER_AUTHZ_CLIENTS": json.dumps(CLIENTS)}):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def served(issuer: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    where = tmp_path_factory.mktemp("oauth")
    db, notes = where / "j.db", where / "notes"
    args = ["serve", NOTES_TOOLS, "--policy", POLICY, "--store", store_url(db),
            "--oauth-issuer", issuer, "--oauth-tenant-claim", "tenant", "--oauth-scope", SCOPE,
            "--oauth-jwks-refresh", "0"]
    with http_server(args, env={"NOTES_DIR": str(notes)}) as (url, log):
        yield Served(url, issuer, db, log, notes)


@asynccontextmanager
async def peer(url: str, token: str) -> AsyncIterator[ClientSession]:
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                timeout=httpx2.Timeout(30, read=300))
    async with client, streamable_http_client(url, http_client=client) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=30) as session:
        await session.initialize()
        yield session


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def challenge(response: httpx2.Response) -> str:
    return response.headers.get("www-authenticate", "")


def prm_url(url: str) -> str:
    origin, _, path = url.partition("//")[2].partition("/")
    return f"http://{origin}/.well-known/oauth-protected-resource/{path}"


async def test_a_valid_token_runs_calls_as_its_subject_tenant_and_roles(served: Served) -> None:
    acme, globex = served.token("acme-desk"), served.token("globex-desk", alg="ES256")
    async with peer(served.url, acme) as alice:
        wrote = await alice.call_tool("write_note", {"name": "plan", "text": "ship it"})
    async with peer(served.url, globex) as bob:
        refused = await bob.call_tool("write_note", {"name": "plan", "text": "mine now"})
        read = await bob.call_tool("read_note", {"name": "plan"})
    assert any(f"bearer tokens from {served.issuer} required" in line for line in served.log)
    assert status(wrote) == "ok" and status(read) == "ok" and text(read) == "ship it"
    assert status(refused) == "denied"  # a writer, but of tenant globex: the rule is acme's
    sessions = journals(served.db)
    for result, subject, effect, rule in (
            (wrote, {"user_id": "alice", "tenant_id": "acme", "roles": ["writer"]},
             "allow", True),
            (refused, {"user_id": "bob", "tenant_id": "globex", "roles": ["writer"]},
             "deny", False)):
        assert result.meta is not None
        events = sessions[result.meta["tether/session"]]
        assert events[0].data["subject"] == subject
        (decision,) = [e.data["decision"] for e in events if e.type == "tool.decision"
                       and e.data["tool"] == "write_note"]
        assert decision["effect"] == effect
        assert (decision["policy_id"] == "oauth-notes:acme-writers-write") is rule
    for token in (acme, globex):  # no bearer token reaches the journal or the server's log
        signature = token.rsplit(".", 1)[1]
        assert signature.encode() not in served.db.read_bytes()
        assert not any(signature in line for line in served.log)


@pytest.mark.parametrize("alg", ["RS256", "ES256", "EdDSA"])
def test_each_signature_algorithm_of_the_issuer_is_accepted(served: Served, alg: str) -> None:
    answer = served.post(served.token("acme-desk", alg=alg))
    assert answer.status_code == 200, answer.text


def test_no_token_is_401_with_the_challenge_naming_the_resource_metadata(served: Served,
                                                                          ) -> None:
    answer = served.post(None)
    assert answer.status_code == 401
    assert challenge(answer).startswith("Bearer ")
    assert 'error="invalid_token"' in challenge(answer)
    assert f'resource_metadata="{prm_url(served.url)}"' in challenge(answer)
    metadata = httpx2.get(prm_url(served.url), timeout=30).json()
    assert metadata["resource"] == served.url
    assert metadata["authorization_servers"] == [served.issuer]
    assert metadata["scopes_supported"] == [SCOPE]
    assert served.post(None, Authorization="Basic YWxpY2U6cHc=").status_code == 401


def forged(served: Served, how: str) -> str:
    """A token that must be refused, made ``how``."""
    if how == "expired":
        return served.token("acme-desk", ttl="-60")
    if how == "not yet valid":
        return served.token("acme-desk", nbf_in="600")
    if how == "another audience":
        return served.token("acme-desk", resource="http://127.0.0.1:1/mcp")
    if how == "another issuer":
        return served.token("acme-desk", issuer="http://127.0.0.1:1")
    if how == "no tenant":
        return served.token("tenantless")
    real = served.token("acme-desk")
    head, body, sig = real.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    if how == "edited claims":
        claims["tenant"] = "globex"
        return f"{head}.{b64(json.dumps(claims).encode())}.{sig}"
    kid = jwt.get_unverified_header(real)["kid"]
    if how == "bad signature":
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return jwt.encode(claims, other, algorithm="RS256", headers={"kid": kid})
    if how == "unknown kid":
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return jwt.encode(claims, other, algorithm="RS256", headers={"kid": "rsa-999"})
    if how == "alg none":
        return jwt.encode(claims, None, algorithm="none", headers={"kid": kid})
    assert how == "HS256 with the public key"
    keys = httpx2.get(f"{served.issuer}/jwks", timeout=30).json()["keys"]
    public = RSAAlgorithm.from_jwk(next(k for k in keys if k["kid"] == kid))
    pem = public.public_bytes(serialization.Encoding.PEM,  # type: ignore[union-attr]
                              serialization.PublicFormat.SubjectPublicKeyInfo)
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    body = b64(json.dumps(claims).encode())
    return f"{head}.{body}.{b64(hmac.new(pem, f'{head}.{body}'.encode(), hashlib.sha256).digest())}"


@pytest.mark.parametrize("how", [
    "expired", "not yet valid", "another audience", "another issuer", "no tenant",
    "edited claims", "bad signature", "unknown kid", "alg none", "HS256 with the public key"])
def test_a_token_that_does_not_verify_is_401(served: Served, how: str) -> None:
    answer = served.post(forged(served, how))
    assert answer.status_code == 401, answer.text
    assert 'error="invalid_token"' in challenge(answer)
    assert f'resource_metadata="{prm_url(served.url)}"' in challenge(answer)


def test_a_token_without_the_required_scope_is_403(served: Served) -> None:
    answer = served.post(served.token("reader"))
    assert answer.status_code == 403
    assert 'error="insufficient_scope"' in challenge(answer)
    assert SCOPE in challenge(answer)


def test_a_rotated_key_is_picked_up_and_the_retired_one_refused(served: Served) -> None:
    before = served.token("acme-desk")
    assert served.post(before).status_code == 200
    rotated = httpx2.post(f"{served.issuer}/_rotate", timeout=30).json()["kid"]
    after = served.token("acme-desk")
    assert jwt.get_unverified_header(after)["kid"] == rotated
    assert served.post(after).status_code == 200  # an unknown kid: the keys fetched again
    assert served.post(before).status_code == 401  # its key is no longer published


def test_keys_are_not_fetched_per_request(served: Served) -> None:
    token = served.token("acme-desk")
    assert served.post(token).status_code == 200
    counts = httpx2.get(f"{served.issuer}/_counts", timeout=30).json()
    for _ in range(5):
        assert served.post(token).status_code == 200
    assert httpx2.get(f"{served.issuer}/_counts", timeout=30).json()["jwks"] == counts["jwks"]


async def test_one_tenants_token_cannot_use_or_end_anothers_session(served: Served) -> None:
    acme, globex = served.token("acme-desk"), served.token("globex-desk")
    (served.notes / "old.txt").parent.mkdir(parents=True, exist_ok=True)
    (served.notes / "old.txt").write_text("keep")
    async with peer(served.url, acme) as alice:
        waiting = await alice.call_tool("delete_note", {"name": "old"})
        assert status(waiting) == "approval_required" and waiting.meta is not None
        opened = served.post(acme)
        session = opened.headers["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "read_note", "arguments": {"name": "old"}}}
        hijack = served.post(globex, call, **{"mcp-session-id": session,
                                              "mcp-protocol-version": "2025-06-18"})
        assert hijack.status_code == 404  # another identity's session: as if none existed
        ended = httpx2.delete(served.url, headers={"Authorization": f"Bearer {globex}",
                                                   "mcp-session-id": session}, timeout=30)
        assert ended.status_code == 404
        own = served.post(acme, call, **{"mcp-session-id": session,
                                         "mcp-protocol-version": "2025-06-18"})
        assert own.status_code == 200  # still alive for its owner
    start = journals(served.db)[waiting.meta["tether/session"]][0]
    assert start.data["subject"]["tenant_id"] == "acme"
    assert (served.notes / "old.txt").exists()


def test_a_non_loopback_bind_is_refused_without_authorization(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["serve", NOTES_TOOLS], ["proxy", "--policy", PROXY_POLICY]):
        tail = ["--", sys.executable, str(PY_SERVER)] if command[0] == "proxy" else []
        code = main(["mcp", *command, "--store", store_url(tmp_path / "j.db"), "--transport",
                     "http", "--port", "0", "--host", "0.0.0.0", *tail])
        err = capsys.readouterr().err
        assert code == 2
        assert "--host 0.0.0.0 needs --oauth-issuer" in err


def test_authorization_options_need_the_http_transport(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["mcp", "serve", NOTES_TOOLS, "--store", store_url(tmp_path / "j.db"),
                 "--oauth-issuer", "https://idp.example.com"])
    assert code == 2 and "applies to --transport http" in capsys.readouterr().err
    code = main(["mcp", "serve", NOTES_TOOLS, "--store", store_url(tmp_path / "j.db"),
                 "--transport", "http", "--oauth-issuer", "https://idp.example.com",
                 "--oauth-algorithm", "HS256"])
    assert code == 2 and "never 'none', never HS*" in capsys.readouterr().err
    code = main(["mcp", "serve", NOTES_TOOLS, "--store", store_url(tmp_path / "j.db"),
                 "--transport", "http", "--oauth-issuer", "https://idp.example.com",
                 "--oauth-jwks-refresh", "-1"])
    assert code == 2 and "refresh interval must be >= 0" in capsys.readouterr().err
    code = main(["mcp", "serve", NOTES_TOOLS, "--store", store_url(tmp_path / "j.db"),
                 "--transport", "http", "--oauth-issuer", "http://idp.example.com"])
    assert code == 2 and "must be an https URL" in capsys.readouterr().err


async def test_the_proxy_is_a_resource_server_too(issuer: str, tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    args = ["proxy", "--policy", PROXY_POLICY, "--store", store_url(db), "--oauth-issuer",
            issuer, "--oauth-tenant-claim", "tenant", "--", sys.executable, str(PY_SERVER)]
    with http_server(args) as (url, log):
        proxied = Served(url, issuer, db, log, tmp_path)
        assert proxied.post(None).status_code == 401
        assert proxied.post(forged(proxied, "another audience")).status_code == 401
        async with peer(url, proxied.token("acme-desk", alg="EdDSA")) as alice:
            added = await alice.call_tool("add", {"a": 2, "b": 3})
        async with peer(url, proxied.token("reader")) as carol:
            refused = await carol.call_tool("add", {"a": 2, "b": 3})
    assert status(added) == "ok" and text(added) == "5"
    assert status(refused) == "denied"  # carol has no writer role in her token
    assert added.meta is not None
    start = journals(db)[added.meta["tether/session"]][0]
    assert start.data["subject"] == {"user_id": "alice", "tenant_id": "acme",
                                     "roles": ["writer"]}


async def test_the_token_subject_cannot_approve_its_own_request(served: Served) -> None:
    """The journal's subject is the token's ``sub``, so the approval rules' self-approval check
    (issue 48: ``tether.runtime.approvals.rules``) sees the caller the issuer vouched for."""
    (served.notes / "mine.txt").parent.mkdir(parents=True, exist_ok=True)
    (served.notes / "mine.txt").write_text("x")
    async with peer(served.url, served.token("acme-desk")) as alice:
        waiting = await alice.call_tool("delete_note", {"name": "mine"})
    assert waiting.meta is not None and status(waiting) == "approval_required"
    approval = str(waiting.meta["tether/approval"])

    def approve(approver: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tether", "approvals", "approve", approval, "--approver",
             approver, "--unauthenticated", "--store", store_url(served.db)],
            cwd=ROOT, capture_output=True, text=True, timeout=60)

    own = approve("alice")
    assert own.returncode == 1 and "self-approval is refused" in own.stderr
    other = approve("maria")
    assert other.returncode == 0, other.stderr
    store = SQLiteStore(served.db)
    try:
        row = store.get_approval(approval)
    finally:
        store.close()
    assert row is not None
    assert (row["status"], row["approver"], row["approver_auth"]) == (
        "approved", "maria", "unauthenticated")


async def test_tethers_own_mcp_client_gets_a_token_and_calls(served: Served) -> None:
    """Discovery end to end: tether's MCP client (the SDK's OAuth provider underneath) meets the
    401, reads the protected resource metadata, asks the issuer it names for a token with this
    resource as audience, and calls — as the client the issuer vouched for."""
    from tether.credentials import Secret
    from tether.mcp import ClientCredentials, MCPServer, connect

    flow = ClientCredentials("acme-desk", Secret(CLIENTS["acme-desk"]["secret"]),
                             method="client_secret_post", scopes=[SCOPE], issuer=served.issuer)
    server = MCPServer.http("notes", served.url, auth=flow, connect_timeout=30,
                            call_timeout=30, close_timeout=5)
    async with connect(server) as notes:
        listed = await notes.invoke("list_notes", {})
    assert "plan" in str(listed) or "(no notes)" in str(listed)
    assert not any(CLIENTS["acme-desk"]["secret"] in line for line in served.log)
