"""The one exception the credential layer raises when a secret cannot be handed out.

Decision: every refusal — a token that expired, was used up, was revoked or belongs to another
tool; a provider or a vault that failed — is a ``CredentialError`` whose message says why and what
to do next, and whose ``reason`` is a short stable code a caller can branch on. A message never
contains a secret: messages are built here from metadata only (tool, session, counts, paths), and
errors from providers are never chained, because their text may carry the very secret (or the
credential used to fetch it) that this layer exists to keep out of logs.
"""

from __future__ import annotations

from typing import Literal

from tether.errors import RunError

Reason = Literal[
    "expired",  # the token's ttl has passed
    "used_up",  # the token has been revealed max_uses times
    "revoked",  # the token or its session was revoked
    "wrong_tool",  # the token was issued for another tool
    "provider",  # a provider raised or returned something that is not a secret
    "not_found",  # the secret store has no such secret or key
    "forbidden",  # the secret store refused the request
    "unavailable",  # the secret store is sealed, down or unreachable
    "bad_response",  # the secret store answered with something unexpected
]


class CredentialError(RunError):
    """A credential could not be issued or revealed. ``reason`` says which check failed."""

    def __init__(self, message: str, *, reason: Reason, tool: str | None = None) -> None:
        super().__init__(message)
        self.reason: Reason = reason
        self.tool = tool
