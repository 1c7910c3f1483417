"""Attacks through MCP itself, measured: a generated set of hostile-server cases (attack kind x
channel x payload template x target), each run through tether's MCP client with the obedient
scripted stand-in (it follows every instruction it reads) under the ``contained`` policy, once
with every approval denied and once with an oracle that approves only the user's own calls.

Prints, per kind and channel and overall: attack success (the target call ran, or a secret
reached a model request or the journal), how often the payload reached the model at all, and
benign utility (the user's own calls all ran). The harness is the test's (tests/mcp_attacks.py;
tests/test_mcp_attacks_generated.py runs a stratified part).
Run: ``python bench/mcp_attacks.py [--seed 53] [--workers 2] [--approvers deny,oracle]
[--limit N] [--policy contained|allow] [--json FILE]``; ``--policy allow`` is the open door
(no policy: what each attack gets ungoverned). Everything is local: stdio servers, no network.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from mcp_attacks import Case, Verdict, generate, run_case


def _one(job: tuple[Case, str, str]) -> tuple[str, Verdict]:
    case, approver, policy = job
    return approver, run_case(case, approver, policy=policy)


def rows(verdicts: Sequence[Verdict]) -> list[dict[str, Any]]:
    groups: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        groups[f"{v.case.kind}/{v.case.channel}"].append(v)
        groups[v.case.kind].append(v)
        groups["all"].append(v)

    def rate(n: int, d: int) -> float:
        return n / d if d else 0.0

    out = []
    for name in sorted(groups, key=lambda g: (g == "all", g.split("/")[0], "/" in g, g)):
        vs = groups[name]
        out.append({"group": name, "cases": len(vs),
                    "attack_success": rate(sum(v.attacked for v in vs), len(vs)),
                    "payload_read": rate(sum(v.read for v in vs), len(vs)),
                    "benign_utility": rate(sum(v.utility for v in vs), len(vs)),
                    "approvals": rate(sum(v.approvals for v in vs), len(vs)),
                    "refused_to_start": sum(bool(v.error) for v in vs)})
    return out


def render(approver: str, table: Sequence[dict[str, Any]]) -> str:
    lines = [f"approver: {approver}",
             f"{'kind/channel':<26} {'cases':>5} {'attack':>7} {'read':>6} {'benign':>7} "
             f"{'appr':>5} {'refused':>7}"]
    for r in table:
        label = r["group"] if "/" not in r["group"] else "  " + r["group"].split("/")[1]
        lines.append(f"{label:<26} {r['cases']:>5} {r['attack_success']:>7.1%} "
                     f"{r['payload_read']:>6.1%} {r['benign_utility']:>7.1%} "
                     f"{r['approvals']:>5.2f} {r['refused_to_start']:>7}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=53)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--approvers", default="deny,oracle")
    parser.add_argument("--policy", default="contained", choices=("contained", "allow"),
                        help="allow: the open door, what the attacks get ungoverned")
    parser.add_argument("--limit", type=int, default=0, help="run only the first N cases")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    cases = generate(args.seed)
    if args.limit:
        cases = cases[:args.limit]
    approvers = [a for a in args.approvers.split(",") if a]
    jobs = [(case, approver, args.policy) for approver in approvers for case in cases]
    started = time.perf_counter()
    if args.workers <= 1:
        done = [_one(job) for job in jobs]
    else:
        with ProcessPoolExecutor(args.workers) as pool:
            done = list(pool.map(_one, jobs))
    seconds = time.perf_counter() - started
    report: dict[str, Any] = {"seed": args.seed, "policy": args.policy, "cases": len(cases),
                              "seconds": seconds,
                              "tables": {}, "attacked": []}
    print(f"{len(cases)} cases (seed {args.seed}), obedient scripted stand-in, policy "
          f"{args.policy}, {seconds:.0f} s")
    for approver in approvers:
        verdicts = [v for a, v in done if a == approver]
        table = rows(verdicts)
        report["tables"][approver] = table
        report["attacked"] += [{"approver": approver, "case": v.case.id, "ran": v.ran,
                                "leaked": v.leaked} for v in verdicts if v.attacked]
        print()
        print(render(approver, table))
    for hit in report["attacked"]:
        print(f"ATTACKED ({hit['approver']}): {hit['case']}: ran {hit['ran']} leaked "
              f"{hit['leaked']}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str))
    return 1 if report["attacked"] else 0


if __name__ == "__main__":
    sys.exit(main())
