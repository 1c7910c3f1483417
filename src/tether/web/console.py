"""What a console serves and how it admits people: one frozen value, built once at start.

Why: the console holds no state of its own, but it does hold settings — the store, the approval
rules, how people authenticate, where it listens — and every page reads them. One frozen value on
``app.state.console`` keeps them in one place that no request can change.

Decision: the settings refuse, when they are made, what must never run: an unknown ``auth``, a
``header:`` with no header name, and ``auth="none"`` on anything but a loopback host (everyone
who could reach it would be the operator). Whatever starts a console — the command, a test, an
embedding app — gets the same refusal.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from tether.errors import InvalidArgument
from tether.runtime.approvals.rules import ApprovalRules
from tether.store.base import Store

AUTH_MODES = ("link", "header:NAME", "none")


def loopback(host: str) -> bool:
    """Whether ``host`` is reachable only from this machine (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class Console:
    """A console's settings.

    Args:
        store: The store it shows (and where decisions are recorded).
        rules: Who may decide which approvals (``ApprovalRules``).
        auth: ``"link"`` (a one-time login link), ``"header:NAME"`` (a reverse proxy's header,
            trusted only from ``proxies``) or ``"none"`` (everyone is an unauthenticated
            operator; only with an explicit flag, and only on a loopback ``host``).
        proxies: Addresses whose ``header:NAME`` is trusted.
        operator: The name the login link signs in as (the OS user who started the console).
        reports: Directories of evaluation reports the console lists.
        host: The address it listens on (``auth="none"`` is refused off loopback).
        poll: Seconds between two reads of the store by a live stream (``/events/...``).
        login_ttl: Seconds a login session (the cookie the login link sets) stays valid."""

    store: Store
    rules: ApprovalRules = field(default_factory=ApprovalRules)
    auth: str = "link"
    proxies: frozenset[str] = frozenset({"127.0.0.1", "::1"})
    operator: str = "operator"
    reports: tuple[str, ...] = ()
    host: str = "127.0.0.1"
    poll: float = 0.5
    login_ttl: float = 12 * 3600.0

    def __post_init__(self) -> None:
        if self.auth not in ("link", "none") and not (
                self.auth.startswith("header:") and self.auth.removeprefix("header:").strip()):
            raise InvalidArgument(f"auth {self.auth!r} is not one of {', '.join(AUTH_MODES)}; "
                                  "e.g. header:X-Forwarded-Email behind an authenticating proxy")
        if self.auth == "none" and not loopback(self.host):
            raise InvalidArgument(
                f"auth 'none' would make everyone who reaches {self.host} the operator; listen "
                "on 127.0.0.1, or use --auth link (the default) or --auth header:NAME behind "
                "an authenticating proxy")
        if self.poll <= 0 or self.login_ttl <= 0:
            raise InvalidArgument(f"poll ({self.poll}) and login_ttl ({self.login_ttl}) must "
                                  "be positive numbers of seconds")

    @property
    def header(self) -> str | None:
        """The header a trusted proxy names the viewer in (``auth="header:NAME"``), or None."""
        return self.auth.removeprefix("header:").strip() if self.auth.startswith("header:") \
            else None
