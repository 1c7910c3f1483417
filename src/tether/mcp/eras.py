"""Which MCP protocol era a connection speaks: 2026-07-28 (``server/discover``, stateless) or
the 2025 ``initialize`` handshake — negotiated, or pinned by ``MCPServer(protocol=...)``.

Why: MCP's 2026-07-28 revision replaced the handshake with a probe (``server/discover``) and a
per-request envelope (``_meta`` protocolVersion / clientInfo / clientCapabilities, and the
``MCP-Protocol-Version`` / ``Mcp-Method`` / ``Mcp-Name`` headers). A 2026-only server refuses
``initialize``; a 2025 server refuses ``server/discover``. tether must reach both.

Decision: tether drives the negotiation itself with the SDK's *public* session primitives
(``ClientSession.send_discover``, ``adopt``, ``initialize``), following the policy of the SDK's
``mode="auto"`` (its private ``mcp.client._probe.negotiate_auto``): probe at the newest modern
version; on -32022 retry once at a version the server names; anything that is not positive
evidence of a modern server falls back to the handshake. It does not call that private function,
nor ``mcp.Client`` (which owns its transports, where tether brings its own: a stdio child whose
stderr it keeps, an HTTP client with its OAuth flow), because tether must say *what* went wrong
— the discover answer is untrusted input, and a refusal names what the server said (cut) and
what to do — and must honour a pinned era: ``protocol="2026-07-28"`` never falls back (a garbage
or foreign discover answer is refused), ``protocol="2025-11-25"`` never probes. On a 2026
connection the SDK stamps every request's envelope and headers once ``adopt`` has run.
"""

from __future__ import annotations

from typing import Any

from tether.mcp.errors import MCPConnectionError

LEGACY = "2025-11-25"  # the initialize handshake (the server may counter-offer an older 2025 one)
MODERN = "2026-07-28"
MAX_SHOWN = 200  # characters of a server's text quoted in a message


def cut(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "…"


def _supported(data: Any) -> list[str] | None:
    """The versions named by a -32022 error's data, or None when it names none readably."""
    from mcp_types import UnsupportedProtocolVersionErrorData
    from pydantic import ValidationError

    try:
        return list(UnsupportedProtocolVersionErrorData.model_validate(data).supported)
    except ValidationError:
        return None


def first_error(exc: Any) -> str:
    """Where and what the first problem of a pydantic ``ValidationError`` is, cut."""
    errors = exc.errors()
    if not errors:
        return "invalid"
    where = ".".join(map(str, errors[0].get("loc", ()))) or "(the result)"
    return f"{where}: {cut(errors[0].get('msg', 'invalid'))}"


class Negotiation:
    """One negotiation on one fresh ``ClientSession`` for server ``name`` under ``protocol``."""

    def __init__(self, session: Any, name: str, protocol: str) -> None:
        self.session = session
        self.name = name
        self.protocol = protocol

    def _refused(self, what: str, advice: str) -> MCPConnectionError:
        return MCPConnectionError(f"MCP server {self.name!r}: {what}; {advice}")

    async def run(self) -> str:
        """Negotiate; the protocol version the connection then speaks."""
        from mcp.shared.exceptions import MCPError as SDKError
        from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
        from mcp_types.version import LATEST_MODERN_VERSION, MODERN_PROTOCOL_VERSIONS

        if self.protocol == LEGACY:
            try:
                return await self._handshake()
            except SDKError as exc:
                raise self._refused(
                    f"refused the 2025 handshake ({cut(exc.error.message)}, JSON-RPC error "
                    f"{exc.code})", "it is pinned to protocol='2025-11-25' (MCPServer(protocol="
                    "...)); if it is a 2026-07-28 server, use protocol='auto' or "
                    "'2026-07-28'") from None
        version = LATEST_MODERN_VERSION
        for attempt in range(2):
            problem = await self._discover(version, retry=attempt == 0)
            if problem is None:
                return str(self.session.protocol_version)
            if isinstance(problem, tuple):  # -32022 naming a mutual modern version: once more
                version = problem[1]
                continue
            if self.protocol == MODERN:
                raise self._refused(problem, "it is pinned to protocol='2026-07-28' "
                                    "(MCPServer(protocol=...)); if it speaks the 2025 handshake, "
                                    "use protocol='2025-11-25' or 'auto'")
            try:
                return await self._handshake()
            except SDKError as exc:
                supported = (_supported(exc.error.data) if exc.code ==
                             UNSUPPORTED_PROTOCOL_VERSION else None) or []
                mutual = [v for v in MODERN_PROTOCOL_VERSIONS if v in supported]
                if mutual and attempt == 0:  # the handshake's -32022 is modern evidence
                    version = mutual[-1]
                    continue
                raise self._refused(
                    f"speaks neither protocol era tether knows: {problem}, and it refused the "
                    f"2025 handshake ({cut(exc.error.message)}, JSON-RPC error {exc.code})",
                    "check that the URL (or command) is an MCP server's endpoint, or pin the era "
                    "it speaks with MCPServer(protocol='2025-11-25' | '2026-07-28')") from None
        raise self._refused("named a protocol version to retry with but refused it again",
                            "pin the era it speaks with MCPServer(protocol=...)")

    async def _handshake(self) -> str:
        """The 2025 ``initialize`` handshake (the SDK checks the version the server picks)."""
        try:
            result = await self.session.initialize()
        except RuntimeError as exc:  # the server chose a version the SDK does not speak
            raise self._refused(f"answered the 2025 handshake with {cut(str(exc))}",
                                "it speaks a protocol version tether's MCP SDK does not; "
                                "upgrade the SDK (pip install -U mcp) or the server") from None
        return str(result.protocol_version)

    async def _discover(self, version: str, *, retry: bool) -> str | tuple[str, str] | None:
        """Probe at ``version`` and adopt a usable answer (None). Else why it is not modern
        evidence (a str), or ``("retry", version)`` for a -32022 naming a mutual version."""
        from mcp.shared.exceptions import MCPError as SDKError
        from mcp_types import UNSUPPORTED_PROTOCOL_VERSION, DiscoverResult
        from mcp_types.version import (
            HANDSHAKE_PROTOCOL_VERSIONS,
            KNOWN_PROTOCOL_VERSIONS,
            MODERN_PROTOCOL_VERSIONS,
        )
        from pydantic import ValidationError

        try:
            raw = await self.session.send_discover(version)
        except SDKError as exc:
            if exc.code == UNSUPPORTED_PROTOCOL_VERSION:
                supported = _supported(exc.error.data)
                mutual = [v for v in MODERN_PROTOCOL_VERSIONS if v in (supported or ())]
                if mutual and retry:
                    return ("retry", mutual[-1])
                if supported is not None and not any(v in HANDSHAKE_PROTOCOL_VERSIONS
                                                     for v in supported):
                    raise self._refused(
                        f"speaks only protocol versions {cut(supported)} (-32022), none of "
                        f"which tether speaks ({', '.join(KNOWN_PROTOCOL_VERSIONS)})",
                        "upgrade tether's MCP SDK (pip install -U mcp) or use a server that "
                        "speaks one of these") from None
            return (f"it refused server/discover ({cut(exc.error.message)}, JSON-RPC error "
                    f"{exc.code})")
        try:
            result = DiscoverResult.model_validate(raw)
        except ValidationError as exc:
            return (f"it answered server/discover with something that is not a discover result "
                    f"({first_error(exc)})")
        mutual = [v for v in MODERN_PROTOCOL_VERSIONS if v in result.supported_versions]
        if not mutual:
            return (f"its server/discover answer names no 2026-era version tether speaks "
                    f"(supportedVersions {cut(result.supported_versions)})")
        self.session.adopt(result)
        return None

