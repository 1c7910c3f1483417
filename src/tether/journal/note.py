"""Signed notes, Ed25519 keys and witness cosignatures, in the formats transparency logs share.

Why: a record an outsider can verify needs a signature they can check with a public key alone,
in a format their own tools already read. The field's format is C2SP's: a *signed note*
(https://c2sp.org/signed-note, v1.0.0) is text ending in a newline, a blank line, then lines
``— <key name> <base64(4-byte key ID || signature)>``; an Ed25519 key's ID is
``SHA-256(name || 0x0A || 0x01 || public key)[:4]``, and a public key travels as a *vkey*
``<name>+<hex key ID>+<base64(0x01 || public key)>`` (Go's ``golang.org/x/mod/sumdb/note``
writes a private key as ``PRIVATE+KEY+<name>+<hex key ID>+<base64(0x01 || seed)>``; the key
files here use that text). A *cosignature* (https://c2sp.org/tlog-cosignature, Ed25519 type)
is a note signature whose key ID uses type byte 0x04 and whose signature is ``u64 big-endian
timestamp || Ed25519 signature`` over ``"cosignature/v1\\ntime <t>\\n" + the note text``.

Decision: this module only encodes, signs and checks; it keeps no state and knows nothing of
stores. The verifier follows the spec's rules: signatures of unknown keys (another name or
another key ID) are ignored; a signature of a known key that does not verify rejects the note.
Ed25519 comes from the ``cryptography`` package (the ``sign`` extra), imported on first use, so
a store that signs nothing never loads it. The tests check this module against the spec
ecosystem's own vectors (Go's PeterNeumann note, a real witness cosignature).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.errors import BadData, MissingExtra, UsageError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ED25519 = 0x01  # signed-note's signature type of a plain Ed25519 signature
COSIGNATURE_V1 = 0x04  # tlog-cosignature's timestamped Ed25519 type
DASH = "\u2014 "  # every signature line starts with an em dash and a space
MAX_SIGNATURES = 100
CONTROL = re.compile("[\x00-\x09\x0b-\x1f]")  # a note holds no control character but newline
SIGNING_KEY_VARIABLE = "TETHER_SIGNING_KEY"


class KeyFileError(UsageError, ValueError):
    """A key that cannot be read or used (missing, readable by others, malformed); the message
    says what to do."""


class NoteInvalid(BadData):
    """A signed note that is malformed or whose signature does not verify."""


def _ed25519() -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:  # pragma: no cover - the extra is part of the dev install
        raise MissingExtra("signing needs the cryptography package: pip install "
                        "'tether[sign]'") from None
    return ed25519


def key_id(name: str, kind: int, public: bytes) -> bytes:
    """The 4-byte key ID signed-note recommends: SHA-256(name || 0x0A || type || key)[:4]."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([kind]) + public).digest()[:4]


def _check_name(name: str) -> str:
    if not name or "+" in name or any(c.isspace() for c in name):
        raise KeyFileError(f"key name {name!r}: a key name is non-empty, with no spaces and no "
                        "'+' (e.g. example.com/tether/prod)")
    return name


@dataclass(frozen=True, slots=True)
class Verifier:
    """A public key as a vkey names it: who signs, with which algorithm type, which key."""

    name: str
    kind: int  # ED25519 or COSIGNATURE_V1
    public: bytes

    @property
    def id(self) -> bytes:
        return key_id(self.name, self.kind, self.public)

    def vkey(self) -> str:
        material = base64.b64encode(bytes([self.kind]) + self.public).decode()
        return f"{self.name}+{self.id.hex()}+{material}"

    def check(self, message: bytes, signature: bytes) -> bool:
        ed25519 = _ed25519()
        from cryptography.exceptions import InvalidSignature

        try:  # a key that is no Ed25519 point is ValueError; a wrong signature InvalidSignature
            ed25519.Ed25519PublicKey.from_public_bytes(self.public).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


def parse_vkey(text: str) -> Verifier:
    """A vkey ``<name>+<hex ID>+<base64(type || key)>``; its ID must match its key."""
    parts = text.strip().split("+", 2)
    if len(parts) != 3:
        raise KeyFileError(f"{text.strip()[:60]!r} is not a public key (vkey): expected "
                        "<name>+<hex key id>+<base64 key>, as `tether audit keygen` writes")
    name, hexid, material = parts
    try:
        raw = base64.b64decode(material, validate=True)
        wanted = bytes.fromhex(hexid)
    except ValueError:
        raise KeyFileError(f"public key {name!r}: its key id or key is not hex/base64") from None
    if len(raw) != 33 or raw[0] not in (ED25519, COSIGNATURE_V1) or len(wanted) != 4:
        raise KeyFileError(f"public key {name!r}: not an Ed25519 key of type 0x01 or 0x04")
    found = Verifier(_check_name(name), raw[0], raw[1:])
    if found.id != wanted:
        raise KeyFileError(f"public key {name!r}: its key id {hexid} does not match its key (the "
                        "file was edited or truncated)")
    return found


@dataclass(frozen=True, slots=True)
class Signer:
    """A private key: signs notes (type 0x01) or cosigns checkpoints (type 0x04). Its repr
    never shows the key."""

    name: str
    kind: int
    seed: bytes

    def __repr__(self) -> str:
        return f"Signer({self.name!r}, key id {self.verifier().id.hex()})"

    def _key(self) -> Ed25519PrivateKey:
        key: Ed25519PrivateKey = _ed25519().Ed25519PrivateKey.from_private_bytes(self.seed)
        return key

    def verifier(self) -> Verifier:
        from cryptography.hazmat.primitives import serialization

        public = self._key().public_key().public_bytes(serialization.Encoding.Raw,
                                                      serialization.PublicFormat.Raw)
        return Verifier(self.name, self.kind, public)

    def skey(self) -> str:
        material = base64.b64encode(bytes([self.kind]) + self.seed).decode()
        return f"PRIVATE+KEY+{self.name}+{self.verifier().id.hex()}+{material}"

    def sign(self, text: str) -> str:
        """A signature line over ``text`` (a note's text, ending in a newline)."""
        if self.kind != ED25519:
            raise KeyFileError(f"{self.name} is a cosigning key: it cosigns checkpoints only")
        sig = self._key().sign(_text(text).encode())
        return f"{DASH}{self.name} {base64.b64encode(self.verifier().id + sig).decode()}\n"

    def cosign(self, text: str, timestamp: int) -> str:
        """A cosignature/v1 line over a checkpoint's ``text`` at ``timestamp`` (seconds)."""
        if self.kind != COSIGNATURE_V1:
            raise KeyFileError(f"{self.name} is a signing key, not a witness's cosigning key")
        stamp = timestamp.to_bytes(8, "big")
        sig = self._key().sign(cosigned_message(text, timestamp))
        blob = base64.b64encode(self.verifier().id + stamp + sig).decode()
        return f"{DASH}{self.name} {blob}\n"


def generate(name: str, kind: int = ED25519) -> Signer:
    """A new key named ``name`` (``kind``: ED25519 for an operator, COSIGNATURE_V1 for a
    witness), from 32 random bytes."""
    return Signer(_check_name(name), kind, os.urandom(32))


def parse_skey(text: str) -> Signer:
    """The key in a private key file's text (``PRIVATE+KEY+<name>+<hex id>+<base64>``, as
    ``tether audit keygen`` and Go's ``sumdb/note`` write it), or KeyFileError."""
    parts = text.strip().split("+", 4)
    if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"]:
        raise KeyFileError("not a private key: expected PRIVATE+KEY+<name>+<hex id>+<base64>, as "
                        "`tether audit keygen` writes")
    try:
        raw = base64.b64decode(parts[4], validate=True)
    except ValueError:
        raise KeyFileError(f"private key {parts[2]!r}: its key is not base64") from None
    if len(raw) != 33 or raw[0] not in (ED25519, COSIGNATURE_V1):
        raise KeyFileError(f"private key {parts[2]!r}: not an Ed25519 key of type 0x01 or 0x04")
    signer = Signer(_check_name(parts[2]), raw[0], raw[1:])
    if signer.verifier().id.hex() != parts[3]:
        raise KeyFileError(f"private key {parts[2]!r}: its key id does not match its key")
    return signer


def read_private(path: str | Path) -> Signer:
    """A private key file; refused if others than its owner may read it (chmod 600 it)."""
    where = Path(path)
    try:
        mode = where.stat().st_mode
        text = where.read_text(encoding="utf-8")
    except OSError as exc:
        raise KeyFileError(f"cannot read the private key {where} ({exc.strerror or exc}); create "
                        "one with `tether audit keygen`") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(f"the private key {where} is readable by others (mode "
                        f"{stat.S_IMODE(mode):o}): run chmod 600 {where}")
    return parse_skey(text)


def signing_key() -> Signer | None:
    """The operator's signing key, from the file ``TETHER_SIGNING_KEY`` names (kept outside the
    database, as the audit key is), if set."""
    path = os.environ.get(SIGNING_KEY_VARIABLE)
    return read_private(path) if path else None


def read_public(path: str | Path) -> Verifier:
    """The verifier in the ``.pub`` file at ``path`` (a vkey), or KeyFileError."""
    try:
        return parse_vkey(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise KeyFileError(f"cannot read the public key {path} ({exc.strerror or exc}); it is the "
                        ".pub file `tether audit keygen` wrote") from None


def write_pair(signer: Signer, stem: str | Path) -> tuple[Path, Path]:
    """``<stem>.key`` (created 0600, never overwritten) and ``<stem>.pub``."""
    private, public = Path(f"{stem}.key"), Path(f"{stem}.pub")
    try:
        fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise KeyFileError(f"{private} exists: keygen never overwrites a key; pick another "
                        "name or remove it first") from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(signer.skey() + "\n")
    public.write_text(signer.verifier().vkey() + "\n", encoding="utf-8")
    return private, public


def cosigned_message(text: str, timestamp: int) -> bytes:
    """What a tlog-cosignature/v1 signs for the checkpoint ``text`` at ``timestamp`` (seconds
    since the epoch)."""
    return f"cosignature/v1\ntime {timestamp}\n{_text(text)}".encode()


def _text(text: str) -> str:
    if not text.endswith("\n") or "\n\n" in text or CONTROL.search(text):
        raise NoteInvalid("a note's text ends in a newline, has no blank line and no control "
                        "character")
    return text


def split(note: str) -> tuple[str, list[tuple[str, bytes]]]:
    """A note's text and its signature lines as (key name, decoded signature)."""
    cut = note.rfind("\n\n")
    if cut < 0 or not note.endswith("\n"):
        raise NoteInvalid("not a signed note: no blank line between its text and signatures")
    text, lines = note[:cut + 1], note[cut + 2:].splitlines()
    if not lines or len(lines) > MAX_SIGNATURES:
        raise NoteInvalid(f"a signed note carries 1 to {MAX_SIGNATURES} signatures")
    sigs = []
    for line in lines:
        name, _, blob = line.removeprefix(DASH).partition(" ")
        try:
            raw = base64.b64decode(blob, validate=True)
        except ValueError:
            raw = b""
        if not line.startswith(DASH) or not name or len(raw) < 5:
            raise NoteInvalid(f"not a signature line: {line[:60]!r}")
        sigs.append((name, raw))
    return _text(text), sigs


@dataclass(frozen=True, slots=True)
class Signed:
    """Who signed a note, as one of the given keys verified it."""

    verifier: Verifier
    timestamp: int | None  # a cosignature's time; None for a plain signature


def open_note(note: str, verifiers: list[Verifier]) -> tuple[str, list[Signed]]:
    """The note's text and the known keys that signed it; ``NoteInvalid`` when a known key's
    signature fails or no known key signed."""
    text, sigs = split(note)
    known = {(v.name, v.id): v for v in verifiers}
    found: list[Signed] = []
    for name, raw in sigs:
        verifier = known.get((name, raw[:4]))
        if verifier is None:
            continue  # another key's signature: ignored, as the spec says
        if verifier.kind == COSIGNATURE_V1:
            stamp = int.from_bytes(raw[4:12], "big")
            ok = len(raw) == 76 and verifier.check(cosigned_message(text, stamp), raw[12:])
            signed = Signed(verifier, stamp)
        else:
            ok = len(raw) == 68 and verifier.check(text.encode(), raw[4:])
            signed = Signed(verifier, None)
        if not ok:
            raise NoteInvalid(f"the signature of {name} does not verify: the note was changed "
                            "after it was signed, or forged")
        found.append(signed)
    if not found:
        raise NoteInvalid("no signature of a known key: the note is signed by "
                        f"{', '.join(sorted({n for n, _ in sigs}))}")
    return text, found
