"""Checking a store's anchors against signed checkpoints, and saying what assurance that gives.

Why: a verify that passes means different things depending on what it could check — a chain
anyone with the database could have recomputed, an HMAC whoever holds the shared key could have
forged, a checkpoint only the operator's private key could have signed, or one a witness (a
second key, elsewhere) cosigned after checking it extends what it saw before. An outsider needs
to know which; ``Assurance`` names it.

Decision: only public keys are used here. Every checkpoint given (kept in the store, or brought
from outside it: a witness's newest, a file) must carry a valid signature of the operator's key;
a signature of a known key that fails, or a checkpoint of the origin signed by no known key, is a
finding. Each valid checkpoint's lane counts are then recomputed from the store's anchor bodies
(``tether.journal.checkpoint.lane_chains``, never the stored hashes): a lane holding fewer
anchors than a checkpoint counts was cut; a root that differs means an anchor up to it was
edited, removed, inserted or reordered. Anchors newer than the newest valid checkpoint are
covered by the chain (and the HMAC, with the audit key) only, and the assurance says how many.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from tether.journal import checkpoint
from tether.journal.anchors import Finding
from tether.journal.note import COSIGNATURE_V1, NoteInvalid, Verifier, open_note
from tether.store.anchor_chain import Anchor


@dataclass(frozen=True, slots=True)
class Witnessed:
    """A witness's cosignature that verify counted: the checkpoint size it covers, the
    witness's name and when it cosigned."""

    size: int
    witness: str
    timestamp: int


@dataclass(frozen=True, slots=True)
class Assurance:
    """What a verify with public keys reached."""

    anchors: int
    operator: str | None = None
    signed: int | None = None  # size of the newest checkpoint the operator key verified
    witnessed: tuple[Witnessed, ...] = field(default_factory=tuple)  # newest per witness
    hmac: bool = False

    def level(self) -> str:
        base = "HMAC with the shared audit key" if self.hmac else "chain only"
        if self.signed is None:
            return base
        parts = []
        for seen in self.witnessed:
            when = datetime.fromtimestamp(seen.timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            parts.append(f"witnessed at size {seen.size} by {seen.witness} ({when})")
        parts.append(f"signed by operator key {self.operator} at size {self.signed}")
        newer = self.anchors - self.signed
        if newer:
            parts.append(f"the {newer} newest anchor{'' if newer == 1 else 's'}: {base}")
        return "; ".join(parts)


def check_signed(anchors: Sequence[Anchor], lanes: int, notes: Sequence[tuple[str, str]],
                 operator: Verifier, witnesses: Sequence[Verifier] = (),
                 hmac: bool = False) -> tuple[list[Finding], Assurance]:
    """Findings against ``notes`` ((where it came from, signed note)) and the assurance they
    give the store's ``anchors``."""
    chains = checkpoint.lane_chains(anchors, lanes)
    findings: list[Finding] = []
    signed: int | None = None
    newest: dict[str, Witnessed] = {}
    for source, note in notes:
        try:
            text, signers = open_note(note, [operator, *witnesses])
            point = checkpoint.parse(text)
        except NoteInvalid as exc:
            findings.append(Finding("checkpoint", "", f"{source}: {exc}"))
            continue
        if point.origin != operator.name or not any(s.verifier == operator for s in signers):
            findings.append(Finding("checkpoint", "", f"{source}: a checkpoint of "
                                    f"{point.origin!r} not signed by the operator key "
                                    f"{operator.name}: it was written without that key"))
            continue
        problem = _against(point, chains)
        if problem is not None:
            findings.append(Finding("checkpoint", "", f"{source}: {problem}"))
            continue
        signed = max(signed or 0, point.size)
        for who in signers:
            if who.verifier.kind == COSIGNATURE_V1 and who.timestamp is not None:
                seen = newest.get(who.verifier.name)
                if seen is None or seen.size < point.size:
                    newest[who.verifier.name] = Witnessed(point.size, who.verifier.name,
                                                          who.timestamp)
    if signed is None and not findings:
        findings.append(Finding("checkpoint", "", f"no checkpoint signed by {operator.name}: "
                                "nothing in this store is signed; run `tether audit "
                                "checkpoint` with TETHER_SIGNING_KEY set"))
    witnessed = tuple(sorted(newest.values(), key=lambda w: (-w.size, w.witness)))
    return findings, Assurance(len(anchors), operator.name, signed, witnessed, hmac)


def _against(point: checkpoint.Checkpoint, chains: Sequence[Sequence[str]]) -> str | None:
    """Why the store's anchors do not reach ``point``, or None when they do."""
    if len(point.counts) != len(chains):
        return (f"the signed checkpoint at size {point.size} counts {len(point.counts)} lanes, "
                f"and the store keeps {len(chains)}: its lanes were changed")
    heads = checkpoint.heads_at(chains, point.counts)
    if heads is None:
        short = [f"lane {lane} holds {len(chain)} of {count}" for lane, (chain, count)
                 in enumerate(zip(chains, point.counts, strict=True)) if len(chain) < count]
        return (f"the signed checkpoint at size {point.size} counts more anchors than the store "
                f"holds ({', '.join(short)}): anchors were cut, with the sessions they anchor")
    if checkpoint.root_hash(heads) != point.root:
        return (f"the anchors up to the signed checkpoint at size {point.size} do not hash to "
                "its root: an anchor was edited, removed, inserted or reordered")
    return None
