"""Knowledge under the chokepoint: conversation memory (threads, recall, erasure) and retrieval
over a corpus (BM25, dense embeddings, their hybrid).

Everything here is read through the journal or a hashed index and offered to a model only as
governed tools whose results are untrusted input.
"""

from tether.knowledge.bm25 import BM25Retriever
from tether.knowledge.index import IndexRefused
from tether.knowledge.memory import ConversationStore, Recalled, ThreadSummary
from tether.knowledge.passages import split_markdown
from tether.knowledge.retrieval import (
    Document,
    HybridRetriever,
    Passage,
    RetrievalError,
    Retriever,
    reciprocal_rank_fusion,
    retrieval_tool,
)

# DenseRetriever is in tether.knowledge.dense: it imports numpy, which nothing else here needs
__all__ = ["BM25Retriever", "ConversationStore", "Document", "HybridRetriever", "IndexRefused",
           "Passage", "Recalled", "RetrievalError", "Retriever", "ThreadSummary",
           "reciprocal_rank_fusion", "retrieval_tool", "split_markdown"]
