"""``python -m tether.durable.worker``: one fleet worker, serving its queue until SIGTERM.

Why: a fleet is run as N copies of one command (processes, containers, pods), each building its
own Agent from the factory it names and draining the shared queue. The executor id must be
stable across restarts of the same worker (a pod's ordinal, a systemd instance name): DBOS
recovers the sessions a dead worker left unfinished when a worker with its id starts again. It
must also be distinct: a worker starting under a live worker's id hands that worker's running
sessions back to the queue (harmless — each second activation waits for the session's lease and
runs nothing twice — but wasted work).

Decision: SIGTERM or SIGINT stops taking sessions and gives the running ones ``--grace``
seconds, then the process leaves at once: a session still running is a crashed one to DBOS,
taken up again from its journal by the next worker under this executor id (exactly as after
``kill -9``, which is safe by construction). It prints ``ready <executor id>`` once serving.

Exit codes: 0 stopped by a signal, 2 the worker could not start (bad factory, no database).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence


def add_options(p: argparse.ArgumentParser) -> None:
    """The worker's options (also ``tether fleet worker``'s)."""
    p.add_argument("--agent", required=True, help="the agent factory, found as `tether run` "
                   "finds a recipe: package.module:function (from the current directory) or "
                   "path/to/file.py:function")
    p.add_argument("--db", required=True, help="DBOS's system database URL "
                   "(postgresql://... or sqlite:///path)")
    p.add_argument("--executor-id", default=os.environ.get("DBOS__VMID") or socket.gethostname(),
                   help="this worker's stable name; a restarted worker recovers its sessions "
                   "(default: $DBOS__VMID, else the host name)")
    p.add_argument("--queue", default="tether", help="the queue to serve (default: tether)")
    p.add_argument("--concurrency", type=int, default=8,
                   help="sessions this worker runs at once (default: 8)")
    p.add_argument("--grace", type=int, default=0,
                   help="seconds running sessions get on SIGTERM (default: 0)")
    p.add_argument("--poll", type=float, default=1.0,
                   help="seconds between two looks at the queue (default: 1)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tether.durable.worker",
                                description="Serve a tether fleet's queue (sessions as DBOS "
                                "workflows) until SIGTERM.")
    add_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM or SIGINT; the exit code."""
    from tether.durable.dbos import serve

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        serve(args.agent, args.db, executor_id=args.executor_id, queue=args.queue,
              concurrency=args.concurrency, stop=stop, grace=args.grace, poll=args.poll,
              ready=lambda: print(f"ready {args.executor_id}", flush=True))
    except (ValueError, TypeError) as exc:
        print(f"tether fleet worker: {exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(parser().parse_args(argv))


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # running sessions are DBOS's to recover; their threads are not waited for
