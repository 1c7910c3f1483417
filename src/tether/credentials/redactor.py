"""How a secret is found in text, in every form it takes, and blanked there.

Why its own module: a ``ScopedToken`` redacts its secret from the output of the call it was
issued for, and a session loaded in another process must redact the same secret from what
follows without any token (``CredentialBroker.redactor``): both use this one mechanism.

Decision: a ``SecretRedactor`` knows its secret raw, JSON-, repr- and URL-encoded, in hex (either
case) and in base64 (both alphabets, padded or not, and inside the base64 of a longer text such as
a Basic-auth header's ``user:secret``), and replaces each with ``[secret redacted]``. Its
``scrubs`` digest (keyed with a random key of this process, never written anywhere) says which
secret it hides, so a journal keeps one scrubber per secret. It shows its secret to nothing:
repr says only that it redacts one, and it refuses pickling.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
import urllib.parse
from typing import Any, NoReturn, final

from tether.errors import WrongType
from tether.secret import Secret

REDACTED = "[secret redacted]"
"""What a secret is replaced by wherever it would be shown (a tool's output, a log line)."""
# keys this process's secret digests (``ScopedToken.scrubs``): a digest is never written anywhere,
# and keyed it is no help in guessing a low-entropy secret even if it were
_DIGEST_KEY = secrets.token_bytes(32)



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
class SecretRedactor:
    """Blanks one secret, in each of its forms, wherever it occurs in a text."""

    __slots__ = ("_cores", "_forms", "_scrubs", "_secret")

    def __init__(self, secret: Secret) -> None:
        self._secret = secret
        self._forms = _forms(secret.get())
        self._cores = _cores(secret.get().encode())
        self._scrubs = hmac.new(_DIGEST_KEY, secret.get().encode(), hashlib.sha256).hexdigest()

    @property
    def scrubs(self) -> str:
        """Which secret ``redact`` hides, as a keyed digest (never the secret)."""
        return self._scrubs

    def redact(self, text: str) -> str:
        """``text`` with every occurrence of the secret (raw, JSON-, repr- or URL-encoded, hex,
        base64, or inside base64 of a longer text such as ``user:secret``, URL-encoded or not)
        replaced by ``[secret redacted]``."""
        if not isinstance(text, str):
            raise WrongType(f"redact takes a str, got {type(text).__name__}; convert the value "
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

    def __repr__(self) -> str:
        return "SecretRedactor(<one secret>)"

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise WrongType("a SecretRedactor cannot be pickled: it holds its secret")
