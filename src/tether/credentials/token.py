"""What a tool receives at call time: a short-lived, counted, revocable handle on a secret.

Decision: a tool never gets a raw secret from the runtime. It gets a ``ScopedToken`` bound to one
session and one tool, that expires after a short ttl (on the monotonic clock, so wall-clock jumps
neither extend nor cut it) and can be revealed at most ``max_uses`` times. ``reveal()`` is the
only way to the value, counts under a lock (sync tools run on threads), and refuses with a
``CredentialError`` that says why. The token also knows how to ``redact`` its secret from text,
so the runtime can scrub tool output and error messages before they reach the model or the
journal; redaction keeps working after the token expires or is revoked, because scrubbing
happens after the call. A token is a live capability, not a value: it refuses pickling and
JSON, ``vars()`` has nothing to show (slots), and a copy is the same token — copying can never
mint extra uses. ``to_dict()`` is the metadata for audits.
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn, final

from tether.credentials.errors import CredentialError
from tether.credentials.redactor import REDACTED, SecretRedactor
from tether.errors import InvalidArgument, WrongType
from tether.secret import Secret

__all__ = ["REDACTED", "ScopedToken", "check_max_uses", "check_name", "check_ttl"]


def check_ttl(ttl: object) -> float:
    """A ttl is a finite number of seconds above zero."""
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise InvalidArgument(f"ttl must be a number of seconds, got {ttl!r}")
    if not (0 < ttl < math.inf):  # also rejects NaN
        raise InvalidArgument(f"ttl must be a finite number of seconds above 0, got {ttl!r}; "
                         "keep it short: a token lives for one tool call")
    return float(ttl)


def check_max_uses(max_uses: object) -> int:
    """``max_uses`` is a whole number of reveals, at least one."""
    if isinstance(max_uses, bool) or not isinstance(max_uses, int) or max_uses < 1:
        raise InvalidArgument(f"max_uses must be a whole number >= 1, got {max_uses!r}")
    return max_uses


def check_name(what: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidArgument(f"{what} must be a non-empty string, got {value!r}")
    return value


@final
class ScopedToken:
    """A secret for one tool in one session, for ``ttl`` seconds and ``max_uses`` reveals."""

    __slots__ = ("_clock", "_expires_at", "_id", "_lock", "_max_uses", "_redactor",
                 "_revoked", "_secret", "_session_id", "_tool", "_ttl", "_uses")

    def __init__(self, secret: str | Secret, *, session_id: str, tool: str, ttl: float = 60.0,
                 max_uses: int = 1, clock: Callable[[], float] = time.monotonic) -> None:
        self._secret = secret if isinstance(secret, Secret) else Secret(secret)
        self._session_id = check_name("session_id", session_id)
        self._tool = check_name("tool", tool)
        self._ttl = check_ttl(ttl)
        self._max_uses = check_max_uses(max_uses)
        self._clock = clock
        self._id = secrets.token_hex(8)
        self._lock = threading.Lock()
        self._uses = 0
        self._revoked = False
        self._redactor = SecretRedactor(self._secret)
        self._expires_at = clock() + self._ttl

    # -- the one way to the secret -------------------------------------------------------------

    def reveal(self, tool: str | None = None) -> str:
        """Return the secret and count one use. Pass ``tool`` (your own name) to have the token
        refuse if it was issued for another tool. Raises ``CredentialError`` when not valid."""
        with self._lock:
            reason = self._refusal(tool)
            if reason is None:
                self._uses += 1
                return self._secret.get()
        raise reason

    def _refusal(self, tool: str | None) -> CredentialError | None:
        name = self._tool
        if tool is not None and tool != name:
            return CredentialError(
                f"this token was issued for tool {name!r}, not {tool!r}: every tool gets its own "
                "token from the broker at call time; never pass a token between tools",
                reason="wrong_tool", tool=tool)
        if self._revoked:
            return CredentialError(
                f"the token for tool {name!r} was revoked (its session ended, or it was revoked "
                "explicitly); the next call of the tool gets a fresh token",
                reason="revoked", tool=name)
        late = self._clock() - self._expires_at
        if late >= 0:
            return CredentialError(
                f"the token for tool {name!r} expired {late:.1f}s ago (ttl {self._ttl:g}s): "
                "reveal it at the start of the call, or register the tool with a longer ttl",
                reason="expired", tool=name)
        if self._uses >= self._max_uses:
            return CredentialError(
                f"the token for tool {name!r} has been revealed {self._max_uses} time(s), its "
                "limit: reveal it once and keep the value for the rest of the call, or register "
                "the tool with a larger max_uses", reason="used_up", tool=name)
        return None

    def revoke(self) -> None:
        """Stop the token working now. Idempotent; ``redact`` still works afterwards."""
        with self._lock:
            self._revoked = True

    def redact(self, text: str) -> str:
        """``text`` with every occurrence of the secret (raw, JSON-, repr- or URL-encoded, hex,
        base64, or inside base64 of a longer text such as ``user:secret``, URL-encoded or not)
        replaced by ``[secret redacted]``."""
        return self._redactor.redact(text)

    # -- metadata ------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """A random id for audits; unrelated to the secret."""
        return self._id

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def tool(self) -> str:
        return self._tool

    @property
    def ttl(self) -> float:
        return self._ttl

    @property
    def max_uses(self) -> int:
        return self._max_uses

    @property
    def uses_left(self) -> int:
        with self._lock:
            return self._max_uses - self._uses

    @property
    def expires_at(self) -> float:
        """When the token stops working, on the clock it was issued with (monotonic)."""
        return self._expires_at

    @property
    def expires_in(self) -> float:
        """Seconds until expiry; zero once expired."""
        return max(0.0, self._expires_at - self._clock())

    @property
    def expired(self) -> bool:
        return self._clock() >= self._expires_at

    @property
    def revoked(self) -> bool:
        return self._revoked

    @property
    def valid(self) -> bool:
        """Whether ``reveal()`` would succeed now (for the token's own tool)."""
        with self._lock:
            return self._refusal(None) is None

    def to_dict(self) -> dict[str, Any]:
        """Everything about the token except the secret: safe for events, logs and exports."""
        with self._lock:
            uses_left = self._max_uses - self._uses
        return {"id": self._id, "session_id": self._session_id, "tool": self._tool,
                "ttl": self._ttl, "expires_in": round(self.expires_in, 3),
                "max_uses": self._max_uses, "uses_left": uses_left,
                "expired": self.expired, "revoked": self._revoked}

    # -- every accidental route to text is closed ----------------------------------------------

    @property
    def scrubs(self) -> str:
        """Which secret ``redact`` hides, as a keyed digest (never the secret): tokens of one
        secret redact alike, so a journal keeps one scrubber per secret, not one per call."""
        return self._redactor.scrubs

    def __repr__(self) -> str:
        state = "revoked" if self._revoked else "expired" if self.expired else (
            f"expires_in={self.expires_in:.1f}s")
        return (f"ScopedToken(id={self._id!r}, tool={self._tool!r}, "
                f"session_id={self._session_id!r}, uses_left={self.uses_left}, {state}, "
                f"secret={self._secret!r})")

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(repr(self), spec)

    def __copy__(self) -> ScopedToken:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> ScopedToken:
        return self

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise WrongType("a ScopedToken cannot be pickled: it is a live capability for one call "
                        "in this process, and a pickle would carry its secret. Store or send "
                        "token.to_dict() (metadata, no secret) instead")

    def __reduce__(self) -> NoReturn:
        self.__reduce_ex__(0)

    def __getstate__(self) -> NoReturn:
        self.__reduce_ex__(0)
