"""A governing MCP proxy: another MCP server's tools, served through tether's chokepoint.

Why: teams already run MCP servers (a filesystem, git, a database) and connect assistants to
them directly, where nothing decides, bounds or records the calls. The proxy sits in between.
Clients connect to it; it connects to the upstream server with tether's own MCP client
(``MCPToolset``: arguments checked against the upstream's schemas, definitions pinned,
annotations read as untrusted hints, every wait bounded), and each call goes through the
calling client's Gateway (``tether.serve.server``) with the operator's policy — deny, approval,
partial allow, mask, degrade — and into the journal. A call the policy refuses is never sent to
the upstream; a degraded call runs the fallback tool, itself decided again.

Decisions:

- Clients see the upstream's tools under their own names (no prefix), as *pinned*: the name,
  description, input schema and annotations approved at first discovery (or later by a
  person). A tool whose definition changed upstream keeps showing the approved text and is
  blocked at call time until re-approved; ``pins`` (``--pins FILE``) keeps pins across restarts,
  so a change made while the proxy was down is caught too.
- The tool list served is fixed when the proxy starts. A tool the upstream adds later is offered
  after a restart, where it is pinned like any new tool; nothing reaches a client past the
  pinning.
- The policy must name the upstream's tools: it is checked against them (their current
  definitions) once listed, and the proxy refuses to start on a rule naming a tool or an
  argument none of them has (PolicyNameError). The check is made again whenever the upstream's
  list is read again — it announced a change (``notifications/tools/list_changed``: looked at
  before each call is decided, and every ``CHECK_EVERY`` seconds), or it was restarted. A rule
  that no longer names a served tool would silently deny nothing, so while the check fails
  every call is refused (``NamesGuard``: a denial in the caller's journal, naming the rules),
  and the proxy says so on stderr; it serves again when the list matches the policy again.
  Refusing, not stopping: the clients and the journal are told why each call fails, and a
  supervisor restarting a stopped proxy would only meet the same refusal at start.
- One upstream connection serves every client; each client still has its own gateway, budget
  and journal.
- The two protocol eras meet here in any pairing: the upstream's is negotiated (``server/
  discover``, else the 2025 handshake; ``--upstream-protocol`` pins it), each client's is its
  own. An upstream's asks during a call — a 2025 back-channel request, or a 2026-07-28
  ``InputRequiredResult``, answered and retried by tether's client — go to the client waiting
  for the call, by a back-channel request to a 2025 client, or in rounds to a 2026-07-28 one
  (``tether.serve.rounds``: the upstream's call ends at its ask, runs again on the client's
  next round, and the same ask is answered from the client's answers, under the upstream's own
  key when it named one). Either way the call is one governed call a round, decided before the
  upstream sees it, and every ask passes the same checks and journal.
- ``read_only`` (``--read-only TOOL``) is the operator's word for upstream tools it reviewed
  as free of side effects (``MCPServer.read_only``): the policy sees them as read-only whatever
  the upstream's hints say. A name the upstream does not offer stops the proxy at start, as a
  policy naming a missing tool does: a misspelt word would otherwise vouch for nothing, and
  every call to the tool meant would be decided as a side effect without anyone knowing why.
- The hints clients see are the pinned definition's own (reviewed, or seen first): they only
  steer a client's prompts. What runs is decided by the policy on tether's cautious reading of
  the upstream's annotations (``tether.mcp.annotations``), not on these hints.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as types

from tether.errors import InvalidArgument
from tether.mcp.config import MCPServer, Protocol
from tether.mcp.errors import MCPError
from tether.mcp.pins import PinStore
from tether.mcp.supervise import CHECK_EVERY, RESTARTS, watch
from tether.mcp.toolset import MCPToolset
from tether.serve.clients import Governance, quotas_of
from tether.serve.server import serve, tool_annotations
from tether.serve.transports import HOST

if TYPE_CHECKING:
    from tether.policy.names import NamesGuard
    from tether.runtime.chokepoint.gateway import Gateway
    from tether.types import ToolSpec

UPSTREAM = "upstream"
UPSTREAM_TOOLS = "the upstream's tools"
CHANGED_ADVICE = ("Restart the proxy with a policy that names the upstream's tools as they are "
                  "now, or bring the upstream back to the tools the policy names")
#: What the proxy's MCP clients are told when a call finds the upstream gone (it is restarting).
RESTART_ADVICE = ("tether's proxy is restarting the server: call the tool again in a few seconds "
                  "if repeating it is safe (the proxy never repeats a call by itself)")


def upstream_server(argv: Sequence[str], *, name: str = UPSTREAM,
                    env: Mapping[str, str] | None = None, trusted: bool = False,
                    call_timeout: float = 30.0, connect_timeout: float = 20.0,
                    relay: bool = False, protocol: Protocol = "auto",
                    read_only: Sequence[str] = ()) -> MCPServer:
    """The upstream MCP server spawned from ``argv`` (stdio), its tools keeping their names.
    ``relay``: its sampling and elicitation requests during a call go to the proxy's client
    waiting for it (``"relay"``, journaled; ``tether mcp proxy``'s default), else declined.
    ``protocol``: the era spoken to it (``MCPServer``'s: negotiated by default).
    ``read_only``: its tools (as it names them) the operator reviewed and vouches have no side
    effect (``MCPServer.read_only``)."""
    if not argv or not argv[0]:
        raise InvalidArgument("give the command of the upstream MCP server after '--', e.g. "
                         "tether mcp proxy --policy policy.yaml -- npx -y "
                         "@modelcontextprotocol/server-filesystem /data")
    return MCPServer.stdio(name, argv[0], *argv[1:], env=env, trusted=trusted, prefix="",
                           call_timeout=call_timeout, connect_timeout=connect_timeout,
                           elicitation="relay" if relay else "decline",
                           sampling="relay" if relay else "decline", protocol=protocol,
                           read_only=read_only)


def check_read_only(toolset: MCPToolset) -> None:
    """InvalidArgument when the server's ``read_only`` names a tool it does not offer."""
    import difflib

    offered = sorted(tool.mcp_name for tool in toolset)
    missing = sorted(toolset.server.read_only.difference(offered))

    def named(name: str) -> str:
        close = difflib.get_close_matches(name, offered, n=1, cutoff=0.6)
        return f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name)

    if missing:
        raise InvalidArgument(
            "read_only (--read-only) names " + "; ".join(map(named, missing))
            + ", which the upstream does not offer, so the word would vouch for nothing. Name "
            "its tools as it lists them: " + (", ".join(offered) or "it offers none"))


def proxied_listing(toolset: MCPToolset) -> list[types.Tool]:
    """The ``tools/list`` entries of an open toolset: each tool's pinned definition (for a tool
    blocked by pinning, the approved one with a note; for a new tool awaiting approval, no
    server text at all — see ``tether.mcp.tool.visible_spec``).

    The hints are those of the pinned definition — what was reviewed, or seen first — so a
    client does not prompt on every read: they steer a client's prompts, never what runs, which
    the proxy's policy decides on tether's own, cautious reading of the tool. A tool whose
    definition waits for approval shows that cautious reading instead."""
    listing = []
    server = toolset.server.name
    for tool in toolset:
        pinned = toolset.pins.get(server, tool.mcp_name)
        waiting = toolset.pins.pending(server, tool.mcp_name) is not None
        hints = (pinned.definition.get("annotations") if pinned is not None and not waiting
                 else None)
        listing.append(types.Tool(
            name=tool.spec.name, description=tool.spec.description,
            input_schema=dict(tool.spec.parameters),
            annotations=reviewed_hints(hints) if isinstance(hints, Mapping)
            else tool_annotations(tool.meta)))
    return listing


def reviewed_hints(annotations: Mapping[str, object]) -> types.ToolAnnotations:
    """A pinned definition's annotations, as the spec's hints (a non-boolean hint is none)."""
    def hint(key: str) -> bool | None:
        value = annotations.get(key)
        return value if isinstance(value, bool) else None

    title = annotations.get("title")
    return types.ToolAnnotations(
        title=title if isinstance(title, str) else None,
        read_only_hint=hint("readOnlyHint"), destructive_hint=hint("destructiveHint"),
        idempotent_hint=hint("idempotentHint"), open_world_hint=hint("openWorldHint"))


async def proxy(upstream: MCPServer, governance: Governance, *,
                transport: Literal["stdio", "http"] = "stdio", port: int = 0,
                host: str = HOST, pins: PinStore | None = None,
                require_approval_for_new: bool = False,
                name: str | None = None, on_ready: Callable[[str], None] | None = None,
                on_client: Callable[[str, Gateway], None] | None = None,
                log: Callable[[str], None] | None = None, restarts: int = RESTARTS,
                check_policy_names: bool = True) -> None:
    """Connect to ``upstream`` and serve its tools, governed, until the transport ends; the
    upstream is stopped when the proxy stops, and restarted when it dies (``supervise``; each
    event told to ``log``). Raises MCPConnectionError when the upstream cannot be started (the
    message has its last stderr lines), InvalidArgument when its ``read_only`` names a tool it
    does not offer, PolicyNameError when the policy names tools or arguments the upstream's
    tools do not have (``check_policy_names=False``: the policy is used
    as it is, never checked), UpstreamLost when it died and could not be restarted."""
    from tether.policy.names import NamesGuard, PolicyNameError, names_message

    say = log or _stderr
    guard = NamesGuard(governance.policy, whose=UPSTREAM_TOOLS, advice=CHANGED_ADVICE)
    served: frozenset[str] = frozenset()

    def relisted() -> None:  # a call re-listed a changed upstream after it was decided
        checked(toolset, served, guard, say)
        if guard.problems:
            raise MCPError("the call was not sent: " + names_message(guard.problems,
                                                                     guard.advice))

    async with MCPToolset(upstream, pins=pins, require_approval_for_new=require_approval_for_new,
                          on_relisted=relisted if check_policy_names else None,
                          advice=RESTART_ADVICE) as toolset:
        check_read_only(toolset)
        served = frozenset(toolset.names)
        if check_policy_names and guard.check(served_specs(toolset, served)):
            raise PolicyNameError(names_message(guard.problems, (
                "Fix the names to match the upstream's tools: " + ", ".join(sorted(served))
                + "; a policy shared by servers whose tools differ can opt out with "
                "--skip-policy-name-check")))

        async def recheck() -> None:
            await recheck_names(toolset, served, guard, say)

        serving = asyncio.ensure_future(serve(
            list(toolset), replace(governance, policy=guard, quotas=quotas_of(governance))
            if check_policy_names else governance,
            transport=transport, port=port, host=host,
            name=name or f"tether-proxy-{upstream.name}",
            listing=proxied_listing(toolset), on_ready=on_ready, on_client=on_client,
            check_policy_names=False, before_call=recheck if check_policy_names else None))
        watching = asyncio.ensure_future(watch(toolset, say, restarts=restarts))
        tasks = [serving, watching]
        if check_policy_names:
            tasks.append(asyncio.ensure_future(_keep_checking(recheck)))
        try:
            await asyncio.wait({serving, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if not watching.cancelled():
            watching.result()  # UpstreamLost: the upstream could not be brought back
        serving.result()  # the server's own error, if it ended with one


def served_specs(toolset: MCPToolset, served: frozenset[str]) -> list[ToolSpec]:
    """The served tools the upstream still offers, with their current definitions."""
    return [spec for spec in toolset.offered() if spec.name in served]


async def recheck_names(toolset: MCPToolset, served: frozenset[str], guard: NamesGuard,
                        log: Callable[[str], None]) -> None:
    """List the upstream's tools again if it announced a change, and check the policy's names
    against them; ``log`` is told when the verdict changes. Raises what the listing raised."""
    if toolset.stale:
        await toolset.arefresh()
    checked(toolset, served, guard, log)


def checked(toolset: MCPToolset, served: frozenset[str], guard: NamesGuard,
            log: Callable[[str], None]) -> None:
    """Check the policy's names against the upstream's tools as last listed; ``log`` is told
    when the verdict changes."""
    from tether.policy.names import names_message

    if not guard.check(served_specs(toolset, served)):
        return
    if guard.problems:
        log("the upstream's tool list changed and the policy no longer matches it; every call "
            "is refused until it does: " + names_message(guard.problems, guard.advice))
    else:
        log("the policy matches the upstream's tools again; its calls are decided by it again")


async def _keep_checking(recheck: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Re-check without waiting for a call, so the operator hears of a change when it comes."""
    while True:
        await asyncio.sleep(CHECK_EVERY)
        with contextlib.suppress(Exception):  # a dead upstream is the watchdog's to report
            await recheck()


def _stderr(message: str) -> None:
    print(f"tether mcp proxy: {message}", file=sys.stderr, flush=True)
