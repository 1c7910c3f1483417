"""The witness: a separate process (`tether witness` on loopback) with its own key and state file
that cosigns a checkpoint only if it extends the last one it cosigned for that origin — it
refuses a rolled-back or forked one, and one the operator did not sign, and remembers across a
restart. Then 1,000 randomized tampers of an anchor chain: every one that touches what a
witnessed checkpoint covers is detected with the public keys alone; every one after it is not,
and the assurance says how many anchors no checkpoint covers."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from audit_helpers import seed
from signing_helpers import Keys, clean_env, make_keys
from tether.journal import checkpoint
from tether.journal.note import generate, read_private, read_public
from tether.journal.signed import check_signed
from tether.serve.witness import Witness, WitnessRefused, checkpoint_store, cosign, newest
from tether.store.anchor_chain import Anchor, lane_genesis, seal_anchor
from tether.store.opening import open_store


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path)


@pytest.fixture
def witness_process(keys: Keys, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`tether witness` in a process of its own; yields its URL and state file; stopped with
    SIGTERM, and it must exit cleanly."""
    state = tmp_path / "witness-state.json"
    yield from _run_witness(keys, state)


def _run_witness(keys: Keys, state: Path, *, kill: bool = False
                 ) -> Iterator[tuple[str, Path]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tether", "witness", "--key", f"{keys.witness}.key", "--log-key",
         keys.operator_pub, "--state", str(state), "--port", "0"],
        env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # blocks until it listens (or exits)
        assert "listening on http://127.0.0.1:" in line, (line, process.stderr.read() if
                                                          process.stderr else "")
        yield line.rsplit(" ", 1)[1].strip(), state
    finally:
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        assert process.wait(timeout=60) == (-signal.SIGKILL if kill else 0)


def _store(tmp_path: Path, sessions: int) -> str:
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    for n in range(sessions):
        seed(url, f"s{n}", 1_000_000.0 + n)
    return url


def test_the_witness_cosigns_extensions_and_refuses_a_rollback_and_a_fork(
        keys: Keys, tmp_path: Path, witness_process: tuple[str, Path]) -> None:
    url, state = witness_process
    signer = read_private(keys.operator_key)
    db = _store(tmp_path, 3)
    store = open_store(db)
    try:
        note, refused = checkpoint_store(store, signer, [url])  # first contact
        assert refused == [] and "\u2014 witness.example/w1 " in note
        old = store.anchors()
        seed(db, "s3", 1_000_010.0)
        note, refused = checkpoint_store(store, signer, [url])  # an extension, proved
        assert refused == [] and "\n4\n" in note
        anchors = store.anchors()
    finally:
        store.close()
    assert json.loads(state.read_text())[signer.name]["size"] == 4
    back, heads = checkpoint.sign(signer, old, 1)  # rolled back: signed, but smaller
    with pytest.raises(WitnessRefused, match=r"409.*rolled back"):
        cosign(url, back, heads, old, 1, signer.name)
    forked = [*anchors[:3], replace(anchors[3], body=anchors[3].body.replace("s3", "s9"))]
    fork, heads = checkpoint.sign(signer, forked, 1)  # same size, another history
    with pytest.raises(WitnessRefused, match=r"409.*forked or rewritten"):
        cosign(url, fork, heads, forked, 1, signer.name)
    grown = [*forked, *anchors[4:]]
    fork, heads = checkpoint.sign(signer, grown, 1)  # longer, on the forked history
    with pytest.raises(WitnessRefused, match="409"):
        cosign(url, fork, heads, grown, 1, signer.name)
    stranger = generate(signer.name)  # the operator's name, another key
    forged, heads = checkpoint.sign(stranger, anchors, 1)
    with pytest.raises(WitnessRefused, match="403"):
        cosign(url, forged, heads, anchors, 1, signer.name)
    seen = newest(url, signer.name)
    assert seen is not None and seen["size"] == 4  # nothing refused moved its state


def test_the_witness_remembers_across_a_restart(keys: Keys, tmp_path: Path) -> None:
    signer = read_private(keys.operator_key)
    store = open_store(_store(tmp_path, 2))
    state = tmp_path / "state.json"
    try:
        for url, _ in _run_witness(keys, state):
            assert checkpoint_store(store, signer, [url])[1] == []
        anchors = store.anchors()
        for url, _ in _run_witness(keys, state, kill=True):  # a new process, the same state
            back, heads = checkpoint.sign(signer, anchors[:1], 1)
            with pytest.raises(WitnessRefused, match="rolled back"):
                cosign(url, back, heads, anchors[:1], 1, signer.name)
        # killed (-9) as it was replacing its state: the half-written file is never read
        state.with_name(state.name + ".tmp").write_text('{"example.com/tether/prod": {"si')
        for url, _ in _run_witness(keys, state):
            seen = newest(url, signer.name)
            assert seen is not None and seen["size"] == len(anchors)
            with pytest.raises(WitnessRefused, match="rolled back"):
                cosign(url, back, heads, anchors[:1], 1, signer.name)
    finally:
        store.close()


def test_checkpointers_racing_on_one_witness_leave_it_consistent(
        keys: Keys, tmp_path: Path, witness_process: tuple[str, Path]) -> None:
    url, _ = witness_process
    signer = read_private(keys.operator_key)
    db = _store(tmp_path, 1)
    refusals: list[str] = []

    def checkpointer(name: str) -> None:
        store = open_store(db)
        try:
            for round_ in range(4):
                seed(db, f"{name}-{round_}", 1_000_100.0 + round_)
                refusals.extend(checkpoint_store(store, signer, [url])[1])
        finally:
            store.close()

    workers = [threading.Thread(target=checkpointer, args=(name,)) for name in ("a", "b")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert all("409" in reason and "rolled back" in reason for reason in refusals), refusals
    store = open_store(db)
    try:
        anchors, kept = store.anchors(), store.checkpoints()
    finally:
        store.close()
    operator, witness_key = read_public(keys.operator_pub), read_public(keys.witness_pub)
    seen = newest(url, signer.name)
    assert seen is not None
    notes = [("kept", c.note) for c in kept] + [("witness", str(seen["note"]))]
    findings, assurance = check_signed(anchors, 1, notes, operator, [witness_key])
    assert findings == [] and assurance.witnessed[0].size == seen["size"]
    assert seen["size"] == max(c.size for c in kept if "witness.example/w1" in c.note)


def test_an_unreachable_witness_is_reported_and_the_checkpoint_still_kept(
        keys: Keys, tmp_path: Path) -> None:
    store = open_store(_store(tmp_path, 1))
    try:
        note, refused = checkpoint_store(store, read_private(keys.operator_key),
                                         ["http://127.0.0.1:9"])
        assert len(refused) == 1 and "cannot reach the witness" in refused[0]
        assert [c.note for c in store.checkpoints()] == [note]
    finally:
        store.close()


# -- 1,000 randomized tampers -------------------------------------------------------------------

def _chain(bodies: list[tuple[int, str, dict[str, object]]]) -> list[Anchor]:
    """Anchors as a store seals them (each lane chained from its genesis), from (lane, session,
    body): also how an attacker without a key re-seals a tampered list so every hash agrees."""
    heads: dict[int, str] = {}
    anchors = []
    for n, (lane, sid, body) in enumerate(bodies, start=1):
        prev = heads.get(lane, lane_genesis(lane))
        text, digest, _ = seal_anchor(prev, body, None)
        anchors.append(Anchor(n, "head", sid, text, prev, digest, None, lane))
        heads[lane] = digest
    return anchors


def _tamper(rng: random.Random, rows: list[tuple[int, str, dict[str, object]]]
            ) -> tuple[str, list[tuple[int, str, dict[str, object]]], int]:
    """A random tamper: its name, the rows after it, and the lowest write index it touches."""
    n = len(rows)
    p = rng.randrange(n)
    kind = rng.choice(["edit", "delete", "truncate", "remove session", "swap", "insert"])
    rows = list(rows)
    if kind == "edit":
        lane, sid, body = rows[p]
        rows[p] = (lane, sid, {**body, "head": "e" * 64})
    elif kind == "delete":
        del rows[p]
    elif kind == "truncate":
        rows = rows[:p]
    elif kind == "remove session":
        sid = rows[p][1]
        p = min(i for i, row in enumerate(rows) if row[1] == sid)
        rows = [row for row in rows if row[1] != sid]
    elif kind == "swap":  # two anchors of one lane trade places
        later = [i for i in range(p + 1, n) if rows[i][0] == rows[p][0]]
        if not later:
            return _tamper(rng, rows)
        q = rng.choice(later)
        rows[p], rows[q] = rows[q], rows[p]
    else:  # a forged anchor slipped into the lane of anchor p, just before it
        rows.insert(p, (rows[p][0], "forged", {"session_id": "forged", "seq": 1,
                                               "head": "f" * 64, "type": "session.end"}))
    return kind, rows, p


def test_a_thousand_random_tampers_are_detected_exactly_when_a_witnessed_checkpoint_covers_them(
        keys: Keys, tmp_path: Path) -> None:
    rng = random.Random(49)
    signer = read_private(keys.operator_key)
    operator, witness_key = read_public(keys.operator_pub), read_public(keys.witness_pub)
    detected = undetected = 0
    for trial in range(1000):
        lanes = rng.choice([1, 1, 3, 16])
        n = rng.randint(2, 40)
        rows = [(rng.randrange(lanes), f"s{rng.randrange(8)}",
                 {"session_id": "-", "seq": i, "head": f"{i:064x}", "type": "session.end"})
                for i in range(n)]
        anchors = _chain(rows)
        witness = Witness(read_private(f"{keys.witness}.key"), operator,
                          tmp_path / f"state-{trial}.json")
        first = rng.randint(0, n)  # first contact at some size, then an extension proved
        covered = rng.randint(first, n)
        notes = []
        for upto, since in ((first, None), (covered, first)):
            note, heads = checkpoint.sign(signer, anchors[:upto], lanes)
            before = None if since is None else [c for c, _ in checkpoint.current(
                anchors[:since], lanes)]
            request = {"checkpoint": note, "heads": [list(h) for h in heads]}
            if before is not None:
                request["proof"] = checkpoint.proof(anchors[:upto], lanes, before)
                request["old"] = before
            notes.append(note + witness.add(request))
        kind, tampered, touched = _tamper(rng, rows)
        findings, assurance = check_signed(_chain(tampered), lanes,
                                           [("the witness", notes[-1])], operator,
                                           [witness_key])
        if touched < covered:
            assert findings, (trial, kind, touched, covered)
            detected += 1
        else:  # the stated outcome: after the newest witnessed checkpoint, not detected
            assert findings == [], (trial, kind, touched, covered, findings)
            assert assurance.signed == covered and assurance.witnessed[0].size == covered
            newer = len(tampered) - covered
            assert (f"the {newer} newest anchor" in assurance.level()) == (newer > 0)
            undetected += 1
    assert detected + undetected == 1000 and detected > 500 and undetected > 100


def test_a_checkpoint_whose_operator_signature_was_stripped_is_not_counted(
        keys: Keys, tmp_path: Path) -> None:
    signer = read_private(keys.operator_key)
    operator, witness_key = read_public(keys.operator_pub), read_public(keys.witness_pub)
    anchors = _chain([(0, "s0", {"session_id": "s0", "seq": 1, "head": "0" * 64,
                                 "type": "session.end"})])
    note, heads = checkpoint.sign(signer, anchors, 1)
    witness = Witness(read_private(f"{keys.witness}.key"), operator, tmp_path / "state.json")
    cosigned = note + witness.add({"checkpoint": note, "heads": [list(h) for h in heads]})
    assert check_signed(anchors, 1, [("kept", cosigned)], operator, [witness_key])[0] == []
    text, lines = cosigned.split("\n\n")
    only_witness = f"{text}\n\n{lines.splitlines()[1]}\n"  # the operator's line removed
    findings, assurance = check_signed(anchors, 1, [("kept", only_witness)], operator,
                                       [witness_key])
    assert "not signed by the operator key" in str(findings[0]) and assurance.signed is None
