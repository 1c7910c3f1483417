"""Hands each tool call a short-lived token instead of a secret, and takes them all back.

Decision: secrets are registered once, per tool, with the broker — as a static value or as a
provider called at issue time, so a rotated secret is picked up by the next call with no restart.
The runtime asks ``issue(session_id, tool)`` for every call of a tool that declares a
``credentials`` parameter, passes the token in, scrubs the result with ``token.redact`` and calls
``revoke_session`` when the session ends; the broker remembers which tokens each session holds
so that last step can revoke them all (and then forgets them, so an ended session keeps no
secret alive). A provider that fails becomes a ``CredentialError`` naming the tool; its own
exception is neither quoted nor chained, because its text may contain the secret or the
credential used to fetch it. The broker's repr lists tool names and counts, never a secret and
never a provider (whose repr — a ``functools.partial``, say — could contain one).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from tether.credentials.errors import CredentialError
from tether.credentials.redactor import SecretRedactor
from tether.credentials.token import ScopedToken, check_max_uses, check_name, check_ttl
from tether.errors import InvalidArgument, WrongType
from tether.secret import Secret

Provider = Callable[[], str | Secret]
"""Where a tool's secret comes from at call time: a callable returning it (``VaultKV`` is one)."""

log = logging.getLogger("tether.credentials")


@dataclass(frozen=True, slots=True, repr=False)
class _Registration:
    secret: Secret | None
    provider: Provider | None
    ttl: float
    max_uses: int


class CredentialBroker:
    """Registers secrets per tool; issues, tracks and revokes the session-scoped tokens."""

    __slots__ = ("_clock", "_issued", "_lock", "_registrations")

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._registrations: dict[str, _Registration] = {}
        self._issued: dict[str, list[ScopedToken]] = {}

    def register(self, tool: str, secret: str | Secret | None = None, *,
                 provider: Provider | None = None, ttl: float = 60.0,
                 max_uses: int = 1) -> None:
        """Give ``tool`` a credential: a fixed ``secret`` or a ``provider`` called at every issue.
        Each token lives ``ttl`` seconds and can be revealed ``max_uses`` times."""
        check_name("tool", tool)
        if (secret is None) == (provider is None):
            raise InvalidArgument(
                f"register({tool!r}, ...) needs exactly one of secret= or provider=: "
                "a fixed secret, or a callable that returns the current one")
        if provider is not None and not callable(provider):
            raise WrongType(f"provider for {tool!r} must be a callable returning str or Secret, "
                            f"got {type(provider).__name__}")
        wrapped = secret if secret is None or isinstance(secret, Secret) else Secret(secret)
        registration = _Registration(wrapped, provider, check_ttl(ttl), check_max_uses(max_uses))
        with self._lock:
            if tool in self._registrations:
                raise InvalidArgument(f"a credential is already registered for tool {tool!r}; call "
                                 f"unregister({tool!r}) first, or register a provider= that "
                                 "returns the current secret if it rotates")
            self._registrations[tool] = registration

    def unregister(self, tool: str) -> bool:
        """Forget ``tool``'s credential (tokens already issued keep working until they lapse).
        Returns whether one was registered."""
        with self._lock:
            return self._registrations.pop(tool, None) is not None

    @property
    def tools(self) -> frozenset[str]:
        """The tools that have a credential registered."""
        with self._lock:
            return frozenset(self._registrations)

    def __contains__(self, tool: object) -> bool:
        with self._lock:
            return tool in self._registrations

    def issue(self, session_id: str, tool: str) -> ScopedToken | None:
        """A fresh token for one call of ``tool`` in ``session_id``; ``None`` if the tool has no
        credential registered. Calls the tool's provider, if it has one, now."""
        check_name("session_id", session_id)
        check_name("tool", tool)
        found = self._current(tool)
        if found is None:
            return None
        registration, secret = found
        token = ScopedToken(secret, session_id=session_id, tool=tool, ttl=registration.ttl,
                            max_uses=registration.max_uses, clock=self._clock)
        with self._lock:
            self._issued.setdefault(session_id, []).append(token)
        log.debug("issued %r", token)
        return token

    def redactor(self, tool: str) -> SecretRedactor | None:
        """What blanks ``tool``'s current secret in text, without issuing a token (nothing can
        reveal it through this); ``None`` if the tool has no credential registered. A session
        loaded from its journal in another process asks this for every tool it was issued a
        token for, so what it hid before it still hides (a provider is called now: a secret
        rotated since is not the one the session saw, see docs/guide/credentials.md)."""
        check_name("tool", tool)
        found = self._current(tool)
        return None if found is None else SecretRedactor(found[1])

    def _current(self, tool: str) -> tuple[_Registration, Secret] | None:
        """``tool``'s registration and its secret now (its provider called), if it has one."""
        with self._lock:
            registration = self._registrations.get(tool)
        if registration is None:
            return None
        secret = registration.secret
        if secret is None:
            assert registration.provider is not None  # register() guarantees exactly one
            secret = _fetch(tool, registration.provider)
        return registration, secret

    async def aissue(self, session_id: str, tool: str) -> ScopedToken | None:
        """``issue`` for async callers: a provider (which may do network I/O, as ``VaultKV``
        does) runs on a daemon thread, so neither the event loop nor the interpreter's exit
        waits for one that hangs (the caller bounds the wait)."""
        with self._lock:
            registration = self._registrations.get(tool)
        if registration is None or registration.provider is None:
            return self.issue(session_id, tool)
        from tether.tools.threads import run_on_daemon_thread

        token: ScopedToken | None = await run_on_daemon_thread(
            functools.partial(self.issue, session_id, tool))
        return token

    def issued(self, session_id: str) -> list[ScopedToken]:
        """The tokens issued for ``session_id`` and not yet taken back by ``revoke_session``."""
        with self._lock:
            return list(self._issued.get(session_id, ()))

    def revoke_session(self, session_id: str) -> int:
        """Revoke every token issued for ``session_id`` and forget them. Returns how many."""
        with self._lock:
            tokens = self._issued.pop(session_id, [])
        for token in tokens:
            token.revoke()
        if tokens:
            log.debug("revoked %d token(s) of session %r", len(tokens), session_id)
        return len(tokens)

    def __repr__(self) -> str:
        with self._lock:
            tools = sorted(self._registrations)
            sessions = len(self._issued)
            tokens = sum(len(t) for t in self._issued.values())
        return f"CredentialBroker(tools={tools!r}, sessions={sessions}, tokens={tokens})"

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise WrongType("a CredentialBroker cannot be pickled or copied: it holds secrets and "
                        "live tokens. Share the one broker, or build one per process from your "
                        "secret store")


def _fetch(tool: str, provider: Provider) -> Secret:
    """Call ``provider`` and wrap its answer. Its exception is summarised, never chained."""
    failure: str | None = None
    reason: Any = "provider"
    try:
        value = provider()
    except CredentialError as exc:  # ours: its message is built without secrets
        failure, reason = str(exc), exc.reason
    except Exception as exc:
        failure = (f"the provider raised {type(exc).__name__} (its message is not shown, as it "
                   "may contain a secret; call the provider directly to debug it)")
    if failure is not None:  # raised outside the except blocks: no __context__ to leak
        raise CredentialError(f"could not get the credential for tool {tool!r}: {failure}",
                              reason=reason, tool=tool)
    if isinstance(value, Secret):
        return value
    if isinstance(value, str) and value:
        return Secret(value)
    kind = "an empty string" if value == "" else f"a {type(value).__name__}"
    raise CredentialError(f"could not get the credential for tool {tool!r}: the provider returned "
                          f"{kind}; it must return a non-empty str or a Secret",
                          reason="provider", tool=tool)
