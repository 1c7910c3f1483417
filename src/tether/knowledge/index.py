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
  (they could recompute it); protect the directory as you protect the journal's store.
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

from tether.knowledge.retrieval import Document, RetrievalError

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
    line, _, body = content.partition(b"\n")
    header = json.loads(line)  # intact: written by write_index
    for field, expected in (("kind", kind), ("tenant_id", tenant_id), ("model", model)):
        if header.get(field) != expected:
            raise IndexRefused(f"index {where} has {field} {header.get(field)!r}, not "
                               f"{expected!r}; load the index built for it, or rebuild")
    split = header["documents_bytes"]
    documents = tuple(Document(doc_id, text, source, tenant)
                      for doc_id, text, source, tenant in json.loads(body[:split]))
    embeddings = None
    if header["dim"] is not None:
        import numpy as np

        embeddings = np.frombuffer(body[split:], dtype="<f4").reshape(
            header["documents"], header["dim"]).astype(np.float32)
    return StoredIndex(kind, tenant_id, model, documents, embeddings)
