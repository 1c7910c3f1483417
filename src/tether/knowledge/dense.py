"""Dense retrieval: documents and queries as all-MiniLM-L6-v2 vectors, ranked by cosine.

Why: BM25 finds only the words a query shares with a passage; a user asks "how do I undo a
payment" of a corpus that says "refund". An embedding ranks by meaning, so it finds the
paraphrase; the hybrid (``tether.knowledge.retrieval.HybridRetriever``) keeps BM25's exact
matches too.

Decision: the corpus' vectors are computed once, when the retriever is built, and can be saved
with the documents in a hashed index file (``tether.knowledge.index``) that records which model
made them; a query costs one forward pass and one matrix-vector product. Vectors are unit
length, so the dot product is the cosine. Every document is ranked (there is no "no match"
in a vector space); ``min_score`` drops the weakest.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tether.knowledge.index import read_index, write_index
from tether.knowledge.minilm import MiniLM, Vectors, load_minilm
from tether.knowledge.retrieval import (
    Document,
    Passage,
    RetrievalError,
    check_corpus,
    check_request,
)


class DenseRetriever:
    """Cosine similarity over one corpus' embeddings (one tenant's, or shared when
    ``tenant_id`` is None)."""

    name = "dense"

    def __init__(self, documents: Sequence[Document], *, tenant_id: str | None = None,
                 model: MiniLM | None = None, min_score: float | None = None,
                 embeddings: Vectors | None = None) -> None:
        self.documents = tuple(check_corpus(documents, tenant_id))
        self.model = model or load_minilm()
        self._tenant_id = tenant_id
        self.min_score = min_score
        if embeddings is None:
            embeddings = self.model.embed([d.text for d in self.documents]) if self.documents \
                else np.zeros((0, self.model.dim), dtype=np.float32)
        if embeddings.shape != (len(self.documents), self.model.dim):
            raise RetrievalError(
                f"{embeddings.shape[0]} embeddings of width {embeddings.shape[-1]} for "
                f"{len(self.documents)} documents of width {self.model.dim}; rebuild the index")
        self.embeddings = embeddings

    @property
    def tenant_id(self) -> str | None:
        return self._tenant_id

    def __repr__(self) -> str:
        return f"DenseRetriever({len(self.documents)} documents, tenant={self._tenant_id!r})"

    def retrieve(self, query: str, k: int = 5) -> list[Passage]:
        check_request(query, k)
        if not self.documents:
            return []
        scores = self.embeddings @ self.model.embed([query])[0]
        best = np.argsort(-scores, kind="stable")[:k]
        return [Passage(d.doc_id, d.text, d.source, float(scores[i]), self.name,
                        self._tenant_id)
                for i, d in ((int(i), self.documents[int(i)]) for i in best)
                if self.min_score is None or scores[i] >= self.min_score]

    def save(self, path: str | Path) -> None:
        """Write the documents and their vectors to ``path``, hashed (see ``load``)."""
        write_index(path, kind="dense", documents=self.documents, tenant_id=self._tenant_id,
                    model=self.model.model_id, embeddings=self.embeddings)

    @classmethod
    def load(cls, path: str | Path, *, tenant_id: str | None,
             model: MiniLM | None = None, **options: Any) -> DenseRetriever:
        """The retriever saved at ``path``; IndexRefused if the file was altered, belongs to
        another tenant or was made by another model."""
        model = model or load_minilm()
        stored = read_index(path, kind="dense", tenant_id=tenant_id, model=model.model_id)
        return cls(stored.documents, tenant_id=tenant_id, model=model,
                   embeddings=stored.embeddings, **options)
