"""A worker that opens a store the instant its parent says so: for the tests of workers that
start together (``test_store_open_together``).

``python tests/store_open_app.py URL SESSION_ID`` imports everything, then blocks reading its
stdin; the parent releases every child at once by closing the pipe they all read. It opens the
store (creating and migrating it if it is new), appends one session's start, reads it back,
closes, and prints ``ok``; any exception is printed as ``TypeName: message`` with exit code 1.
"""

from __future__ import annotations

import sys

from tether.journal.chain import Journal
from tether.store.opening import open_store

if __name__ == "__main__":
    url, session_id = sys.argv[1:3]
    print("ready", flush=True)
    sys.stdin.buffer.read()  # the barrier: returns when the parent closes the pipe (EOF)
    try:
        store = open_store(url)
        try:
            journal = Journal(session_id, store=store)
            journal.append("session.start", {"agent": "worker", "subject": {}})
            journal.flush()
            assert len(store.read(session_id)) == 1
        finally:
            store.close()
    except Exception as exc:  # reported to the parent, which fails the test with it
        print(f"{type(exc).__name__}: {exc}", flush=True)
        sys.exit(1)
    print("ok", flush=True)
