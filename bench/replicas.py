"""Two replicas of ``tether mcp serve`` on one store behind a round-robin proxy, driven by a mix
of 2026-07-28 (stateless) and 2025-11-25 (session, sticky) clients: calls, errors, calls per
second, and the journal checked (each call once, every chain verifying, the shared quota held).

The harness is the test's (tests/mcp_replicas.py, run small by tests/test_mcp_replicas.py).
Run: ``python bench/replicas.py --calls 10000 [--store URL] [--replicas N]`` (the store by
default a new SQLite file; a PostgreSQL URL should name a schema of its own, ``?schema=...``).
Everything is on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from mcp_replicas import RoundRobin, drive, policy_yaml, read_journals, replicas, serving
from tether.journal.chain import verify_chain


async def run(store: str, policy: Path, calls: int, stateless: int, handshake: int,
              limited: int, n: int) -> None:
    with replicas(store, policy, n) as urls:
        proxy = RoundRobin(urls, sticky=True)
        async with serving(proxy) as url:
            tally = await drive(url, calls, stateless=stateless, handshake=handshake)
    started = time.perf_counter()
    sessions = read_journals(store)
    broken = sum(verify_chain(events) is not None for events in sessions.values())
    called = collections.Counter(e.data["call"]["arguments"]["text"]
                                 for events in sessions.values() for e in events
                                 if e.type == "client.call")
    checked = time.perf_counter() - started
    seen = tally.stateless + tally.handshake
    limited_ok = sum(1 for t, s, _ in seen if int(t.split("-")[1]) % 10 == 0 and s == "ok")
    print(f"calls made:            {tally.calls} of {calls} "
          f"({len(tally.stateless)} stateless, {len(tally.handshake)} handshake)")
    print(f"errors:                {len(tally.errors)}"
          + (f" (first: {tally.errors[0][:200]})" if tally.errors else ""))
    print(f"session not found:     {tally.not_found} (stateless requests answered 404)")
    print(f"seconds:               {tally.seconds:.2f}")
    print(f"calls/second:          {tally.calls / tally.seconds:.0f}")
    print(f"requests per replica:  {proxy.served}")
    print(f"statuses:              {dict(collections.Counter(s for _, s, _ in seen))}")
    print(f"quota on 'limited':    {limited_ok} ran of limit {limited}")
    print(f"journal:               {len(sessions)} sessions, {sum(called.values())} calls "
          f"journaled, {sum(1 for n in called.values() if n != 1)} not exactly once, "
          f"{len(set(called) ^ {t for t, _, _ in seen})} differing from the answers, "
          f"{broken} chains broken (checked in {checked:.1f}s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--stateless", type=int, default=6, help="2026-07-28 clients at once")
    parser.add_argument("--handshake", type=int, default=2, help="2025-11-25 clients at once")
    parser.add_argument("--limited", type=int, default=50, help="the quota on 'limited'")
    parser.add_argument("--store", help="store URL (default: a new SQLite file)")
    parser.add_argument("--replicas", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(policy_yaml(args.limited))
        store = args.store or f"sqlite:///{Path(tmp) / 'replicas.db'}"
        asyncio.run(run(store, policy, args.calls, args.stateless, args.handshake,
                        args.limited, args.replicas))


if __name__ == "__main__":
    main()
