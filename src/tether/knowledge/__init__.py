"""Knowledge under the chokepoint: conversation memory (threads, recall, erasure) and the
retrieval strategies (Adaptive-RAG, CRAG).

Everything here reaches a model only through governed tools whose results are untrusted input;
a strategy here forces a turn's tool choice, never runs a call the model did not make.
"""

from tether.knowledge.adaptive_rag import AdaptiveRAG, ModelClassifier, RuleClassifier
from tether.knowledge.crag import CRAG, LexicalGrader, ModelGrader
from tether.knowledge.memory import ConversationStore, Recalled, ThreadSummary

__all__ = ["CRAG", "AdaptiveRAG", "ConversationStore", "LexicalGrader", "ModelClassifier",
           "ModelGrader", "Recalled", "RuleClassifier", "ThreadSummary"]
