"""What the ACS Guardian costs per tool call: python bench/acs.py [--calls N] [--store URL]
[--no-valgrind]

Issue 52: `tether acs serve` answers an observed agent's signed ``steps/toolCallRequest`` with a
decision by the same gate as every tether call. This counts one such request in-process — the
envelope checked, the HMAC (over RFC 8785) verified, replay and staleness checked, the call
decided by the session's Gateway, journaled, the answer signed — beside the same decision made
by ``Gateway.call`` alone (a tool whose body does nothing, the same policy and store), so the
difference is what the Guardian adds. The agent's side (building and signing each request, in
the same child) is counted on its own and taken out. Instructions by valgrind (the difference
between N and N + CALLS requests in a child process, so set-up cancels out), and wall time as a
ratio of the two in one run. The HTTP transport is not counted here (see docs/guide/acs.md).
A second comparison calls the gateway with the Guardian's own stand-in for an observed tool
(``ObservedTool``, declared cautiously: a side effect, egress, untrusted output), so what the
gateway does for such a tool — a side effect's start written before it runs — is told apart
from what the Guardian adds.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from instructions import counted

CALLS = 200

CHILD = """
import asyncio, sys, time, uuid
from datetime import UTC, datetime
from tether import tool
from tether.policy import AllowAll
from tether.runtime.chokepoint.gateway import Gateway
from tether.serve.acs import acs_guardian, session_key, sign
from tether.store import open_store

variant, runs, store_url = sys.argv[1], int(sys.argv[2]), sys.argv[3]
SECRET = b"bench-secret-" * 3
SESSION = str(uuid.UUID(int=1))

def envelope(method, payload):
    message = {{"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": {{
        "acs_version": "0.1.0", "request_id": str(uuid.uuid4()),
        "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "metadata": {{"session_id": SESSION, "agent_id": "bench"}}, "payload": payload}}}}
    return sign(message, "params", session_key(SECRET, SESSION), SESSION)

CALL = {{"tool": {{"name": "lookup"}}, "arguments": {{"id": {{"value": "c-1"}}}}}}

@tool
def lookup(id: str) -> str:
    '''Read a record.'''
    return "record"

async def guardian():
    g = acs_guardian(AllowAll(), secret=SECRET, store=open_store(store_url), tools=["lookup"])
    await g.handle(envelope("handshake/hello", {{
        "acs_versions_supported": ["0.1.0"], "methods_implemented": [
            "steps/sessionStart", "steps/toolCallRequest"],
        "transports_supported": ["http"], "provenance_producer": "none"}}))
    await g.handle(envelope("steps/sessionStart", {{}}))
    start = time.perf_counter()
    for _ in range(runs):
        answer = await g.handle(envelope("steps/toolCallRequest", CALL))
        assert answer["result"]["decision"] == "allow", answer
    return time.perf_counter() - start

async def gateway():
    gw = Gateway([lookup], policy=AllowAll(), client="bench", store=open_store(store_url))
    start = time.perf_counter()
    for _ in range(runs):
        result = await gw.call("lookup", {{"id": "c-1"}})
        assert result.status == "ok", result
    return time.perf_counter() - start

async def observed():  # Gateway.call of the tool as the Guardian declares it (ObservedTool)
    from tether.serve.acs.dispositions import OBSERVED_META, ObservedTool, handed_off, handing_off
    gw = Gateway([ObservedTool("lookup", OBSERVED_META)], policy=AllowAll(), client="bench",
                 store=open_store(store_url))
    start = time.perf_counter()
    for _ in range(runs):
        _, token = handing_off("lookup")
        try:
            result = await gw.call("lookup", {{"id": "c-1"}})
        finally:
            handed_off(token)
        assert result.status == "ok", result
    return time.perf_counter() - start

async def envelopes():  # what the observed agent's side costs: the requests, signed
    start = time.perf_counter()
    for _ in range(runs):
        envelope("steps/toolCallRequest", CALL)
    return time.perf_counter() - start

print(asyncio.run({{"guardian": guardian, "gateway": gateway, "observed": observed,
                   "envelopes": envelopes}}[variant]()))
"""


def per_call(variant: str, store: str, calls: int) -> float:
    """Instructions one request costs in ``variant`` (the difference of two counted runs)."""
    with tempfile.TemporaryDirectory() as scratch:
        url = store.format(tmp=scratch)
        few = counted(CHILD.format(), variant, "20", url)
    with tempfile.TemporaryDirectory() as scratch:
        url = store.format(tmp=scratch)
        many = counted(CHILD.format(), variant, str(20 + calls), url)
    return (many - few) / calls


def seconds(variant: str, store: str, calls: int) -> float:
    import subprocess

    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run([sys.executable, "-c", CHILD.format(), variant, str(calls),
                               store.format(tmp=scratch)], capture_output=True, text=True,
                              check=True)
    return float(done.stdout.strip().splitlines()[-1]) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=CALLS)
    parser.add_argument("--store", default="sqlite:///{tmp}/b.db",
                        help="memory:// or sqlite:///{tmp}/x.db ({tmp}: a scratch dir)")
    parser.add_argument("--no-valgrind", action="store_true", help="wall time only")
    args = parser.parse_args()
    print(f"store {args.store}, {args.calls} requests")
    if not args.no_valgrind:
        if shutil.which("valgrind") is None:
            raise SystemExit("valgrind is not installed (apt-get install valgrind)")
        guard, gate, agent = (per_call(v, args.store, args.calls)
                              for v in ("guardian", "gateway", "envelopes"))
        served = guard - agent  # the request's signing is the agent's, not the Guardian's
        print(f"  k instructions a call: Guardian {served / 1000:.1f} (the agent's signed "
              f"request, {agent / 1000:.1f}, taken out), Gateway.call alone {gate / 1000:.1f}; "
              f"the Guardian's own {(served - gate) / 1000:.1f} ({served / gate:.2f}x)")
        alike = per_call("observed", args.store, args.calls)
        print(f"  Gateway.call of the tool as the Guardian declares it (side effect, egress, "
              f"untrusted output) {alike / 1000:.1f}; the Guardian beyond it "
              f"{(served - alike) / 1000:.1f} ({served / alike:.2f}x)")
    guard_s, gate_s, agent_s = (seconds(v, args.store, args.calls)
                                for v in ("guardian", "gateway", "envelopes"))
    served_s = guard_s - agent_s
    print(f"  wall time a call, one run on this machine: Guardian {served_s * 1e3:.2f} ms, "
          f"Gateway.call {gate_s * 1e3:.2f} ms ({served_s / gate_s:.2f}x)")


if __name__ == "__main__":
    main()
