"""Pinning: an MCP tool runs only with the definition a person (or first use) approved.

Why: an MCP server can change a tool after it was reviewed — a new description that carries
instructions for the model, a schema that now takes a destination address ("rug pull"). So each
tool's definition (name, description, input schema, annotations) is fingerprinted — sha256 of
its canonical JSON — when first seen, and the fingerprint is pinned. A later definition that
differs is recorded as *pending* and the tool is blocked until someone approves it with
``pins.approve(server, tool)``. New tools are pinned on first discovery (trust on first use), or,
with ``require_approval_for_new``, wait for approval too.

Decision: the store is a small protocol (get, pending, pin, propose, withdraw, approve) with an
in-memory and a JSON-file implementation; the rule that decides lives in ``observe`` so every
store applies the same one. The JSON file is re-read on every operation and replaced atomically,
so an approval made by another process takes effect at the next call without a restart.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from tether.mcp.errors import MCPError, PinError

DEFINITION_KEYS = ("name", "description", "inputSchema", "annotations")


def definition_of(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned part of an MCP tool as listed (camelCase wire form)."""
    return {key: tool.get(key) for key in DEFINITION_KEYS}


def canonical_json(value: Any) -> str:
    """``value`` as JSON with sorted keys and no spaces: one text per value, for hashing."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(definition: Mapping[str, Any]) -> str:
    """The ``sha256:`` digest of a tool definition's canonical JSON: what a pin holds."""
    return "sha256:" + hashlib.sha256(canonical_json(definition).encode()).hexdigest()


def now_utc() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class Pin:
    """One tool definition as seen from one server. ``approved_by`` is ``None`` for a pin made
    on first discovery; ``definition`` is kept so a reviewer can compare old and new."""

    server: str
    tool: str
    fingerprint: str
    definition: Mapping[str, Any] = field(repr=False)
    pinned_at: str
    approved_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"server": self.server, "tool": self.tool, "fingerprint": self.fingerprint,
                "definition": dict(self.definition), "pinned_at": self.pinned_at,
                "approved_by": self.approved_by}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Pin:
        return cls(str(data["server"]), str(data["tool"]), str(data["fingerprint"]),
                   dict(data.get("definition") or {}), str(data["pinned_at"]),
                   None if data.get("approved_by") is None else str(data["approved_by"]))


@runtime_checkable
class PinStore(Protocol):
    """Where approved and pending tool definitions live."""

    def get(self, server: str, tool: str) -> Pin | None:
        """The approved pin, if any."""
        ...

    def pending(self, server: str, tool: str) -> Pin | None:
        """A definition seen but not approved (a change, or a new tool awaiting approval)."""
        ...

    def pin(self, pin: Pin) -> None:
        """Record ``pin`` as the approved definition and drop any pending one."""
        ...

    def propose(self, pin: Pin) -> None:
        """Record ``pin`` as pending (replacing an older pending one)."""
        ...

    def withdraw(self, server: str, tool: str) -> None:
        """Drop a pending definition (the server went back to the approved one)."""
        ...

    def approve(self, server: str, tool: str, *, approver: str | None = None,
                fingerprint: str | None = None) -> Pin:
        """Make the pending definition the approved one; PinError if nothing is pending, or if
        ``fingerprint`` (of the definition the approver reviewed) no longer matches it."""
        ...

    def all_pending(self) -> list[Pin]:
        ...


def _approve(store: PinStore, server: str, tool: str, approver: str | None,
             fingerprint: str | None = None) -> Pin:
    pending = store.pending(server, tool)
    if pending is None:
        pinned = store.get(server, tool)
        state = (f"its definition pinned on {pinned.pinned_at} is current" if pinned
                 else "it has never been seen; connect to the server first")
        raise PinError(f"nothing to approve for tool {tool!r} of MCP server {server!r}: {state}")
    if fingerprint is not None and fingerprint != pending.fingerprint:
        raise PinError(f"tool {tool!r} of MCP server {server!r} changed again after it was "
                       f"reviewed (reviewed {fingerprint[:12]}, now {pending.fingerprint[:12]}); "
                       "review the new definition and approve that one")
    approved = Pin(server, tool, pending.fingerprint, pending.definition, now_utc(),
                   approver or "unnamed approver")
    store.pin(approved)
    return approved


class MemoryPinStore:
    """Pins in a dict: for tests and for runs that pin per process."""

    __slots__ = ("_lock", "_pending", "_pins")

    def __init__(self) -> None:
        self._pins: dict[tuple[str, str], Pin] = {}
        self._pending: dict[tuple[str, str], Pin] = {}
        self._lock = threading.Lock()

    def get(self, server: str, tool: str) -> Pin | None:
        return self._pins.get((server, tool))

    def pending(self, server: str, tool: str) -> Pin | None:
        return self._pending.get((server, tool))

    def pin(self, pin: Pin) -> None:
        with self._lock:
            self._pins[(pin.server, pin.tool)] = pin
            self._pending.pop((pin.server, pin.tool), None)

    def propose(self, pin: Pin) -> None:
        with self._lock:
            self._pending[(pin.server, pin.tool)] = pin

    def withdraw(self, server: str, tool: str) -> None:
        with self._lock:
            self._pending.pop((server, tool), None)

    def approve(self, server: str, tool: str, *, approver: str | None = None,
                fingerprint: str | None = None) -> Pin:
        return _approve(self, server, tool, approver, fingerprint)

    def all_pending(self) -> list[Pin]:
        return sorted(self._pending.values(), key=lambda p: (p.server, p.tool))


@contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock, across processes, on a hidden file beside ``path`` (``flock``;
    where the platform has none, only the caller's thread lock applies)."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class JSONFilePinStore:
    """Pins in one JSON file (``{"version": 1, "servers": {server: {tool: {...}}}}``), meant to
    be reviewed and committed like a lock file. Re-read on every operation; written atomically.
    Each change reads, edits and writes the file under a lock held across threads and processes
    (a ``.{name}.lock`` file beside it), so concurrent writers never lose each other's update."""

    __slots__ = ("_lock", "path")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._load()  # a broken file is an error now, not at the first tool call

    def _load(self) -> dict[str, dict[str, dict[str, Any]]]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise MCPError(f"cannot read pin file {self.path}: {exc}; fix it, or move it away "
                           "to pin every tool afresh") from None
        if not isinstance(raw, dict) or raw.get("version") != 1 or not isinstance(
                raw.get("servers"), dict):
            raise MCPError(f"pin file {self.path} is not a tether pin file (expected "
                           '{"version": 1, "servers": {...}}); fix it or move it away')
        return raw["servers"]  # type: ignore[no-any-return]

    def _save(self, servers: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"version": 1, "servers": servers}, indent=2, sort_keys=True,
                          ensure_ascii=False)
        fd, tmp = tempfile.mkstemp(prefix=".pins-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text + "\n")
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _entry(self, server: str, tool: str, kind: str) -> Pin | None:
        data = self._load().get(server, {}).get(tool, {}).get(kind)
        return None if data is None else Pin.from_dict(data)

    def _update(self, server: str, tool: str, **changes: Pin | None) -> None:
        with self._lock, _exclusive(self.path):
            servers = self._load()
            entry = servers.setdefault(server, {}).setdefault(tool, {})
            for kind, pin in changes.items():
                if pin is None:
                    entry.pop(kind, None)
                else:
                    entry[kind] = pin.to_dict()
            self._save(servers)

    def get(self, server: str, tool: str) -> Pin | None:
        return self._entry(server, tool, "pinned")

    def pending(self, server: str, tool: str) -> Pin | None:
        return self._entry(server, tool, "pending")

    def pin(self, pin: Pin) -> None:
        self._update(pin.server, pin.tool, pinned=pin, pending=None)

    def propose(self, pin: Pin) -> None:
        self._update(pin.server, pin.tool, pending=pin)

    def withdraw(self, server: str, tool: str) -> None:
        if self.pending(server, tool) is not None:
            self._update(server, tool, pending=None)

    def approve(self, server: str, tool: str, *, approver: str | None = None,
                fingerprint: str | None = None) -> Pin:
        return _approve(self, server, tool, approver, fingerprint)

    def all_pending(self) -> list[Pin]:
        return [Pin.from_dict(entry["pending"])
                for _, tools in sorted(self._load().items())
                for _, entry in sorted(tools.items()) if "pending" in entry]

    def entries(self) -> list[tuple[Pin | None, Pin | None]]:
        """Every tool in the file, by server and tool: (its pinned, its pending definition)."""
        def pin(entry: Mapping[str, Any], kind: str) -> Pin | None:
            return Pin.from_dict(entry[kind]) if kind in entry else None

        return [(pin(entry, "pinned"), pin(entry, "pending"))
                for _, tools in sorted(self._load().items())
                for _, entry in sorted(tools.items())]

    def how_to_approve(self, server: str, tool: str) -> str:
        """The commands a person runs to review a waiting definition and approve it."""
        return (f"`tether mcp pins diff {server} {tool} --pins {self.path}`, then `tether mcp "
                f"pins approve {server} {tool} --pins {self.path} --approver NAME`")


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a tool may be called with the definition the server shows now."""

    allowed: bool
    reason: str = ""
    pinned: Pin | None = None  # the approved definition, when there is one


def observe(store: PinStore, server: str, definition: Mapping[str, Any], *,
            require_approval_for_new: bool = False, how_to_approve: str = "") -> Verdict:
    """Apply the pinning rule to the definition a server shows now, recording what it saw."""
    tool = str(definition.get("name"))
    fp = fingerprint(definition)
    file_advice = getattr(store, "how_to_approve", None)  # a pin file: its CLI commands
    approve = (file_advice(server, tool) if file_advice is not None
               else how_to_approve or f"pins.approve({server!r}, {tool!r})")
    pinned = store.get(server, tool)
    if pinned is not None and pinned.fingerprint == fp:
        if store.pending(server, tool) is not None:
            store.withdraw(server, tool)
        return Verdict(True, pinned=pinned)
    seen = Pin(server, tool, fp, dict(definition), now_utc())
    if pinned is None and not require_approval_for_new:
        store.pin(seen)
        return Verdict(True, pinned=seen)
    waiting = store.pending(server, tool)
    if waiting is None or waiting.fingerprint != fp:
        store.propose(seen)
    if pinned is None:
        return Verdict(False, f"tool {tool!r} of MCP server {server!r} is new and new tools "
                              f"need approval; a person must review it and approve it with "
                              f"{approve}. The call was not sent to the server.")
    changed = [key for key in DEFINITION_KEYS
               if canonical_json(pinned.definition.get(key)) != canonical_json(
                   definition.get(key))]
    return Verdict(False, f"tool definition changed since it was pinned on {pinned.pinned_at} "
                          f"({', '.join(changed) or 'definition'} differ); a person must review "
                          f"the change and re-approve it with {approve}. The call was not sent "
                          "to the server.", pinned)
