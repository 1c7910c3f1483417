"""What every adapter's run object shares: the tools it declares, and the handle it gives back.

Why its own module: the three adapters (pydantic-ai, LangGraph, the OpenAI Agents SDK) each read
their framework's tools into tether's view and each hand the user a run object; the reading of
the declarations (``meta`` by name, then an overlay, else the cautious default; a name that is
none of the tools refused) and the run's handle (its id, journal, approval store, and ending it)
are the same for all, so they are written once, here, and only the framework's part stays in
each adapter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tether.errors import InvalidArgument
from tether.integrations.decided import FOREIGN_META, ForeignTool, Reader
from tether.integrations.governed import GovernedRun
from tether.journal.chain import Journal
from tether.policy.overlay import Overlay
from tether.runtime.approvals.requests import ApprovalStore
from tether.tools.base import Tool, ToolContext, ToolMeta
from tether.types import ToolSpec


def declared_tools(specs: Sequence[ToolSpec], meta: Mapping[str, ToolMeta] | None = None,
                   overlay: Overlay | None = None,
                   readers: Mapping[str, Reader] | None = None) -> tuple[Tool, ...]:
    """tether's view of a framework's tools (``specs``: what the model sees of each): each one's
    metadata from ``meta`` (by name) and then ``overlay``, else the cautious reading, and its
    framework's own reading of its arguments from ``readers`` (by name). A name in ``meta``
    that is none of the tools is refused: a typo would leave a tool undeclared."""
    declared, names = dict(meta or {}), [s.name for s in specs]
    unknown = sorted(set(declared) - set(names))
    if unknown:
        raise InvalidArgument(f"meta declares {unknown}, which are not among the tools "
                              f"({', '.join(sorted(names))}); fix the names")
    read = readers or {}
    found: tuple[Tool, ...] = tuple(ForeignTool(s, declared.get(s.name, FOREIGN_META),
                                                read.get(s.name)) for s in specs)
    return overlay.apply(found) if overlay is not None else found


class ForeignRun:
    """The handle of one framework's run under tether (``governed``: its session)."""

    governed: GovernedRun

    @property
    def id(self) -> str:
        return self.governed.id

    @property
    def journal(self) -> Journal:
        return self.governed.journal

    @property
    def approvals(self) -> ApprovalStore:
        return self.governed.approvals

    def lend(self) -> ToolContext:
        """What a sub-run made in one of this run's tool calls draws on: ``parent=run``."""
        return self.governed.lend()

    def close(self, answer: object = "") -> None:
        """End the session (``finished``), recording the agent's answer when it is text."""
        self.governed.close(answer if isinstance(answer, str) else "")
