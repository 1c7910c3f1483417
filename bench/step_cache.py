"""Where a step's wall time goes that its instructions do not show (issue 50, goal 1):
python bench/step_cache.py [--keep DIR]

A tether step takes about twice petfishframework's instructions but about four times its wall
time. This VM exposes no hardware counters (``perf stat``: not supported), so the script asks
valgrind's cachegrind to *simulate* them: first-level instruction and data cache misses, last-level
data misses, and branch mispredictions of a simple predictor, per step of the peers' scenario
(``bench/peers.py``: a scripted model calling a sync ``add`` tool 20 times; the difference
between 45 and 5 runs over 21 steps). It is a model of a CPU, not this CPU's counts: read the
ratios between the frameworks, not the numbers as this machine's. Printed per step, and as a
ratio to petfish's.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import peers  # bench/ is on the path of a script run from it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep petfish's venv here, for reuse")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is needed: apt-get install valgrind")
    where = args.keep or Path(tempfile.mkdtemp(prefix="tether-cache-"))
    found, missing = peers.install_peers(where)
    if "petfish" not in found:
        raise SystemExit(f"petfishframework could not be installed: {missing['petfish']}")
    cases = [peers.Case("petfish 1.3.0", found["petfish"], peers.PETFISH.format()),
             peers.Case("tether, sync tool", sys.executable,
                        peers.TETHER.format(tool="add", store=None)),
             peers.Case("tether, async tool", sys.executable,
                        peers.TETHER.format(tool="add_async", store=None))]
    rows = [(case.name, peers.counters(case, simulate=True)) for case in cases]
    anchor = rows[0][1]
    print(f"python {sys.version.split()[0]}; per step, cachegrind's simulation (a model of a CPU)")
    print(f"{'':20}" + "".join(f"{key:>14}" for key in peers.SIMULATED))
    for name, counts in rows:
        print(f"{name:20}" + "".join(f"{counts[k]:>14,.0f}" for k in peers.SIMULATED))
        if counts is not anchor:
            print(f"{'  / petfish':20}" + "".join(f"{counts[k] / anchor[k]:>13.2f}x"
                                                  for k in peers.SIMULATED))
    if args.keep is None:
        shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
