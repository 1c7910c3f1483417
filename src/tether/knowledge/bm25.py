"""BM25 over a corpus with ``bm25s``: the lexical ``Retriever``, and the ranking memory uses.

Why: BM25 is the baseline a dense model must beat, it needs no model, and it is what finds an
exact identifier (an error code, a function name) that an embedding blurs. ``bm25s`` scores
with sparse matrices in numpy, so indexing a few thousand passages takes milliseconds.

Decision: the index is rebuilt from the documents whenever it is loaded (``tether.knowledge.
index`` stores the documents, hashed), not pickled: rebuilding is cheap and deterministic, and
nothing from a file is ever unpickled. Documents and queries are tokenized alike (English
stopwords removed); a passage that shares no word with the query scores 0 and is not returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tether.errors import MissingExtra, install_command
from tether.knowledge.index import read_index, write_index
from tether.knowledge.retrieval import Document, Passage, check_corpus, check_request


def _bm25s() -> Any:
    try:
        import bm25s
    except ImportError:
        raise MissingExtra(f"BM25 search needs bm25s: {install_command('knowledge')}") from None
    return bm25s


class BM25Index:
    """A BM25 index over texts: ``rank(query, k)`` gives (index, score) pairs, best first."""

    def __init__(self, texts: Sequence[str]) -> None:
        bm25s = _bm25s()
        self._size = len(texts)
        self._bm25 = bm25s.BM25()
        if texts:
            self._bm25.index(bm25s.tokenize(list(texts), stopwords="en", show_progress=False),
                             show_progress=False)

    def rank(self, query: str, k: int) -> list[tuple[int, float]]:
        """The (at most ``k``) texts that share a word with ``query``, by BM25 score."""
        if not self._size:
            return []
        tokens = _bm25s().tokenize([query], stopwords="en", show_progress=False,
                                   return_ids=False)
        if not tokens or not tokens[0]:
            return []
        found, scores = self._bm25.retrieve(tokens, k=min(k, self._size), show_progress=False)
        return [(int(i), float(s)) for i, s in zip(found[0], scores[0], strict=True) if s > 0]


def bm25_rank(texts: Sequence[str], query: str, k: int) -> list[tuple[int, float]]:
    """Indexes of the ``k`` best of ``texts`` for ``query`` (one-off: indexes, then ranks)."""
    return BM25Index(texts).rank(query, k)


class BM25Retriever:
    """The lexical retriever over one corpus (one tenant's, or shared when ``tenant_id`` is
    None): ranks passages by the words they share with the query.

    Args:
        documents: The corpus (``Document``; ``split_markdown`` makes them from pages).
        tenant_id: The tenant whose corpus it is; None: shared by every tenant.
    """

    name = "bm25"

    def __init__(self, documents: Sequence[Document], *, tenant_id: str | None = None) -> None:
        self.documents = tuple(check_corpus(documents, tenant_id))
        self._tenant_id = tenant_id
        self._index = BM25Index([d.text for d in self.documents])

    @property
    def tenant_id(self) -> str | None:
        return self._tenant_id

    def __repr__(self) -> str:
        return f"BM25Retriever({len(self.documents)} documents, tenant={self._tenant_id!r})"

    def retrieve(self, query: str, k: int = 5) -> list[Passage]:
        check_request(query, k)
        return [Passage(d.doc_id, d.text, d.source, score, self.name, self._tenant_id)
                for d, score in ((self.documents[i], s) for i, s in self._index.rank(query, k))]

    def save(self, path: str | Path) -> None:
        """Write the corpus to ``path``, hashed; ``load`` rebuilds the index from it."""
        write_index(path, kind="bm25", documents=self.documents, tenant_id=self._tenant_id)

    @classmethod
    def load(cls, path: str | Path, *, tenant_id: str | None) -> BM25Retriever:
        """The retriever saved at ``path``; IndexRefused if the file was altered or belongs to
        another tenant."""
        return cls(read_index(path, kind="bm25", tenant_id=tenant_id).documents,
                   tenant_id=tenant_id)
