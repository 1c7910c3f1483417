"""A witness: a second key, in another process, that cosigns a checkpoint only if it extends the
last one it cosigned — and remembers it.

Why: an operator's signed checkpoint proves who made it, not that an older one was not replaced:
whoever holds the database (and even the operator key) could cut the newest sessions with their
anchors and sign a smaller checkpoint. A witness holding its own key and its own state refuses
that: for each origin (the operator key's name) it keeps the newest checkpoint it cosigned and
that checkpoint's lane heads, and cosigns a new one only when the store proves the extension —
the anchor bodies each lane appended since, which the witness hashes onto its heads
(``tether.journal.checkpoint.extend``) to reach the new root. A smaller size (a rollback) or a
root the bodies do not reach (a fork, a rewrite) is refused with 409, as C2SP's tlog-witness
refuses an inconsistent checkpoint; the cosignature is tlog-cosignature/v1 (``journal.note``).
A proof must start at the witness's newest (the request names the counts it starts from): when
another checkpointer's was cosigned meanwhile, it is refused as stale and the client proves
again from there.

Decision: stdlib HTTP on a bind the operator gives (loopback in the tests), two endpoints —
``POST /add-checkpoint`` (JSON: the signed checkpoint, its lane heads on first contact, the
proof) answering the cosignature line, and ``GET /checkpoint?origin=`` answering the newest
cosigned checkpoint, which ``tether audit verify --witness URL`` brings in from outside the
store. The request body is JSON rather than tlog-witness's text because the proof is anchor
bodies, not Merkle hashes. The first checkpoint of an origin is trusted on first use (its heads
are checked against its root, not against history); state is one JSON file replaced atomically
(written, fsynced, renamed) under a lock, so a crash leaves the old state or the new, never half.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlparse

from tether.errors import RunError
from tether.journal import checkpoint
from tether.journal.note import NoteInvalid, Signer, Verifier, open_note
from tether.store.anchor_chain import Anchor
from tether.store.base import Store

MAX_BODY = 64 * 1024 * 1024
STALE = "stale proof"  # another checkpoint was cosigned since the client asked: it asks again
RETRIES = 3


class WitnessRefused(RunError):
    """A witness did not cosign: it was unreachable, or the checkpoint does not extend the one
    it cosigned last (the message says which and what the witness said)."""


class Inconsistent(RunError):
    """A checkpoint that does not extend the last one cosigned (answered 409)."""


class Witness:
    """The witness's key, the operator key it trusts for its origin, and its state file."""

    def __init__(self, key: Signer, log: Verifier, state: str | Path) -> None:
        self.key, self.log, self.path = key, log, Path(state)
        self._lock = threading.Lock()

    def _state(self) -> dict[str, Any]:
        if not self.path.exists():
            return {}
        loaded: dict[str, Any] = json.loads(self.path.read_text(encoding="utf-8"))
        return loaded

    def _save(self, state: dict[str, Any]) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        with open(temporary, "w", encoding="utf-8") as fh:
            json.dump(state, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, self.path)

    def newest(self, origin: str) -> dict[str, Any] | None:
        with self._lock:
            found: dict[str, Any] | None = self._state().get(origin)
            return found

    def add(self, request: dict[str, Any]) -> str:
        """The cosignature line for the request's checkpoint; ``Inconsistent`` if it does not
        extend the last one cosigned, ``NoteInvalid`` if the operator did not sign it."""
        note = str(request.get("checkpoint", ""))
        text, _ = open_note(note, [self.log])
        point = checkpoint.parse(text)
        if point.origin != self.log.name:
            raise NoteInvalid(f"origin {point.origin!r} is not the one this witness serves")
        with self._lock:
            state = self._state()
            seen = state.get(point.origin)
            if seen is None:  # first contact: trusted on first use, checked against its root
                heads = tuple((int(c), str(h)) for c, h in request.get("heads", ()))
            else:
                old = tuple((int(c), str(h)) for c, h in seen["heads"])
                if point.size < seen["size"]:
                    raise Inconsistent(f"size {point.size} is smaller than {seen['size']}, "
                                       "which this witness cosigned: the log was rolled back")
                if request.get("old") != [c for c, _ in old]:
                    raise Inconsistent(f"{STALE}: the proof starts at {request.get('old')}, "
                                       f"and this witness is at {[c for c, _ in old]}")
                heads = checkpoint.extend(old, request.get("proof", {}))
            if checkpoint.checkpoint_of(point.origin, heads) != point:
                raise Inconsistent(f"the checkpoint at size {point.size} does not extend the "
                                   f"one this witness cosigned"
                                   f"{'' if seen is None else ' at size ' + str(seen['size'])}"
                                   ": the log was forked or rewritten")
            line = self.key.cosign(text, int(time.time()))
            state[point.origin] = {"size": point.size, "heads": [list(h) for h in heads],
                                   "note": note + line}
            self._save(state)
        return line


def serve(witness: Witness, host: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server for ``witness`` (not yet serving: call ``serve_forever``)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _answer(self, status: int, body: str, kind: str = "text/plain") -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", f"{kind}; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlparse(self.path)
            origin = parse_qs(url.query).get("origin", [""])[0]
            found = witness.newest(origin) if url.path == "/checkpoint" else None
            if found is None:
                self._answer(404, f"no checkpoint of {origin!r} cosigned here\n")
            else:
                self._answer(200, json.dumps(found), "application/json")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if self.path != "/add-checkpoint" or not 0 < length <= MAX_BODY:
                self._answer(404 if self.path != "/add-checkpoint" else 400, "no\n")
                return
            try:
                request = json.loads(self.rfile.read(length))
                self._answer(200, witness.add(request))
            except Inconsistent as exc:
                self._answer(409, f"{exc}\n")
            except (NoteInvalid, ValueError, TypeError, AttributeError) as exc:
                self._answer(403 if isinstance(exc, NoteInvalid) else 400, f"{exc}\n")

    return ThreadingHTTPServer((host, port), Handler)


def checkpoint_store(store: Store, signer: Signer, witnesses: Sequence[str] = ()
                     ) -> tuple[str, list[str]]:
    """Sign a checkpoint of ``store``'s anchors as they stand, have each witness cosign it, and
    keep it in the store: the note kept, and why each witness that did not cosign refused."""
    anchors, lanes = store.anchors(), store.anchor_lanes()
    note, heads = checkpoint.sign(signer, anchors, lanes)
    refused = []
    for url in witnesses:
        try:
            note += cosign(url, note, heads, anchors, lanes, signer.name)
        except WitnessRefused as exc:
            refused.append(str(exc))
    store.put_checkpoint(sum(count for count, _ in heads), note)
    return note, refused


# -- the client side: asked by `tether audit checkpoint --witness URL` and by verify ------------

def newest(url: str, origin: str, timeout: float = 10.0) -> dict[str, Any] | None:
    """The witness's newest cosigned checkpoint of ``origin`` (None: it has none)."""
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/checkpoint?origin={quote(origin)}",
                                    timeout=timeout) as answer:
            found: dict[str, Any] = json.loads(answer.read())
            return found
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise WitnessRefused(f"the witness at {url} answered {exc.code}") from None
    except (OSError, ValueError) as exc:
        raise WitnessRefused(f"cannot reach the witness at {url} ({exc}); is `tether witness` "
                             "running there?") from None


def cosign(url: str, note: str, heads: checkpoint.Heads, anchors: Sequence[Anchor],
           lanes: int, origin: str, timeout: float = 30.0) -> str:
    """Ask the witness at ``url`` to cosign ``note``: the cosignature line it answered."""
    for attempt in range(RETRIES):
        seen = newest(url, origin, timeout)
        body: dict[str, Any] = {"checkpoint": note, "heads": [list(h) for h in heads]}
        if seen is not None:  # the proof: what each lane appended since the witness's newest
            body["old"] = since = [int(c) for c, _ in seen["heads"]]
            body["proof"] = checkpoint.proof(anchors, lanes, since)
        ask = urllib.request.Request(f"{url.rstrip('/')}/add-checkpoint", method="POST",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(ask, timeout=timeout) as answer:
                return str(answer.read().decode())
        except urllib.error.HTTPError as exc:
            said = exc.read().decode(errors="replace").strip()
            if exc.code == 409 and said.startswith(STALE) and attempt + 1 < RETRIES:
                continue  # another checkpointer's was cosigned meanwhile: prove from there
            raise WitnessRefused(f"the witness at {url} refused to cosign ({exc.code}): "
                                 f"{said}") from None
        except OSError as exc:
            raise WitnessRefused(f"cannot reach the witness at {url} ({exc}); is `tether "
                                 "witness` running there?") from None
    raise WitnessRefused(f"the witness at {url} kept cosigning other checkpoints")
