"""What a running tool call may ask of its session: a model call, or a question for a person.

Why: a tool can be a party that asks things back while it runs — an MCP server's sampling request
(``sampling/createMessage``: "run this prompt on your model") or its elicitation
(``elicitation/create``: "ask the user this"). Both happen *inside* a call the chokepoint already
admitted, so they must be governed as that call's session governs everything else: a model call
reserved and charged through the session's own accountant and journaled; a question journaled,
put in the approval store bound to the session and the call, expiring, and answered by an
in-process answerer or a person. ``ToolCalls`` gives each call one ``CallAsks`` (in
``ToolContext.asks``); a tool that never asks costs one small object.

Decision: this module is the one the rest of tether imports asks from (``CallAsks`` and the
names a tool or its server needs); each ask counts against the call's bounds before anything
else (``ask_ledger.py``: at most ``MAX_ASKS`` of a kind, the call's time, one at a time), and is
then made by its own module — ``sampling.py`` (the session's model, or the client's) and
``elicitation.py`` (a person, an answerer, or the client's user).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tether.runtime.chokepoint import ask_ledger, elicitation, sampling
from tether.runtime.chokepoint.ask_ledger import MAX_ASKS, AskLedger
from tether.tools.asking import Question, Refused, Sampled, secret_looking
from tether.types import Message

__all__ = ["MAX_ASKS", "CallAsks", "Question", "Refused", "Sampled", "SessionAsks",
           "secret_looking"]


class CallAsks(AskLedger):
    """The asks of one tool call (see the module docstring), made on the session's loop."""

    __slots__ = ()

    async def sample(self, server: str, messages: Sequence[Message], max_tokens: int,
                     notes: Sequence[str] = ()) -> Sampled:
        """A model call of the session for ``server``'s ``messages`` (untrusted text; user and
        assistant turns only), at most ``max_tokens`` of output; Refused with the reason
        (journaled) when it is not made or gives no usable answer. ``notes``: what of the
        request was not followed (its system prompt, its context), journaled."""
        self.admit("sampling", server)
        async with self.serial():
            return await sampling.sample(self, server, messages, max_tokens, notes)

    async def relay_sample(self, server: str, messages: Sequence[Message], max_tokens: int,
                           system_prompt: str | None, key: str | None = None) -> Sampled:
        """Ask the call's caller (the proxy's client) to sample ``messages`` for ``server``:
        journaled (``sampling.relayed``, then ``sampling.answered`` or ``sampling.refused``),
        bounded by the call's time; Refused when the caller cannot or does not answer, and past
        ``MAX_ASKS``. ``key``: the server's name for the ask (a 2026-07-28 input request's
        key), the caller's name for it too."""
        self.admit("sampling", server)
        async with self.serial():
            return await sampling.relay_sample(self, server, messages, max_tokens,
                                               system_prompt, key)

    async def elicit(self, server: str, message: str, schema: Mapping[str, Any],
                     answerer: Callable[[Question], Any] | None,
                     check: Callable[[Any], dict[str, Any]]) -> dict[str, Any] | None:
        """Ask a person (or ``answerer``) ``server``'s question; the content accepted (checked
        by ``check``, which raises ValueError for content it refuses), or None: declined
        (journaled, with why). Refused past ``MAX_ASKS``."""
        self.admit("elicitation", server)
        async with self.serial():
            return await elicitation.elicit(self, server, message, schema, answerer, check)

    async def relay_elicit(self, server: str, message: str, schema: Mapping[str, Any],
                           check: Callable[[Any], dict[str, Any]], key: str | None = None
                           ) -> dict[str, Any] | None:
        """Ask the call's caller (the proxy's client, its user) ``server``'s form: journaled
        (``elicitation.relayed``, then ``elicitation.answered``); the content accepted, checked
        by ``check`` (the client's answer is untrusted), or None: declined. Refused past
        ``MAX_ASKS``. ``key``: as ``relay_sample``'s."""
        self.admit("elicitation", server)
        async with self.serial():
            return await elicitation.relay_elicit(self, server, message, schema, check, key)


class SessionAsks(ask_ledger.SharedAsks):
    """What every call of one session asks through, as a tool reaches it
    (``tether.tools.asking.SessionAsking``): the ledger's shared state, and each call's
    ``CallAsks`` made from it here, above the ledger they stand on."""

    __slots__ = ()

    def for_call(self, call_id: str, tool: str, timeout: float) -> CallAsks:
        """The asks of one call (``timeout``: the seconds the call may take)."""
        return CallAsks(self, call_id, tool, timeout)
