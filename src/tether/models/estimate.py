"""Token estimates for provider adapters: the base estimate, plus native framing, erring high.

Decision: a reservation is only as safe as the estimate behind it, and real tokenisers are less
kind than four characters per token for anything but English prose. The provider estimate starts
from ``models/base.py``'s estimator (so ScriptedModel and the runtime agree on plain text) and
adds what that misses: the per-call and per-result framing of each provider's wire format
(ids, types, wrappers) and non-ASCII text, counted as one token per character (CJK text and
emoji run at about one token per character, not four characters per token).
"""

from __future__ import annotations

import json
import math

from tether.models.base import estimate_message_tokens, estimate_text_tokens
from tether.types import Message


def non_ascii_surcharge(text: str) -> int:
    """Tokens to add so non-ASCII characters count one token each instead of a quarter."""
    if text.isascii():
        return 0
    wide = sum(1 for ch in text if ord(ch) > 127)
    return math.ceil(wide * 3 / 4)


def provider_message_tokens(message: Message, *, per_call: int, per_result: int,
                            per_request: int = 0) -> int:
    """Upper-bound estimate of ``message`` as a provider will count it. ``per_request`` is
    charged to the system message: it is sent, once, with every request, so the runtime's sum
    over the conversation counts it once per call (a provider's hidden tool-use prompt)."""
    n = estimate_message_tokens(message) + non_ascii_surcharge(message.content)
    if message.role == "system":
        n += per_request
    for call in message.tool_calls:  # the base estimate counted the arguments' text once
        args = call.arguments
        encoded = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        n += per_call + estimate_text_tokens(call.id) + non_ascii_surcharge(encoded)
    if message.tool_call_id is not None:
        n += per_result + estimate_text_tokens(message.tool_call_id)
    return n
