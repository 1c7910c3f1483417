"""What the two doors of a governed run share: the run's state, as each door reads it.

Why: a governed run (``integrations.governed``) is one session with two doors, each a module of
its own mixed into ``GovernedRun``: the tool door (``integrations.governed_tools``) and the
model meter (``integrations.governed_model``). Both read and change the same state, one call at
a time under one lock; declaring that state once here keeps their view of the run the same, and
type-checked.

Decision: a part holds no state of its own and defines no ``__init__``: ``GovernedRun`` makes
all of it. What is shared besides the state is what both doors do alike: refuse a call made
from inside one of the run's own tool calls (``not_nested``), and give a framework's call an id
no earlier call of the session has (``_fresh``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, NoReturn

from tether.errors import RunError
from tether.integrations.nesting import not_nested
from tether.journal.chain import Journal
from tether.runtime.accounting.accountant import Accountant
from tether.runtime.accounting.stop import Stop
from tether.runtime.approvals.requests import ApprovalStore
from tether.runtime.chokepoint.gate import PolicyGate
from tether.runtime.chokepoint.turn import ToolCalls
from tether.runtime.provenance.values import Sightings
from tether.runtime.record.result import ToolResult
from tether.runtime.record.state import SessionState
from tether.tools.registry import ToolRegistry


class GovernedPart:
    """A part of ``GovernedRun``: the state its doors share (made by the run)."""

    id: str
    request: str
    registry: ToolRegistry
    stopped: RunError | None  # the run's RunStopped, once it stopped
    _ended: bool
    _lock: asyncio.Lock  # one call at a time: the budget is checked, then charged
    _state: SessionState
    _journal: Journal
    _accountant: Accountant
    _approvals: ApprovalStore
    _gate: PolicyGate
    _calls: ToolCalls
    _ledger: dict[str, tuple[str, ToolResult]]  # framework id -> resolved call
    _waiting: dict[str, tuple[str, str]]  # framework id -> (signature, approval)
    _ids: dict[str, str]  # framework id -> tether id, where they differ
    _used: set[str]  # tether call ids journaled so far
    _sightings: Sightings | None  # for ask_first's probes

    if TYPE_CHECKING:  # the run's own (integrations.governed)
        def _check_open(self) -> None: ...

        def _stop(self, stop: Stop) -> NoReturn: ...

    def not_nested(self) -> None:
        """NestedRunError when this context runs inside one of this run's own tool calls."""
        not_nested(self.id)

    def _fresh(self, call_id: str) -> str:
        """A tether call id for ``call_id`` that no earlier call of the session has."""
        own, n = call_id, 1
        while own in self._used:
            n += 1
            own = f"{call_id}~{n}"
        self._used.add(own)
        self._ids[call_id] = own
        return own
