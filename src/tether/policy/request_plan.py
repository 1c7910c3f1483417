"""The request plan as data: what the user's request asks for, as the policy is shown it.

Why a module of its own: the plan is read from the request by ``tether.policy.plan`` (which
needs the SARC ``Resource`` of ``tether.policy.base`` to know each tool's words) and shown to
every decision in ``Context.plan`` (``tether.policy.base``). Kept in ``plan.py``, the two
modules would import each other; the records alone, here, import nothing of tether, so both
stand on them. ``tether.policy.plan`` still exports both names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PlanEntry:
    """A side-effecting tool the request asks for, in one clause; ``by``: who read it there —
    ``rules``, or ``model`` (the planner's reading, validated: ``tether.policy.planner``);
    ``binds``: whether the addresses the clause names are this tool's parties — the clause's
    own action's, the tool whose word comes first ("update my scheduled transfer to X": the
    update's, not a payment's)."""

    tool: str
    clause: str
    count: int = 1
    by: str = "rules"
    binds: bool = True

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool, "clause": self.clause, "count": self.count}
        if self.by != "rules":  # (a plan the rules read alone is journaled as it always was)
            out["by"] = self.by
        if not self.binds:
            out["binds"] = False
        return out


@dataclass(frozen=True, slots=True)
class RequestPlan:
    """What the request asks for (``entries``), the clauses it mentions a tool's words in
    without asking for it (``aside``: clause and why), and the values it names (``named``:
    quoted, or an e-mail address, a URL, an IBAN)."""

    entries: tuple[PlanEntry, ...] = ()
    aside: tuple[tuple[str, str], ...] = ()
    named: tuple[str, ...] = ()

    def asks(self, tool: str) -> tuple[PlanEntry, ...]:
        return tuple(e for e in self.entries if e.tool == tool)

    def to_dict(self) -> dict[str, Any]:
        return {"entries": [e.to_dict() for e in self.entries],
                "aside": [list(a) for a in self.aside], "named": list(self.named)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RequestPlan:
        return cls(tuple(PlanEntry(e["tool"], e["clause"], int(e.get("count", 1)),
                                   str(e.get("by", "rules")), bool(e.get("binds", True)))
                         for e in data.get("entries", ())),
                   tuple((str(c), str(w)) for c, w in data.get("aside", ())),
                   tuple(str(v) for v in data.get("named", ())))
