"""``tether witness``: run a witness that cosigns an operator's checkpoints (``serve.witness``).

Why a command: the witness's point is to be a separate process — better, a separate host and
person — holding a key and a state file the operator cannot reach; a command is how it runs.

Decision: it serves until SIGTERM or Ctrl-C (a clean shutdown: the state file is only ever
replaced whole), prints the address it listens on (``--port 0`` picks a free one) and refuses a
private key others may read, as ``tether audit checkpoint`` does.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from typing import Any

from tether.cli.common import EXIT_OK, EXIT_USAGE, error


def register(commands: Any) -> None:
    witness: argparse.ArgumentParser = commands.add_parser(
        "witness", help="cosign an operator's checkpoints, refusing any that rolls back",
        description="Serve a witness over HTTP: it cosigns (C2SP tlog-cosignature) a checkpoint "
        "signed by --log-key only if it extends the last one it cosigned for that origin, and "
        "keeps that one in --state. Give its URL to `tether audit checkpoint --witness` and "
        "`tether audit verify --witness`.")
    witness.add_argument("--key", required=True, metavar="FILE",
                         help="the witness's private key (`tether audit keygen --witness`)")
    witness.add_argument("--log-key", required=True, metavar="FILE",
                         help="the operator's public key whose checkpoints it cosigns")
    witness.add_argument("--state", required=True, metavar="FILE",
                         help="where it keeps the newest checkpoint it cosigned (JSON)")
    witness.add_argument("--host", default="127.0.0.1", help="address to bind (default "
                         "127.0.0.1)")
    witness.add_argument("--port", type=int, default=7380, help="port (0: any free one)")
    witness.set_defaults(run=run_witness)


def run_witness(args: argparse.Namespace) -> int:
    from tether.journal.note import KeyFileError, read_private, read_public
    from tether.serve.witness import Witness, serve

    try:
        witness = Witness(read_private(args.key), read_public(args.log_key), args.state)
    except KeyFileError as exc:
        error(str(exc))
        return EXIT_USAGE
    try:
        server = serve(witness, args.host, args.port)
    except OSError as exc:
        error(f"cannot listen on {args.host}:{args.port} ({exc.strerror or exc})")
        return EXIT_USAGE
    stop = threading.Thread(target=server.shutdown, daemon=True)
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.start())
    host, port = args.host, server.server_address[1]
    print(f"witness {witness.key.name} listening on http://{host}:{port}", flush=True)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    finally:
        server.server_close()
        signal.signal(signal.SIGTERM, previous)
    return EXIT_OK
