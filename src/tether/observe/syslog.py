"""Syslog for SIEM events: RFC 5424 messages over UDP, or over TCP with RFC 6587 framing.

Why not ``logging.handlers.SysLogHandler``: it writes the old BSD format (RFC 3164) — no
version, no structured timestamp — and frames TCP messages by a trailing newline, which a JSON
message may legitimately contain escaped forms of but a collector cannot count on. SIEM
collectors (rsyslog, syslog-ng, Splunk, Sentinel's AMA) read RFC 5424, and over TCP the
octet-counting framing of RFC 6587 §3.4.1 (``<length> <message>``) is the unambiguous one.

Decision: a message is ``<PRI>1 TIMESTAMP HOSTNAME tether PROCID MSGID - MSG`` — facility
``log audit`` (13), the syslog severity from the OCSF ``severity_id``, the timestamp the OCSF
event's own ``time`` (UTC, milliseconds), MSGID the journal event's kind (``tool.decision``), no
structured data, and MSG the OCSF event as ASCII JSON (so no BOM is needed). A send that fails
raises to the caller (``SIEMSink`` counts it); a TCP connection is dropped on failure and made
again for the next message. UDP datagrams cannot exceed 65,507 bytes: a larger event fails, and
is counted — use TCP for events with large arguments.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tether.errors import InvalidArgument, Unreachable

FACILITY = 13  # log audit
#: OCSF severity_id -> syslog severity (RFC 5424 §6.2.1)
SEVERITIES = {0: 6, 1: 6, 2: 5, 3: 4, 4: 3, 5: 2, 6: 1, 99: 6}
UDP_LIMIT = 65_507


@dataclass(frozen=True, slots=True)
class SyslogTarget:
    """Where to send: ``udp://host:port`` or ``tcp://host:port`` (``host:port`` is UDP)."""

    host: str
    port: int
    protocol: str = "udp"

    @classmethod
    def parse(cls, target: str | SyslogTarget) -> SyslogTarget:
        if isinstance(target, SyslogTarget):
            return target
        protocol, sep, rest = str(target).partition("://")
        if not sep:
            protocol, rest = "udp", str(target)
        host, _, port = rest.rpartition(":")
        host = host.strip("[]")
        if protocol not in ("udp", "tcp") or not host or not port.isdigit() \
                or not 0 < int(port) < 65536:
            raise InvalidArgument(f"syslog target {target!r} is not udp://HOST:PORT or "
                                  "tcp://HOST:PORT (e.g. syslog='tcp://127.0.0.1:6514')")
        return cls(host, int(port), protocol)


def _field(text: str, limit: int) -> str:
    """A header field: printable ASCII without spaces, at most ``limit`` long; else "-"."""
    text = text[:limit]
    return text if text and all(33 <= ord(c) <= 126 for c in text) else "-"


def frame(record: dict[str, Any], message: str, hostname: str, procid: int) -> bytes:
    """One RFC 5424 message for the OCSF ``record`` whose JSON text is ``message``."""
    pri = FACILITY * 8 + SEVERITIES.get(record.get("severity_id", 0), 6)
    when = datetime.fromtimestamp(record.get("time", 0) / 1000, UTC)
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
    msgid = _field(str((record.get("metadata") or {}).get("event_code") or ""), 32)
    header = f"<{pri}>1 {stamp} {_field(hostname, 255)} tether {procid} {msgid} -"
    return f"{header} {message}".encode("ascii", "backslashreplace")


class SyslogWriter:
    """Sends frames to one target; not thread-safe (``SIEMSink`` calls it from its writer)."""

    def __init__(self, target: SyslogTarget, timeout: float = 5.0) -> None:
        self.target = target
        self._timeout = timeout
        self._sock: socket.socket | None = None

    def send(self, data: bytes) -> None:
        if self.target.protocol == "udp":
            if len(data) > UDP_LIMIT:
                raise Unreachable(f"a {len(data)}-byte event does not fit a UDP datagram "
                                  f"({UDP_LIMIT}); send syslog over tcp:// instead")
            if self._sock is None:
                self._sock = socket.socket(_family(self.target.host), socket.SOCK_DGRAM)
            self._sock.sendto(data, (self.target.host, self.target.port))
            return
        try:
            if self._sock is None:
                self._sock = socket.create_connection((self.target.host, self.target.port),
                                                      timeout=self._timeout)
            self._sock.sendall(str(len(data)).encode() + b" " + data)
        except OSError:
            self.close()
            raise

    def close(self) -> None:
        if self._sock is not None:
            sock, self._sock = self._sock, None
            sock.close()


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET
