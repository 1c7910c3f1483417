"""The cost of signed records: python bench/signing.py [--instructions]

A checkpoint (``tether audit checkpoint``) recomputes every anchor lane from its genesis and
signs one note; a verify with ``--public-key`` recomputes them again and checks each signature;
a witness hashes the anchors appended since its last cosignature; an export signs one manifest
line naming every session's head. Nothing of this runs on a step: the journal's write path is
unchanged, so a store that never checkpoints pays nothing, and one that does pays per
checkpoint, not per event. Times are medians of several runs (a shared 2-vCPU machine moves
them by 30%); ``--instructions`` counts machine instructions under valgrind's cachegrind,
which do not move: per Ed25519 signature, per manifest session line, per anchor recomputed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from instructions import counted as instructions_of

from tether.journal import checkpoint
from tether.journal.note import COSIGNATURE_V1, generate
from tether.journal.signed import check_signed
from tether.journal.views.signed_export import manifest_line
from tether.serve.witness import Witness, cosign, serve
from tether.store.anchor_chain import Anchor, lane_genesis, seal_anchor


def anchors(n: int, lanes: int) -> list[Anchor]:
    heads: dict[int, str] = {}
    made = []
    for i in range(n):
        lane = i % lanes
        prev = heads.get(lane, lane_genesis(lane))
        body = {"session_id": f"{i:032x}", "seq": 23, "head": f"{i:064x}",
                "type": "session.end"}
        text, digest, _ = seal_anchor(prev, body, None)
        made.append(Anchor(i + 1, "head", body["session_id"], text, prev, digest, None, lane))
        heads[lane] = digest
    return made


def median_ms(work: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def timings() -> None:
    signer = generate("example.com/tether/prod")
    operator = signer.verifier()
    text = checkpoint.checkpoint_of(signer.name, ((6, "0" * 64),)).text()
    print(f"one Ed25519 note signature: {median_ms(lambda: signer.sign(text), 200):.3f} ms")
    for n in (1_000, 10_000, 100_000):
        for lanes in (1, 16):
            made = anchors(n, lanes)
            note = checkpoint.sign(signer, made, lanes)[0]
            sign = median_ms(lambda m=made, k=lanes: checkpoint.sign(signer, m, k))
            check = median_ms(lambda m=made, k=lanes, x=note: check_signed(
                m, k, [("kept", x)], operator))
            print(f"{n:>7} anchors, {lanes:>2} lane(s): checkpoint {sign:8.1f} ms, verify "
                  f"{check:8.1f} ms")
    for sessions in (1, 100, 10_000):
        heads = [(f"{i:032x}", 23, f"{i:064x}") for i in range(sessions)]
        print(f"export manifest of {sessions:>6} sessions: "
              f"{median_ms(lambda h=heads: manifest_line(signer, h)):8.2f} ms")
    with tempfile.TemporaryDirectory() as folder:
        witness = Witness(generate("witness.example/w1", COSIGNATURE_V1), operator,
                          Path(folder) / "state.json")
        server = serve(witness, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}"
        made = anchors(11_000, 16)
        note, heads = checkpoint.sign(signer, made[:1000], 16)
        cosign(url, note, heads, made[:1000], 16, signer.name)
        times = []
        for step in range(1, 6):  # each round appends 1,000 anchors and has them witnessed
            upto = made[:1000 + step * 1000]
            note, heads = checkpoint.sign(signer, upto, 16)
            start = time.perf_counter()
            cosign(url, note, heads, upto, 16, signer.name)
            times.append(time.perf_counter() - start)
        server.shutdown()
        server.server_close()
        print(f"witness cosignature on loopback, 1,000 new anchors proved: "
              f"{statistics.median(times) * 1000:.1f} ms")


CHILD = """
import sys
sys.path.insert(0, {src!r})
sys.path.insert(0, {bench!r})
from signing import anchors
from tether.journal import checkpoint
from tether.journal.note import generate
from tether.journal.views.signed_export import manifest_line
signer = generate("example.com/tether/prod")
signer.sign("warm\\n")
what, count = {what!r}, {count}
if what == "sign":
    for i in range(count):
        signer.sign("example.com/tether/prod\\n%d\\nAAAA\\n" % i)
elif what == "manifest":
    manifest_line(signer, [("%032x" % i, 23, "%064x" % i) for i in range(count)])
else:
    made = anchors(count, 16)
    if what == "anchors":
        checkpoint.sign(signer, made, 16)
"""


def counted(what: str, count: int) -> int:
    code = CHILD.format(src=str(Path(__file__).resolve().parent.parent / "src"),
                        bench=str(Path(__file__).resolve().parent), what=what, count=count)
    return instructions_of(code)


def instructions() -> None:
    for what, low, high, unit in (("sign", 0, 200, "Ed25519 note signature"),
                                  ("manifest", 1, 2001, "manifest session line")):
        per = (counted(what, high) - counted(what, low)) / (high - low)
        print(f"instructions per {unit}: {per:,.0f}")
    signed = counted("anchors", 3000) - counted("anchors", 1000)
    built = counted("build", 3000) - counted("build", 1000)  # the bench's own anchors, made
    print(f"instructions per anchor in a checkpoint: {(signed - built) / 2000:,.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instructions", action="store_true")
    if parser.parse_args().instructions:
        instructions()
    else:
        timings()
