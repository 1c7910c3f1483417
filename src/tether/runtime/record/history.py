"""A thread's earlier turns in a session's conversation, journaled once.

Why: a session that continues a thread is shown its earlier turns, and its start names them by
reference (``tether.runtime.lifecycle.thread``). Its first model request sends them, and
journaling them there would store them again with every session of the thread — the growth with
the square of the thread that the reference removed. So that request journals the messages it
sends *but* the history, and how many messages of it it left out (``history``); the fold puts
them back from the turns the start named, in the live session and in a replay alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tether.types import Message


def history_messages(turns: Iterable[Mapping[str, Any]]) -> list[Message]:
    """A thread's earlier turns (``Turn.to_dict``) as the conversation shows them."""
    history = []
    for turn in turns:
        history.append(Message.user(turn["user"]))
        if turn["assistant"]:
            history.append(Message.assistant(turn["assistant"]))
    return history


def opening_turns(thread: Mapping[str, Any] | None, shown: Sequence[Mapping[str, Any]],
                  messages: Sequence[Message] | None = None
                  ) -> tuple[Sequence[Message], bool, tuple[Message, ...]]:
    """What a start's ``thread`` opens the conversation with: the earlier turns' messages
    (carried in the start, ``history``, by a tether before turns were kept; else ``shown``,
    the turns it names by reference, made into ``messages`` already by a live start that read
    them), whether one read untrusted content (the thread is then tainted), and the messages
    the first request leaves out (those named by reference)."""
    if not thread:
        return [], False, ()
    inline = "history" in thread
    turns = (thread["history"] or ()) if inline else shown
    if messages is not None and not inline:  # (the start's ``tainted`` says it of these)
        return messages, bool(thread.get("tainted")), tuple(messages)
    history = history_messages(turns)
    tainted = bool(thread.get("tainted")) or any(t.get("tainted") for t in turns)
    return history, tainted, () if inline else tuple(history)


def left_out(new: Sequence[Message], history: Sequence[Message]
             ) -> tuple[Sequence[Message], int]:
    """``new`` (a request's messages: the system prompt, the history, the task, ...) without
    the history, and how many messages were left out (0: it does not carry it)."""
    count = len(history)
    if count and len(new) > count and new[1] is history[0] and new[count] is history[-1]:
        return [new[0], *new[count + 1:]], count
    return new, 0


def put_back(new: Sequence[Message], count: int | None,
             history: Sequence[Message]) -> list[Message]:
    """A journaled request's messages with the history it left out (``count`` messages when it
    was sent) put back after its system prompt: fewer when turns were removed since (pruned,
    erased), which are not shown again; the turns that remain were checked against the link
    the start journaled (``tether.runtime.lifecycle.thread.recorded_history``)."""
    sent = list(new)
    if count and sent:
        sent[1:1] = history
    return sent
