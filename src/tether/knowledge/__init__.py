"""Knowledge under the chokepoint: conversation memory (threads, recall, erasure), retrieval over
a corpus (BM25, dense embeddings, their hybrid) and the strategies that route it (Adaptive-RAG,
CRAG).

Everything here is read through the journal or a hashed index and offered to a model only as
governed tools whose results are untrusted input; a strategy here forces a turn's tool choice,
never runs a call the model did not make.
"""

from tether.knowledge.adaptive_rag import AdaptiveRAG, ModelClassifier, RuleClassifier
from tether.knowledge.bm25 import BM25Retriever
from tether.knowledge.crag import CRAG, LexicalGrader, ModelGrader
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
__all__ = ["CRAG", "AdaptiveRAG", "BM25Retriever", "ConversationStore", "Document",
           "HybridRetriever", "IndexRefused", "LexicalGrader", "ModelClassifier", "ModelGrader",
           "Passage", "Recalled", "RetrievalError", "Retriever", "RuleClassifier",
           "ThreadSummary", "reciprocal_rank_fusion", "retrieval_tool", "split_markdown"]
