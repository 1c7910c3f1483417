"""The runtime: Agent (recipe), Session (one run), Environment (the chokepoint) and its parts.

The runtime is in named parts, each one concern, each importing only the parts below it (an
import-linter contract in pyproject.toml keeps the order; docs/architecture.md draws it):
``lifecycle`` (recipe, open, pause, resume, end, sub-agents), ``strategy`` (the doors a strategy
has), ``context`` (what each turn is shown), ``chokepoint`` (one governed model call, one
governed tool call), ``record`` (a session as a fold over its journal), ``approvals``,
``provenance`` (where values came from) and ``accounting`` (budgets, stops).

Every module in the parts is internal. What a user reaches for is named here: the in-process
approvers, a person's decision on an approval (``decide``, as an ``Identity``, under
``ApprovalRules``), the fold of a journal, what a strategy reads back from its history, the
budget stop and the refusal to load a session that cannot hide its secrets again; and halting
sessions (``halt``, ``unhalt``, ``standing_halts``, ``HaltScope``, ``Halted``).
``tether.runtime.rerun`` (re-running a stored session) and ``tether.runtime.stream`` (the events
of a streaming run) are the runtime's two public modules. The recipe and the session are
exported by ``tether`` itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import exports

if TYPE_CHECKING:
    from tether.runtime.accounting.stop import Stop
    from tether.runtime.approvals.approver import Approver, approve_all, approve_when, deny_all
    from tether.runtime.approvals.deciding import ApprovalRefused, decide
    from tether.runtime.approvals.identity import Identity
    from tether.runtime.approvals.requests import ApprovalRequest
    from tether.runtime.approvals.rules import ApprovalRules
    from tether.runtime.chokepoint.halts import halt, standing_halts, unhalt
    from tether.runtime.provenance.recalled import HiddenNotRecalled
    from tether.runtime.record.state import SessionState, fold
    from tether.runtime.strategy.planned import ModelTurn, Note, PlannedCalls
    from tether.store.halts import Halted, HaltScope

_WHERE = {
    "Stop": "tether.runtime.accounting.stop",
    "Approver": "tether.runtime.approvals.approver",
    "approve_all": "tether.runtime.approvals.approver",
    "approve_when": "tether.runtime.approvals.approver",
    "deny_all": "tether.runtime.approvals.approver",
    "ApprovalRequest": "tether.runtime.approvals.requests",
    "ApprovalRefused": "tether.runtime.approvals.deciding",
    "ApprovalRules": "tether.runtime.approvals.rules",
    "Identity": "tether.runtime.approvals.identity",
    "HaltScope": "tether.store.halts",
    "Halted": "tether.store.halts",
    "halt": "tether.runtime.chokepoint.halts",
    "unhalt": "tether.runtime.chokepoint.halts",
    "standing_halts": "tether.runtime.chokepoint.halts",
    "decide": "tether.runtime.approvals.deciding",
    "HiddenNotRecalled": "tether.runtime.provenance.recalled",
    "SessionState": "tether.runtime.record.state",
    "fold": "tether.runtime.record.state",
    "ModelTurn": "tether.runtime.strategy.planned",
    "Note": "tether.runtime.strategy.planned",
    "PlannedCalls": "tether.runtime.strategy.planned",
}

__all__ = ["ApprovalRefused", "ApprovalRequest", "ApprovalRules", "Approver", "HaltScope",
           "Halted", "HiddenNotRecalled", "Identity", "ModelTurn", "Note", "PlannedCalls",
           "SessionState", "Stop", "approve_all", "approve_when", "decide", "deny_all", "fold",
           "halt", "standing_halts", "unhalt"]

__getattr__, __dir__ = exports(__name__, _WHERE, globals())
