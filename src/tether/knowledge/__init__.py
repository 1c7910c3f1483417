"""Knowledge under the chokepoint: conversation memory (threads, recall, erasure).

Everything here is read through the journal and offered to a model only as governed tools
whose results are untrusted input.
"""

from tether.knowledge.memory import ConversationStore, Recalled, ThreadSummary

__all__ = ["ConversationStore", "Recalled", "ThreadSummary"]
