"""What a session loaded from its journal keeps hiding: the secrets and masked values it hid.

Why its own module: what a journal keeps out of its events (``Journal.scrub_with``,
``Journal.redact``) lives in the process that ran the session. A session loaded elsewhere —
``tether resume``, a fleet worker, another recipe object — must hide them again before it
appends anything, or the first tool that echoes a secret, or a model that repeats a masked
card number, writes it into the journal, the model's prompt and every span.

Decision: nothing secret is journaled to make this possible. For a secret, the journal says
only which tool a token was issued to (``credential.issued``); the loaded session asks its
recipe's broker for that tool's redactor (``CredentialBroker.redactor``: the secret as it is
now). For a masked value, the journal holds its keyed fingerprint
(``tether.journal.fingerprints``). When either cannot be rebuilt — the recipe has no broker or
no longer registers the tool, the fingerprints were made under another key — the session is
not loaded: resuming it would break the promise silently. What is not rebuilt: a secret of a
live MCP connection (``SessionAsks.hide``) belongs to that connection; the loaded session opens
its own and hides its secrets from its first call on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tether.errors import RunError
from tether.journal.chain import Journal
from tether.journal.fingerprints import KeyMismatch
from tether.types import Event
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.credentials import CredentialBroker


class HiddenNotRecalled(RunError):
    """A stored session's secrets or masked values could not be hidden again here."""


def recall_hidden(journal: Journal, events: Sequence[Event],
                  credentials: CredentialBroker | None) -> None:
    """Make ``journal`` (of a session loaded from ``events``) hide what the session hid."""
    session = journal.session_id
    tools = sorted({str(e.data["tool"]) for e in events if e.type == EventType.CREDENTIAL_ISSUED})
    if tools:  # (a session that was issued no token imports nothing of the credentials)
        from tether.credentials import CredentialError
    for tool in tools:
        try:
            redactor = None if credentials is None else credentials.redactor(tool)
        except CredentialError as exc:  # its message is built without the secret
            raise HiddenNotRecalled(f"session {session} was issued a credential for tool "
                                    f"{tool!r}, which could not be read again to hide it: "
                                    f"{exc}") from None
        if redactor is None:
            raise HiddenNotRecalled(
                f"session {session} was issued a credential for tool {tool!r}, and this "
                "recipe's broker has none registered for it, so the secret could not be kept "
                f"out of what the session writes next; resume it with a recipe whose "
                f"CredentialBroker registers {tool!r}")
        journal.scrub_with(redactor.redact, redactor.scrubs)
    try:
        journal.recall(events)
    except KeyMismatch as exc:
        raise HiddenNotRecalled(f"session {session}: {exc}") from None
