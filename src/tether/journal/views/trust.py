"""Trust audit: which tools carried text a third party wrote, and which of them were trusted.

Why: every containment rule rests on declarations — a tool's ``output_trust`` says whether its
output can hold text someone else wrote. One wrong ``trusted`` (a channel list whose names anyone
may choose, a delete that echoes the deleted file back) makes provenance call an attacker's
value trusted, and no rule downstream can tell. Declarations are reviewed by people; this checks
them against what the tools really returned.

Decision: canaries. Plant unique made-up strings where third parties write (an e-mail to
yourself, a channel name, a shared file, a review), run sessions, then look for the canaries in
every recorded tool result. The journal says how each tool was declared when it ran (a result of
a tool declared untrusted carries ``untrusted``), so the audit needs no tool registry and judges
the declaration that was in force. A canary in the result of a tool declared trusted is a
finding; so is one in a value an untrusted tool vouched for (its ``trusted_fields``, whose
names the result records too). Matching is plain substring search: a canary is a string nobody
else writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tether.errors import InvalidArgument
from tether.types import Event
from tether.vocabulary import EventType
from tether.vouched import split_vouched

TRUSTED_FIELD = "trusted field"  # a value under one of an untrusted tool's trusted_fields


@dataclass(frozen=True, slots=True)
class Carrier:
    """A tool whose results carried canaries."""

    tool: str
    declared: str  # "trusted" or "untrusted": its output_trust when it ran; or TRUSTED_FIELD
    canaries: tuple[str, ...]  # which, sorted
    results: int  # how many of its results carried one
    first: tuple[str, int]  # (session id, seq) of the first such result

    @property
    def finding(self) -> bool:
        """Declared trusted (the tool, or one of its trusted_fields), yet it carried
        third-party text."""
        return self.declared != "untrusted"

    def to_dict(self) -> dict[str, object]:
        return {"tool": self.tool, "declared": self.declared, "canaries": list(self.canaries),
                "results": self.results, "first_session": self.first[0],
                "first_seq": self.first[1], "finding": self.finding}


def carriers(sessions: Iterable[Sequence[Event]], canaries: Sequence[str]) -> list[Carrier]:
    """Every (tool, declared trust) whose recorded results carried one of ``canaries``:
    findings (declared trusted) first, then by tool name."""
    wanted = [c for c in dict.fromkeys(canaries) if c]
    if not wanted:
        raise InvalidArgument("give at least one non-empty canary: the string you planted where "
                              "third parties write")
    seen: dict[tuple[str, str], tuple[set[str], int, tuple[str, int]]] = {}
    for events in sessions:
        for event in events:
            if event.type != EventType.TOOL_RESULT:
                continue
            content = str(event.data.get("content", ""))
            tool = str(event.data.get("tool"))
            # a result that inherited distrust from the call that asked for it keeps what its
            # tool declared apart (tether.runtime.provenance.inherited): the declaration is judged
            stated = event.data.get("declared") or {}
            fields = stated.get("trusted_fields") or event.data.get("trusted_fields")
            untrusted = (stated["output_trust"] == "untrusted" if "output_trust" in stated
                         else event.data.get("untrusted"))
            verdicts = [("untrusted" if untrusted else "trusted", content)]
            if fields:  # the values it vouched for must carry none either
                verdicts.append((TRUSTED_FIELD, "\n".join(split_vouched(content, fields)[0])))
            for declared, text in verdicts:
                found = {c for c in wanted if c in text}
                if found:
                    known, count, first = seen.get((tool, declared),
                                                   (set(), 0, (event.session_id, event.seq)))
                    seen[(tool, declared)] = (known | found, count + 1, first)
    out = [Carrier(tool, declared, tuple(sorted(found)), count, first)
           for (tool, declared), (found, count, first) in seen.items()]
    return sorted(out, key=lambda c: (not c.finding, c.tool, c.declared))


def render(found: Sequence[Carrier]) -> str:
    if not found:
        return "no tool result carried a canary"
    lines = []
    for c in found:
        verdict = f"FINDING: declared {c.declared}" if c.finding else "declared untrusted"
        lines.append(f"{c.tool}: {verdict}; {c.results} result(s) carried "
                     f"{', '.join(c.canaries)} (first: session {c.first[0]}, event {c.first[1]})")
    return "\n".join(lines)
