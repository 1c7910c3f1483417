"""A thread's earlier turns in a session's conversation, journaled once.

Why: a session that continues a thread is shown its earlier turns, and its start names them by
reference (``tether.runtime.lifecycle.thread``). Its first model request sends them, and
journaling them there would store them again with every session of the thread — the growth with
the square of the thread that the reference removed. So that request journals the messages it
sends *but* the history, and how many messages of it it left out (``history``); the fold puts
them back from the turns the start named, in the live session and in a replay alike.

The same request is reserved for from an estimate of every message it sends, the history's
included; a process serving the thread remembers the history's estimate with the history
(``tether.runtime.lifecycle.thread_memo``), so a live start hands it over (``Shown``) and the
first request estimates only what is not the history — the one cost of a start that still grew
with the thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
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


Estimator = Callable[[Message], int]  # a model's ``estimate_message_tokens``


@dataclass(frozen=True, slots=True)
class Shown:
    """A thread's history as a live start made it: its messages and, when made, their estimate
    (``estimate``: the estimator that made it, and the sum; used only by that estimator)."""

    messages: Sequence[Message]
    estimate: tuple[Estimator, int] | None = None

    def __repr__(self) -> str:  # (a user's words: never in a repr)
        return f"Shown(messages={len(self.messages)})"


def opening_turns(thread: Mapping[str, Any] | None, shown: Sequence[Mapping[str, Any]],
                  made: Shown | None = None
                  ) -> tuple[Sequence[Message], bool, tuple[Message, ...]]:
    """What a start's ``thread`` opens the conversation with: the earlier turns' messages
    (carried in the start, ``history``, by a tether before turns were kept; else ``shown``,
    the turns it names by reference, made into messages already by a live start that read
    them: ``made``), whether one read untrusted content (the thread is then tainted), and the
    messages the first request leaves out (those named by reference)."""
    if not thread:
        return [], False, ()
    inline = "history" in thread
    turns = (thread["history"] or ()) if inline else shown
    if made is not None and not inline:  # (the start's ``tainted`` says it of these)
        return made.messages, bool(thread.get("tainted")), tuple(made.messages)
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


def estimate_new(new: Sequence[Message], history: Sequence[Message], made: Shown | None,
                 estimate: Estimator) -> int:
    """``new``'s tokens by ``estimate``: the history it carries (``history``, as ``left_out``
    finds it) counted at the estimate its start was handed, when that is the history's
    (``made``'s messages) and ``estimate`` made it; every other message one by one."""
    if made is not None and made.estimate is not None and made.estimate[0] == estimate:
        rest, count = left_out(new, history)
        shown = made.messages
        if count and count == len(shown) and history[0] is shown[0] and history[-1] is shown[-1]:
            return made.estimate[1] + sum(map(estimate, rest))
    return sum(map(estimate, new))
