"""Index files: a corpus (and its vectors) in one file, refused if anything in it changed.

Why: an index is built once and read by every process that serves the corpus, so it lives in a
file (beside the journal's SQLite database, say, or anywhere the deployment keeps data). A file
can be edited, truncated, or copied from another tenant's directory; a retriever that used such
a file would serve text nobody indexed, or another tenant's documents, and nothing would say so.

Decisions:

- One file: a first line ``tether-index/1 <sha256>``, a JSON header line (kind, tenant, model,
  sizes), the documents as JSON, then the vectors as raw little-endian float32. The sha256 is of
  every byte after the first line, so changing any byte (a document, a vector, the tenant, the
  model) is refused with IndexRefused before anything is used. Nothing is unpickled.
- The reader states what it expects: the kind (``bm25``/``dense``), the tenant, and for vectors
  the model; a file that holds anything else is refused, so tenant B's index can never be
  loaded as tenant A's.
- The hash detects edits and corruption, not forgery by someone who can rewrite the whole file
  (they could recompute it); protect the directory as you protect the journal's store. So a
  file whose hash matches is still read as untrusted input: every field of the header, every
  document row, the tenant of every document and the size and finiteness of every vector are
  checked, and anything else is IndexRefused — never an error from the JSON or numpy reader.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.knowledge.retrieval import Document, RetrievalError, check_corpus

if TYPE_CHECKING:  # numpy is imported only when an index holds vectors
    import numpy as np
    import numpy.typing as npt

FORMAT = "tether-index/1"


class IndexRefused(RetrievalError):
    """An index file cannot be used as asked; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class StoredIndex:
    kind: str
    tenant_id: str | None
    model: str | None
    documents: tuple[Document, ...]
    embeddings: npt.NDArray[np.float32] | None


def write_index(path: str | Path, *, kind: str, documents: Sequence[Document],
                tenant_id: str | None, model: str | None = None,
                embeddings: npt.NDArray[np.float32] | None = None) -> None:
    """Write an index file atomically (a temporary file, then a rename)."""
    docs = json.dumps([[d.doc_id, d.text, d.source, d.tenant_id] for d in documents],
                      ensure_ascii=False).encode()
    vectors = b"" if embeddings is None else embeddings.astype("<f4").tobytes()
    header: dict[str, Any] = {
        "format": FORMAT, "kind": kind, "tenant_id": tenant_id, "model": model,
        "documents": len(documents), "documents_bytes": len(docs),
        "dim": None if embeddings is None else int(embeddings.shape[1])}
    content = json.dumps(header, sort_keys=True).encode() + b"\n" + docs + vectors
    first = f"{FORMAT} {hashlib.sha256(content).hexdigest()}\n".encode()
    target = Path(path)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(first + content)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise


def read_index(path: str | Path, *, kind: str, tenant_id: str | None,
               model: str | None = None) -> StoredIndex:
    """The index at ``path`` if it is intact and is the ``kind`` of index of ``tenant_id``
    (made by ``model``, for vectors); IndexRefused otherwise."""
    where = Path(path)
    try:
        raw = where.read_bytes()
    except OSError as exc:
        raise IndexRefused(f"cannot read index {where}: {exc.strerror}; build it and save it "
                           "there first") from None
    first, _, content = raw.partition(b"\n")
    name, _, digest = first.decode("ascii", "replace").partition(" ")
    if name != FORMAT:
        raise IndexRefused(f"{where} is not a tether index file ({FORMAT}); rebuild it")
    if digest != hashlib.sha256(content).hexdigest():
        raise IndexRefused(f"index {where} was altered or corrupted (its sha256 does not "
                           "match its content); it was not used: rebuild it from the corpus")
    header, body = _header(where, content)
    for field, expected in (("kind", kind), ("tenant_id", tenant_id), ("model", model)):
        if header.get(field) != expected:
            raise IndexRefused(f"index {where} has {field} {header.get(field)!r}, not "
                               f"{expected!r}; load the index built for it, or rebuild")
    split = header["documents_bytes"]
    documents = _documents(where, body[:split], header["documents"], tenant_id)
    embeddings = _vectors(where, body[split:], header["documents"], header["dim"])
    return StoredIndex(kind, tenant_id, model, documents, embeddings)


# -- a file whose digest matches is still checked for shape: anyone who can write the directory
# can write a matching digest, and a reader must refuse what it cannot use, never crash on it

_COUNTS = ("documents", "documents_bytes")


def _malformed(where: Path, what: str) -> IndexRefused:
    return IndexRefused(f"index {where} is malformed ({what}), though its sha256 matches: "
                        "write_index did not write it as it is; it was not used: rebuild it "
                        "from the corpus")


def _json(where: Path, text: bytes, part: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested beyond reason
        raise _malformed(where, f"its {part} are not JSON: {type(exc).__name__}") from None


def _header(where: Path, content: bytes) -> tuple[dict[str, Any], bytes]:
    """The header (every field of ``write_index``'s, of its type) and the bytes after it."""
    line, _, body = content.partition(b"\n")
    header = _json(where, line, "header fields")
    if not isinstance(header, dict):
        raise _malformed(where, "its header is not a JSON object")
    missing = {"format", "kind", "tenant_id", "model", "dim", *_COUNTS} - set(header)
    if missing:
        raise _malformed(where, f"its header lacks {', '.join(sorted(missing))}")
    if header["format"] != FORMAT:
        raise _malformed(where, f"its header says format {header['format']!r}, not {FORMAT}")
    for field in _COUNTS:
        if not _whole(header[field], 0):
            raise _malformed(where, f"{field} is {header[field]!r}, not a count")
    if header["documents_bytes"] > len(body):
        raise _malformed(where, "it is shorter than its header says")
    if header["dim"] is not None and not _whole(header["dim"], 1):
        raise _malformed(where, f"dim is {header['dim']!r}, not a positive whole number")
    return header, body


def _whole(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _documents(where: Path, text: bytes, count: int,
               tenant_id: str | None) -> tuple[Document, ...]:
    """The documents: ``count`` rows ``[doc_id, text, source, tenant]``, a corpus of
    ``tenant_id`` (``check_corpus``: no other tenant's document, no id twice)."""
    rows = _json(where, text, "documents")
    if not isinstance(rows, list) or len(rows) != count:
        raise _malformed(where, f"its documents are not a list of the {count} its header "
                                "counts")
    for row in rows:
        if not (isinstance(row, list) and len(row) == 4 and all(isinstance(f, str)
                                                                 for f in row[:3])
                and isinstance(row[3], str | None)):
            raise _malformed(where, "a document is not [doc_id, text, source, tenant]")
    try:
        return tuple(check_corpus([Document(*row) for row in rows], tenant_id))
    except RetrievalError as exc:
        raise _malformed(where, str(exc)) from None


def _vectors(where: Path, raw: bytes, count: int,
             dim: int | None) -> npt.NDArray[np.float32] | None:
    """The vectors: ``count`` rows of ``dim`` finite float32s, or nothing when ``dim`` is None."""
    if dim is None:
        if raw:
            raise _malformed(where, f"{len(raw)} bytes follow its documents, and it holds no "
                                    "vectors")
        return None
    if len(raw) != count * dim * 4:
        raise _malformed(where, f"it holds {len(raw)} bytes of vectors, not the {count} x {dim} "
                                "float32s its header says")
    import numpy as np

    vectors = np.frombuffer(raw, dtype="<f4").reshape(count, dim).astype(np.float32)
    if not np.isfinite(vectors).all():
        raise _malformed(where, "a vector holds a value that is not a finite number")
    return vectors
