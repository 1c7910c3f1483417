"""One governed session per MCP client: who a client is, and the Gateway that governs it.

Why: a tether MCP server (``tether mcp serve``, ``tether mcp proxy``) answers whoever connects,
and tether's promise has to hold per client: each client's calls are decided by the policy,
bounded by *its own* budget and journaled as *its own* session. So the server keeps one
``Gateway`` (``tether.runtime.chokepoint.gateway``) per client, keyed by the transport's notion of a
connection — the process for stdio, the ``Mcp-Session-Id`` for streamable HTTP — and every
``tools/call`` goes through that gateway and nowhere else.

Decisions:

- A client's gateway is created at its first tool call, so a client that only lists the tools
  leaves no empty session in the journal.
- One client's calls run one at a time. The budget is checked before a call and charged after
  it, so two concurrent calls of one client could both pass a check that only one of them fits;
  a per-client lock keeps "spend never exceeds a limit" true. Clients never wait for each other.
- A call, once started, finishes and is journaled even if the client cancels the request; the
  tool's own timeout bounds it. A half-run call would leave a journaled start without a result.
- Requests that carry no session (stateless HTTP, the per-request envelope of the 2026-07-28
  protocol) share one gateway: a budget is never per request.

Stateless callers (the 2026-07-28 protocol), stated for operators:

- *Who a stateless caller is.* Nothing a request says about itself is authenticated (its
  ``_meta`` clientInfo is a claim, and a session header on a 2026-07-28 request proves
  nothing), so without authorization every stateless request to one server process is one
  caller, ``http:sessionless``. With authorization the caller is the verified token's identity
  (user, roles, tenant): ``http:sessionless#<digest of it>``, one per identity.
- *Where its journal is.* In the server's store, as the tether session of that caller's gateway
  in that process — opened at its first call, named in every result's
  ``_meta["tether/session"]``, never released for idleness, ended when the process stops
  (rolled into linked segments with ``roll_calls`` / ``roll_seconds``). Each call is journaled
  once, by the process that ran it.
- *What replicas on one store share* (several ``tether mcp serve`` processes on one SQLite file
  or PostgreSQL database, behind a load balancer): the journals (each replica's sessions are its
  own, each chain written by one process), the approvals (a call approved by a person runs once,
  through whichever replica it is retried on) and the quotas on tool calls (``quotas`` here and
  a YAML policy's ``quotas:``: taken atomically in the store, so they bound the replicas
  together). Not shared: a ``budget`` (``--budget-tool-calls``) is each gateway's, so each
  replica's: n replicas let a stateless caller make n times its budget — use a quota for a limit
  across replicas; and log levels. So a stateless caller has one tether session per replica.
- *Handshake (2025) clients and replicas.* An ``Mcp-Session-Id`` lives in the replica that
  issued it; another replica answers a request naming it 404 (the spec's "session not found":
  the client must initialize again). tether does not adopt an unknown session id — a guessed or
  ended one would buy a governed session and budget of its own. Handshake clients therefore need
  sticky routing (by ``Mcp-Session-Id``); stateless clients need none.
- A gateway idle for longer than ``idle_timeout`` (set to the HTTP session idle timeout: by then
  the transport has ended that session) is released and its key remembered, so a later call
  under the same key is refused with advice instead of silently getting a fresh budget. Keys in
  ``lasting`` (the shared sessionless one) are never released: there is no session to renew.
- With authorization (``oauth``, ``tether.serve.oauth``) the Subject is the calling token's
  identity — its user, roles and tenant (the deployment's ``tenant_id`` when no tenant claim is
  configured) — never ``client``/``roles``; the server's key for such a client ends with that
  identity, so a gateway only ever serves the identity it was created for. ``lasting`` is
  matched on the key without its identity.
- A call may carry the client's span (a W3C ``traceparent``, from the request's ``_meta``); it
  is handed to the gateway as sent, which trusts it only if it parses (``Gateway.call``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tether.errors import RunError
from tether.runtime.accounting.budget import Budget
from tether.tools.caller import SILENT, Caller
from tether.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from tether.policy.base import Policy
    from tether.policy.quotas import Quota
    from tether.runtime.chokepoint.gateway import Gateway
    from tether.runtime.record.result import ToolResult
    from tether.serve.oauth import Identity, OAuth
    from tether.store.base import Store
    from tether.tools.base import Tool
    from tether.types import Event

SWEEP_EVERY = 1.0  # seconds between looks for idle gateways


@dataclass(frozen=True, slots=True)
class Governance:
    """What governs every client of one MCP server.

    ``policy`` decides each call; ``budget`` is given to *each* client (its own hard limits);
    ``store`` receives every client's journal and holds approval requests, so a person can
    decide them from another process (``tether approvals approve``). ``client``, ``roles`` and
    ``tenant_id`` make the policy's Subject: they describe the deployment (who runs this
    server for whom), since nothing an MCP client says about itself is authenticated — unless
    ``oauth`` is set: then HTTP clients must present a bearer token from its issuer, and the
    token's verified claims make the Subject (``tether.serve.oauth``).
    """

    policy: Policy
    store: Store
    budget: Budget = field(default_factory=Budget)
    client: str = "mcp-client"
    roles: tuple[str, ...] = ()
    tenant_id: str | None = None
    approval_ttl: float = 24 * 3600.0
    max_result_chars: int = 20_000
    # each client's journal rolls into linked segments after this many calls or seconds
    # (``Gateway``; None: one session per client, however long it lives)
    roll_calls: int | None = None
    roll_seconds: float | None = None
    # sinks told of every client's events (tether.observe); with any, each call's span also
    # goes to the tool, and from a proxied tool to the upstream server (``Gateway``)
    telemetry: tuple[Callable[[Event], object], ...] = ()
    oauth: OAuth | None = None
    # limits over every client together, kept in ``store`` and so shared by every replica of
    # the server on it (with a YAML policy, its ``quotas:`` too); those on tool calls count
    quotas: tuple[Quota, ...] = ()


def quotas_of(governance: Governance) -> tuple[Quota, ...]:
    """The quotas every client's calls count against: ``governance.quotas`` and its policy's
    (``quotas:`` of a YAML policy); names distinct, or InvalidArgument."""
    from tether.policy.quotas import check_quotas

    return check_quotas((*governance.quotas, *getattr(governance.policy, "quotas", ())))


class ClientExpired(RunError):
    """A call came under a key whose gateway was released after being idle."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One call's result, the client's tether session, and the approval the call waits for
    (when the policy asked for one)."""

    result: ToolResult
    session_id: str
    approval_id: str | None = None


@dataclass(slots=True)
class _Client:
    gateway: Gateway
    lock: asyncio.Lock
    last_used: float
    busy: int = 0


class ClientGateways:
    """The gateways of one server's clients, created on first use."""

    def __init__(self, tools: Iterable[Tool], governance: Governance, *,
                 idle_timeout: float | None = None, lasting: Iterable[str] = (),
                 on_new: Callable[[str, Gateway], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.tools = tuple(ToolRegistry(tools))  # a bad tool list fails here, not at a call
        self.governance = governance
        self.quotas = quotas_of(governance)  # checked before anyone is served
        self.idle_timeout = idle_timeout
        self.lasting = frozenset(lasting)
        self._on_new = on_new
        self._clock = clock
        self._clients: dict[str, _Client] = {}
        self._released: set[str] = set()
        self._running: set[asyncio.Task[Outcome]] = set()
        self._swept = clock()

    def __len__(self) -> int:
        return len(self._clients)

    def gateway(self, key: str) -> Gateway | None:
        """The gateway of client ``key``, if it has made a call."""
        client = self._clients.get(key)
        return None if client is None else client.gateway

    @property
    def gateways(self) -> tuple[Gateway, ...]:
        return tuple(c.gateway for c in self._clients.values())

    async def call(self, key: str, name: str, arguments: Mapping[str, Any], *,
                   identity: Identity | None = None, traceparent: object = None,
                   caller: Caller = SILENT) -> Outcome:
        """Run one call of client ``key`` through its gateway (``identity``: who the request's
        verified token names, the Subject of a gateway it creates; ``traceparent``: the
        client's span as it sent it, unchecked; ``caller``: the client waiting, which the tool
        may tell its progress and logs, or ask). Raises ClientExpired for a released client."""
        client = self._client(key, identity)
        client.busy += 1
        task = asyncio.ensure_future(self._run(client, name, arguments, traceparent, caller))
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return await asyncio.shield(task)

    async def _run(self, client: _Client, name: str, arguments: Mapping[str, Any],
                   traceparent: object, caller: Caller) -> Outcome:
        gateway = client.gateway
        try:
            async with client.lock:
                result = await gateway.call(name, arguments, traceparent=traceparent,
                                            caller=caller)
        finally:
            client.busy -= 1
            client.last_used = self._clock()
        approval = None
        if result.status == "denied":  # a refusal, or a wait for a person: which one?
            approval = next((r.id for r in gateway.approvals.pending(gateway.id)
                             if r.call_id == result.call_id), None)
        return Outcome(result, gateway.id, approval)

    def _lasting(self, key: str) -> bool:
        return key.partition("#")[0] in self.lasting

    def _client(self, key: str, identity: Identity | None = None) -> _Client:
        now = self._clock()
        self._sweep(now)
        client = self._clients.get(key)
        if client is None:
            if key in self._released:
                raise ClientExpired(
                    f"this client's governed session ended after {self.idle_timeout:g}s without "
                    "calls; its budget and journal are closed. Reconnect (a new MCP session) "
                    "to start a new one")
            client = self._clients[key] = _Client(self._new_gateway(key, identity),
                                                  asyncio.Lock(), now)
        client.last_used = now
        return client

    def _new_gateway(self, key: str, identity: Identity | None = None) -> Gateway:
        from tether.runtime.chokepoint.gateway import Gateway

        g = self.governance
        client, roles, tenant = g.client, g.roles, g.tenant_id
        if identity is not None:
            client, roles = identity.user_id, identity.roles
            tenant = identity.tenant_id if identity.tenant_id is not None else g.tenant_id
        gateway = Gateway(self.tools, policy=g.policy, client=client, budget=g.budget,
                          store=g.store, roles=roles, tenant_id=tenant,
                          approval_ttl=g.approval_ttl, max_result_chars=g.max_result_chars,
                          roll_calls=g.roll_calls, roll_seconds=g.roll_seconds,
                          telemetry=g.telemetry, quotas=self.quotas,
                          check_policy_names=False)  # serve() checked the served tools; the
        # proxy checks the upstream's current definitions, which a pinned spec may not show
        if self._on_new is not None:
            self._on_new(key, gateway)
        return gateway

    def end(self, key: str, why: str) -> None:
        """The client's MCP session ended (it sent DELETE): close its gateway now — its session
        ends in the journal with its spend — unless a call of it is still running, which the
        idle sweep then closes. A later call under the key is refused, as after an idle end.
        ``key`` also ends the gateways of that session's identities (``key#...``)."""
        for found in [k for k in self._clients if k == key or k.startswith(key + "#")]:
            client = self._clients[found]
            if self._lasting(found) or client.busy:
                continue
            del self._clients[found]
            client.gateway.close(why)
            self._released.add(found)

    def _sweep(self, now: float) -> None:
        if self.idle_timeout is None or now - self._swept < SWEEP_EVERY:
            return
        self._swept = now
        idle = [key for key, c in self._clients.items() if not self._lasting(key)
                and not c.busy and now - c.last_used > self.idle_timeout]
        for key in idle:
            self._clients.pop(key).gateway.close("the client's MCP session ended (idle)")
            self._released.add(key)
