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

import base64
import binascii
import hashlib
import hmac
import json
import math
import re
import secrets
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, NoReturn, final

from tether.credentials.errors import CredentialError
from tether.credentials.secret import Secret

REDACTED = "[secret redacted]"
# keys this process's secret digests (``ScopedToken.scrubs``): a digest is never written anywhere,
# and keyed it is no help in guessing a low-entropy secret even if it were
_DIGEST_KEY = secrets.token_bytes(32)


def check_ttl(ttl: object) -> float:
    """A ttl is a finite number of seconds above zero."""
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise ValueError(f"ttl must be a number of seconds, got {ttl!r}")
    if not (0 < ttl < math.inf):  # also rejects NaN
        raise ValueError(f"ttl must be a finite number of seconds above 0, got {ttl!r}; "
                         "keep it short: a token lives for one tool call")
    return float(ttl)


def check_max_uses(max_uses: object) -> int:
    """``max_uses`` is a whole number of reveals, at least one."""
    if isinstance(max_uses, bool) or not isinstance(max_uses, int) or max_uses < 1:
        raise ValueError(f"max_uses must be a whole number >= 1, got {max_uses!r}")
    return max_uses


def check_name(what: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _forms(secret: str) -> tuple[Secret, ...]:
    """The secret as it may appear in text: raw, JSON-escaped, repr-escaped, URL-encoded, hex
    (either case) and base64 (standard and URL-safe, with or without padding)."""
    raw = secret.encode()
    encoded = [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()]
    forms = {secret, json.dumps(secret)[1:-1], repr(secret)[1:-1],
             urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret),
             raw.hex(), raw.hex().upper(), *encoded, *(e.rstrip("=") for e in encoded)}
    return tuple(Secret(f) for f in sorted(forms, key=len, reverse=True) if f)


# a run of base64 text long enough to hide a secret inside something else it encodes
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{8,}={0,2}")
_PERCENT_BASE64 = re.compile(r"%(?:2[bBfF]|3[dD])")  # +, / and = as a URL encodes them
_URL_SAFE = str.maketrans("+/", "-_")


def _cores(raw: bytes) -> tuple[Secret, ...]:
    """The stretch of base64 that encodes nothing but ``raw``'s bytes, for each of the three
    places ``raw`` can start in a 3-byte group, in both alphabets: base64 text hiding ``raw``
    contains one of them, whatever comes before it. A cheap test that spares a run the
    decoding ``_hides`` does."""
    cores = set()
    for shift in range(3):
        encoded = base64.b64encode(bytes(shift) + raw).decode()
        core = encoded[-(-8 * shift // 6):8 * (shift + len(raw)) // 6]
        cores |= {core, core.translate(_URL_SAFE)}
    return tuple(Secret(core) for core in cores if core)


def _hides(run: str, secret: bytes) -> bool:
    """Whether base64 ``run`` decodes to bytes containing ``secret`` (a Basic-auth header
    encodes ``user:secret``, in which the secret's own base64 never appears). The run may start
    with characters glued to the base64 (``token/``, ``%20`` of a URL, any word): each of the
    four alignments is tried."""
    for start in range(4):
        tail = run[start:]
        padded = tail + "=" * (-len(tail.rstrip("=")) % 4)
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                if secret in decode(padded):
                    return True
            except (ValueError, binascii.Error):
                continue
    return False


@final
class ScopedToken:
    """A secret for one tool in one session, for ``ttl`` seconds and ``max_uses`` reveals."""

    __slots__ = ("_clock", "_cores", "_expires_at", "_forms", "_id", "_lock", "_max_uses",
                 "_revoked", "_scrubs", "_secret", "_session_id", "_tool", "_ttl", "_uses")

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
        self._forms = _forms(self._secret.get())
        self._cores = _cores(self._secret.get().encode())
        self._expires_at = clock() + self._ttl
        self._scrubs = hmac.new(_DIGEST_KEY, self._secret.get().encode(),
                                hashlib.sha256).hexdigest()

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
        if not isinstance(text, str):
            raise TypeError(f"redact takes a str, got {type(text).__name__}; convert the value "
                            "to the text that will be shown, then redact that")
        for form in self._forms:
            text = text.replace(form.get(), REDACTED)
        raw = self._secret.get().encode()
        cores = [core.get() for core in self._cores] or [""]

        def scrub(found: re.Match[str]) -> str:
            run = found.group()
            hides = any(core in run for core in cores) and _hides(run, raw)
            return REDACTED if hides else run

        text = _BASE64_RUN.sub(scrub, text)
        if _PERCENT_BASE64.search(text):  # base64 in a URL: %2B, %2F, %3D cut it into pieces
            joined = _PERCENT_BASE64.sub(lambda m: urllib.parse.unquote(m.group()), text)
            scrubbed = _BASE64_RUN.sub(scrub, joined)
            if scrubbed != joined:  # only text that hid the secret is given back decoded
                text = scrubbed
        return text

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
        return self._scrubs

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
        raise TypeError("a ScopedToken cannot be pickled: it is a live capability for one call "
                        "in this process, and a pickle would carry its secret. Store or send "
                        "token.to_dict() (metadata, no secret) instead")

    def __reduce__(self) -> NoReturn:
        self.__reduce_ex__(0)

    def __getstate__(self) -> NoReturn:
        self.__reduce_ex__(0)
