"""What can go wrong with an MCP server, as exceptions whose text says what to do next.

Decision: tool-call failures are ordinary exceptions raised from ``invoke``, because the runtime
already turns any exception into an error result the model reads (status ``error``), and a
timeout into a timeout result. So a server's ``isError`` answer, a server that died and a call
blocked by pinning each become one clear line in the conversation and the journal; none of them
hangs the run or reaches the model as a traceback.
"""

from __future__ import annotations

from tether.errors import RunError


class MCPError(RunError, RuntimeError):
    """Base of every error of tether's MCP client."""


class MCPConnectionError(MCPError):
    """The server could not be started, reached or initialised, or it went away."""


class MCPToolError(MCPError):
    """The server answered the call with ``isError: true``; the message is the server's text."""


class MCPCapabilityMissing(MCPError):
    """The server refused the call for want of a client capability tether did not declare
    (JSON-RPC -32021, MissingRequiredClientCapabilityError); ``required`` is what it named, as
    a ``ClientCapabilities`` object (only the capabilities MCP defines, checked)."""

    def __init__(self, message: str, required: dict[str, object]) -> None:
        super().__init__(message)
        self.required = required


class MCPToolBlocked(MCPError):
    """Pinning refused the call: the tool's definition is not (or no longer) approved."""

    def __init__(self, message: str, *, server: str, tool: str) -> None:
        super().__init__(message)
        self.server = server
        self.tool = tool


class PinError(MCPError, KeyError):
    """An approval named a tool that has nothing to approve."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""
