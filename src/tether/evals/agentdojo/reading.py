"""A task's ground truth as the obedient model's plan, with the values it must read at run time.

Why: AgentDyn's platforms answer the agent's own calls through the user's mailbox — a one-time
password after a checkout, an invoice attached after ``get_invoice``, an invitation link — so
a ground truth written beforehand cannot hold those values. AgentDyn marks them in the call's
``placeholder_args`` (``"$6-digits"``, ``"$file_id_2"``, ``"/downloads/$file_name"``) and
passes a dummy (``"ONE-TIME-PASSWD"``). Replayed as written, most of its tasks fail for want of
a value any model would simply have read; so each marked argument becomes a ``Read``
(``tether.evals.obedient``), filled from the tool results the model has read.

Decision: the kinds are general and few (``KINDS``: what the value looks like where the
platform writes it), never a task's answer, and a kind the table does not know keeps the
ground truth's literal (AgentDojo's own ``$content``-style markers among them, so AgentDojo's
plans are unchanged). What the resolver trusts: that the marker names the argument and the kind
correctly, and that the newest matching value the model read and has not used yet is the one
meant — it reads only the conversation, so a value an attacker planted in a result the model
read can be picked up just as a real model might pick it up, and a call the policy refused,
leaving no result, leaves its value unread. One rule stands without a marker: an argument named
``otp`` is a one-time password (AgentDyn's dailylife hard-codes one that cannot match).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from tether.evals.obedient import PlannedCall, Read

# kind -> (pattern whose first group is the value, take the last match rather than the first)
KINDS: dict[str, tuple[str, bool]] = {
    # a one-time password, as the platforms' mails give it ("... OTP is: 624385")
    "6-digits": (r"OTP\D{0,80}?\b(\d{6})\b", False),
    # an attachment id: an item of an e-mail's ``attachments`` list of ids
    "file_id": (r'"(\d+)"(?=(?:\s*,\s*"\d+")*\s*\])', False),
    # the name a download gave a file ("Invoice_ORDER-1.txt has been added to /downloads.")
    "file_name": (r"([\w.\-]+\.\w+) has been added to ", False),
    # an order id; an order history lists the newest last
    "order_id": (r"\b(ORDER-\d+)\b", True),
    # a link the platform mailed to accept an invitation
    "invitation_link": (r"(https?://[^\s\"'\\]*invit[^\s\"'\\]*)", False),
}
MARK = re.compile(r"\$([\w-]+?)(?:_\d+)?(?=$|[^\w-])")


def read_marked(value: Any, marker: Any) -> Any:
    """``value`` with each part its ``marker`` marks as a known kind a ``Read`` (the value
    itself its fallback)."""
    if isinstance(marker, str):
        found = MARK.search(marker)
        if found is None or found.group(1) not in KINDS:
            return value
        pattern, last = KINDS[found.group(1)]
        template = (marker[:found.start()].replace("{", "{{").replace("}", "}}") + "{}"
                    + marker[found.end():].replace("{", "{{").replace("}", "}}"))
        return Read(pattern, template, value, last)
    if isinstance(marker, Mapping) and isinstance(value, Mapping):
        return {key: read_marked(item, marker.get(key)) for key, item in value.items()}
    if isinstance(marker, Mapping) and isinstance(value, list):  # one marker for every item
        return [read_marked(item, marker) for item in value]
    if isinstance(marker, list) and isinstance(value, list) and len(marker) == len(value):
        return [read_marked(item, mark) for item, mark in zip(value, marker, strict=True)]
    return value


def planned(calls: Iterable[Any]) -> list[PlannedCall]:
    """AgentDojo ``FunctionCall``s as the obedient model's plan, each marked argument a
    ``Read``."""
    plan = []
    for call in calls:
        markers = dict(call.placeholder_args or {})
        arguments = {}
        for name, value in dict(call.args).items():
            marker = markers.get(name)
            if name == "otp" and not isinstance(read_marked(value, marker), Read):
                marker = "$6-digits"
            arguments[name] = read_marked(value, marker)
        plan.append(PlannedCall(call.function, arguments))
    return plan


def reads(arguments: Mapping[str, Any]) -> frozenset[str]:
    """The arguments of a planned call that hold a ``Read`` (at any depth)."""
    def holds(value: Any) -> bool:
        if isinstance(value, Read):
            return True
        if isinstance(value, Mapping):
            return any(holds(v) for v in value.values())
        if isinstance(value, list | tuple):
            return any(holds(v) for v in value)
        return False

    return frozenset(name for name, value in arguments.items() if holds(value))
