"""Keyed fingerprints of the values decisions masked: how a session loaded in another process
keeps blanking them, though its journal never holds their text.

Why: a value a decision masks (a card number) is written ``[masked]`` in every event, so the
journal cannot say what it was; yet a session resumed in another process — ``tether resume``, a
fleet worker — must keep it out of the events it writes next, when a tool or the model repeats
it. So when a journal with a store hides a value it also journals, in a ``value.hidden`` event,
the value's length, its shape (all digits, all word characters, or neither: where in a text to
look, so a card number is sought in runs of digits only) and its HMAC-SHA256 under the
*redaction key*; a loaded session rebuilds its ``Fingerprints`` from those events and blanks
every stretch of later text whose HMAC matches.

Decision on the key: it is never in the database. It is ``TETHER_REDACTION_KEY`` if set; else it
is derived from ``TETHER_AUDIT_KEY`` (kept outside the database already, by every process of a
deployment that signs anchors); else a random key in a file of the user's own
(``$XDG_DATA_HOME/tether/redaction.key``, mode 0600), created on first use — so processes of one
user on one machine share it with nothing to set up, and processes on other machines need
``TETHER_REDACTION_KEY``. Each fingerprint names its key (a digest of it, never the key); a
session whose fingerprints were made under another key is not loaded, rather than resumed with
values it can no longer blank. The limit: someone who holds the database *and* the key can test
guesses offline, which for a short value (a 4-digit PIN, a card number whose bank is known) is
quick — guard the key as the audit key is guarded. Without the key a fingerprint says nothing
but the value's length and shape.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import re
import secrets
from pathlib import Path
from typing import Any

from tether.errors import MissingFile, UsageError
from tether.journal.redaction import MASKED, MIN_SUBSTRING_CHARS, NOT_AFTER, NOT_BEFORE
from tether.vocabulary import EventType

FINGERPRINT_TYPE = EventType.VALUE_HIDDEN  # the event that carries one fingerprint
KEY_VARIABLE = "TETHER_REDACTION_KEY"
_AUDIT_VARIABLE = "TETHER_AUDIT_KEY"


def redaction_key() -> bytes:
    """The key fingerprints are made with (see the module's docstring for where it lives)."""
    given = os.environ.get(KEY_VARIABLE)
    if given:
        return given.encode()
    audit = os.environ.get(_AUDIT_VARIABLE)
    if audit:
        return hmac.digest(audit.encode(), b"tether redaction fingerprints", "sha256")
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    path = Path(base) / "tether" / "redaction.key"
    try:
        return _key_file(path)
    except (OSError, ValueError) as exc:
        raise MissingFile(f"no redaction key: {KEY_VARIABLE} is not set and the key file {path} "
                          f"could not be read or made ({type(exc).__name__}); set {KEY_VARIABLE} "
                          "(the same in every process that runs or resumes these "
                          "sessions)") from None


def _key_file(path: Path) -> bytes:
    with contextlib.suppress(FileNotFoundError):  # none yet: this process makes one
        return bytes.fromhex(path.read_text().strip())
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    draft = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_hex(32))
    try:  # the first process to link its draft wins; the others read its key
        with contextlib.suppress(FileExistsError):
            os.link(draft, path)
    finally:
        draft.unlink()
    return bytes.fromhex(path.read_text().strip())


class KeyMismatch(UsageError, LookupError):
    """A journal's fingerprints were made under another redaction key than this process has."""


_SHAPES = {"digits": re.compile(r"[0-9]+"), "word": re.compile(r"\w+")}  # else: "text"


def _shape(value: str) -> str:
    """Which runs of a text the value can only lie within: a cheap bound on where to look."""
    for shape, run in _SHAPES.items():
        if run.fullmatch(value):
            return shape
    return "text"


class Fingerprints:
    """Values known only by their length, shape and keyed digest: finds and blanks them."""

    __slots__ = ("_id", "_keyed", "_known", "_tokens")

    def __init__(self, key: bytes) -> None:
        self._keyed = hmac.new(key, digestmod="sha256")  # copied per digest: the key's pads once
        self._id = hmac.digest(key, b"tether redaction key id", "sha256").hex()[:16]
        self._known: dict[tuple[int, str], set[bytes]] = {}  # (length, shape) -> digests
        self._tokens: dict[int, re.Pattern[str]] = {}  # a short value: as a whole token only

    def __bool__(self) -> bool:
        return bool(self._known)

    def _digest(self, text: str) -> bytes:
        keyed = self._keyed.copy()
        keyed.update(text.encode("utf-8", "surrogatepass"))
        return keyed.digest()

    def remember(self, value: str) -> dict[str, Any] | None:
        """The event data fingerprinting ``value``; None if it is known already."""
        digest, where = self._digest(value), (len(value), _shape(value))
        if digest in self._known.get(where, ()):
            return None
        self._add(*where, digest)
        return {"key": self._id, "chars": len(value), "shape": where[1], "digest": digest.hex()}

    def recall(self, data: Any) -> None:
        """Take a journaled fingerprint back; KeyMismatch when another key made it."""
        if data.get("key") != self._id:
            raise KeyMismatch(
                "the session's masked values were fingerprinted under another redaction key "
                "than this process has, so it could not keep them masked; run it where "
                f"{KEY_VARIABLE} (or TETHER_AUDIT_KEY) is the one the session ran with, or the "
                "key file $XDG_DATA_HOME/tether/redaction.key is the same")
        self._add(int(data["chars"]), str(data.get("shape", "text")),
                  bytes.fromhex(data["digest"]))

    def _add(self, length: int, shape: str, digest: bytes) -> None:
        self._known.setdefault((length, shape if shape in _SHAPES else "text"), set()).add(digest)
        if length < MIN_SUBSTRING_CHARS and length not in self._tokens:
            self._tokens[length] = re.compile(rf"{NOT_AFTER}.{{{length}}}{NOT_BEFORE}", re.S)

    def blank(self, text: str, *, tokens: bool = True) -> str:
        """``text`` with every stretch whose fingerprint is known written ``[masked]`` (a short
        one only where it stands as a whole token, and only when ``tokens``)."""
        for length, shape in sorted(self._known, reverse=True):
            token = self._tokens.get(length)
            if token is None or tokens:
                text = self._blank(text, length, shape, token)
        return text

    def _blank(self, text: str, length: int, shape: str,
               token: re.Pattern[str] | None) -> str:
        digests, found = self._known[(length, shape)], []
        run = _SHAPES.get(shape)
        spans = [(0, len(text))] if run is None else [m.span() for m in run.finditer(text)]
        for start, end in spans:
            at = start
            while at + length <= end:
                if (self._digest(text[at:at + length]) in digests
                        and (token is None or token.match(text, at))):
                    found.append(at)
                    at += length
                else:
                    at += 1
        if not found:
            return text
        out, last = [], 0
        for at in found:
            out += [text[last:at], MASKED]
            last = at + length
        return "".join(out) + text[last:]

    def hides_number(self, value: int | float) -> bool:
        text = json.dumps(value)
        return self._digest(text) in self._known.get((len(text), _shape(text)), ())
