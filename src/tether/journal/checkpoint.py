"""Checkpoints of the anchor chain: a signed "this many anchors, ending here" an outsider checks.

Why: the anchor chain (``tether.journal.anchors``) shows a deleted or cut session, but whoever
can rewrite the database can rewrite the anchors with it, and the newest anchors — those no later
anchor witnessed — can be cut together with their sessions. A checkpoint signed with a key kept
outside the database (and cosigned by a witness that holds a key of its own and remembers what
it cosigned) fixes a point no such rewrite or cut can move back: every anchor up to it must still
be there, unchanged, in the same order.

Decision: the checkpoint is a C2SP tlog-checkpoint (https://c2sp.org/tlog-checkpoint): an origin
line (the operator key's name), the tree size (the number of anchors, all lanes together), the
base64 root hash, and one extension line ``tether-lanes <count of lane 0> <count of lane 1>
...``, signed as a C2SP signed note (``tether.journal.note``). The "tree" is **not** a Merkle
tree: it is the store's anchor lanes, each a SHA-256 hash chain from its genesis
(``store.anchor_chain.lane_genesis``; an anchor's hash is SHA-256 of the previous hash and its
body); the root hash is SHA-256 of the lines ``<lane> <count> <hex head>\\n``, one per lane, where
head is the hash of that lane's last anchor counted (its genesis for a lane with none). An
extension from one checkpoint to a later one is proved by the anchor bodies in between, lane by
lane, which a witness hashes onto the heads it remembered (``extend``): a rolled-back or forked
chain does not reach the new root. Consistency proofs of size log(n), as a Merkle tree gives,
are not offered: a proof is as long as what was appended since the last cosigned checkpoint.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tether.journal.note import NoteInvalid, Signer
from tether.store.anchor_chain import Anchor, lane_genesis

LANES_LINE = "tether-lanes"

Heads = tuple[tuple[int, str], ...]
"""Per lane, (anchors counted, hex hash of the last one counted)."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A checkpoint's text, parsed."""

    origin: str
    size: int
    root: bytes
    counts: tuple[int, ...]

    def text(self) -> str:
        counts = " ".join(map(str, self.counts))
        return (f"{self.origin}\n{self.size}\n{base64.b64encode(self.root).decode()}\n"
                f"{LANES_LINE} {counts}\n")


def root_hash(heads: Heads) -> bytes:
    return hashlib.sha256("".join(f"{lane} {count} {head}\n" for lane, (count, head)
                                  in enumerate(heads)).encode()).digest()


def checkpoint_of(origin: str, heads: Heads) -> Checkpoint:
    counts = tuple(count for count, _ in heads)
    return Checkpoint(origin, sum(counts), root_hash(heads), counts)


def parse(text: str) -> Checkpoint:
    """A checkpoint's note text (its signatures already split off)."""
    lines = text.split("\n")
    try:
        origin, size, root = lines[0], int(lines[1]), base64.b64decode(lines[2], validate=True)
        name, *counts = lines[3].split(" ")
        parsed = Checkpoint(origin, size, root, tuple(int(c) for c in counts))
    except (IndexError, ValueError):
        raise NoteInvalid("not a tether checkpoint: expected origin, size, root hash and a "
                          f"{LANES_LINE} line") from None
    if name != LANES_LINE or len(root) != 32 or sum(parsed.counts) != size or not origin \
            or min(parsed.counts, default=-1) < 0 or parsed.text() != text:
        raise NoteInvalid(f"a checkpoint of {origin!r} is malformed: its size, root hash or "
                          f"{LANES_LINE} line does not hold together")
    return parsed


def lane_chains(anchors: Sequence[Anchor], lanes: int) -> list[list[str]]:
    """Per lane, the hash after each anchor, recomputed from the lane's genesis and the bodies
    (never the stored hashes): ``chains[lane][n - 1]`` is the head after n anchors."""
    chains: list[list[str]] = [[] for _ in range(lanes)]
    last = [lane_genesis(lane) for lane in range(lanes)]
    for anchor in anchors:
        if 0 <= anchor.lane < lanes:
            last[anchor.lane] = _link(last[anchor.lane], anchor.body)
            chains[anchor.lane].append(last[anchor.lane])
    return chains


def heads_at(chains: Sequence[Sequence[str]], counts: Sequence[int]) -> Heads | None:
    """The heads after ``counts[lane]`` anchors of each lane; None when a lane holds fewer
    (or the lane count differs)."""
    if len(counts) != len(chains):
        return None
    heads = []
    for lane, (chain, count) in enumerate(zip(chains, counts, strict=True)):
        if count > len(chain):
            return None
        heads.append((count, chain[count - 1] if count else lane_genesis(lane)))
    return tuple(heads)


def current(anchors: Sequence[Anchor], lanes: int) -> Heads:
    chains = lane_chains(anchors, lanes)
    found = heads_at(chains, [len(chain) for chain in chains])
    assert found is not None  # every lane holds as many as it holds
    return found


def sign(signer: Signer, anchors: Sequence[Anchor], lanes: int) -> tuple[str, Heads]:
    """A checkpoint of the anchors as they stand, signed: the note and its heads."""
    heads = current(anchors, lanes)
    text = checkpoint_of(signer.name, heads).text()
    return f"{text}\n{signer.sign(text)}", heads


def proof(anchors: Sequence[Anchor], lanes: int, since: Sequence[int]) -> dict[str, list[str]]:
    """The anchor bodies each lane appended after ``since[lane]`` anchors: what proves that a
    checkpoint extends one of those counts."""
    bodies: list[list[str]] = [[] for _ in range(lanes)]
    for anchor in anchors:
        if 0 <= anchor.lane < lanes:
            bodies[anchor.lane].append(anchor.body)
    return {str(lane): bodies[lane][since[lane]:] for lane in range(lanes)
            if lane < len(since) and len(bodies[lane]) > since[lane]}


def extend(heads: Heads, bodies: Mapping[str, Sequence[str]]) -> Heads:
    """``heads`` with each lane's ``bodies`` hashed on, in order."""
    grown = []
    for lane, (count, head) in enumerate(heads):
        for body in bodies.get(str(lane), ()):
            count, head = count + 1, _link(head, body)
        grown.append((count, head))
    return tuple(grown)


def _link(prev: str, body: str) -> str:
    return hashlib.sha256(f"{prev}{body}".encode()).hexdigest()
