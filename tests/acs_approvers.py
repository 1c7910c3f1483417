"""Agent and service approvers for ``tether acs serve --approver`` in the ACS tests.

Why a module: the Guardian under test is a process, so its approver is named by reference
(``tests/acs_approvers.py:NAME``), as an operator names theirs. Each answers as an ACS approver
(§9) would: an ACS-shaped decision, which tether reads as a verdict only when it is one.
"""

from __future__ import annotations

from typing import Any


def answers_ask(_request: Any) -> dict[str, str]:
    """An approver that answers ASK: ACS-R-012 says it must not (single hop only)."""
    return {"decision": "ASK"}


def approves_c1(request: Any) -> bool:
    """Approves the call on record c-1, denies every other."""
    return dict(request.arguments).get("id") == "c-1"
