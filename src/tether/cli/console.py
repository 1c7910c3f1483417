"""``tether console``: serve the web console over a store until Ctrl-C.

Why: approvers, operators and auditors need a page, not a terminal (``tether.web``). The command
is the console's only door: it opens the store, reads the approval rules, binds the address
(127.0.0.1 by default), prints the URL and — with ``--auth link``, the default — a one-time
login link for the person who started it, and serves until interrupted.

Decision: the port is bound here, before the server starts, so ``--port 0`` prints the port the
system picked; uvicorn's access log is off (the login link's token is in a URL, and nothing
secret is ever logged); ``--auth none`` is refused off loopback (``tether.web.Console``).
Ctrl-C ends the live streams first, so the shutdown never waits on an open page.

Exit codes: 0 stopped by Ctrl-C or SIGTERM; 2 the console could not start (bad usage, no store,
unreadable rules, an address it cannot bind, the ``web`` extra missing).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import getpass
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

from tether.cli.common import EXIT_OK, EXIT_USAGE, add_store_option, error, open_existing
from tether.errors import InvalidArgument, Unreachable, install_command

DEFAULT_PORT = 8642


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "console", help="serve the web console (approvals inbox, sessions)",
        description="Serve the web console over a store: the approvals inbox, the sessions and "
        "their timelines, live. Prints its URL and, with --auth link, a one-time login link.")
    add_store_option(parser)
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address to listen on (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"the port (default: {DEFAULT_PORT}; 0: any free one, printed)")
    parser.add_argument("--auth", default="link", metavar="link|header:NAME|none",
                        help="link: a one-time login link printed at start (default); "
                        "header:NAME: the user a reverse proxy names in header NAME, trusted "
                        "only from --proxy addresses; none: everyone is an unauthenticated "
                        "operator (loopback only)")
    parser.add_argument("--proxy", metavar="ADDR", action="append", default=[],
                        help="an address whose --auth header is trusted (repeatable; default: "
                        "127.0.0.1 and ::1)")
    parser.add_argument("--rules", metavar="FILE",
                        help="approval rules (YAML): people, self_approval, approve, break_glass")
    parser.add_argument("--reports", metavar="DIR", action="append", default=[],
                        help="a directory of evaluation reports to list (repeatable)")
    parser.set_defaults(run=run_console)


def run_console(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from tether.web import Console, create_app
    except ImportError as exc:
        error(f"the console needs the web extra ({exc}); install it with: "
              f"{install_command('web')}")
        return EXIT_USAGE
    from tether.runtime.approvals.rules import ApprovalRules

    try:
        rules = ApprovalRules.load(args.rules) if args.rules else ApprovalRules()
    except InvalidArgument as exc:
        error(str(exc))
        return EXIT_USAGE
    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    try:
        console = Console(store, rules, args.auth, operator=getpass.getuser(),
                          reports=tuple(args.reports), host=args.host)
        if args.proxy:
            console = dataclasses.replace(console, proxies=frozenset(args.proxy))
        listening = bind(args.host, args.port)
    except (InvalidArgument, OSError) as exc:
        store.close()
        error(str(exc))
        return EXIT_USAGE
    app = create_app(console)
    server = _server(uvicorn.Config(app, access_log=False, log_level="warning", lifespan="off",
                                    timeout_graceful_shutdown=5), app.state.streams.stop)
    previous = signal.signal(signal.SIGTERM, _stopped)  # before the URL: a stop as soon as it
    # is printed is a clean stop, whether uvicorn's handlers are in place yet or not; Ctrl-C, or
    # SIGTERM (which uvicorn re-raises after shutting down), ends it cleanly
    try:
        with contextlib.suppress(KeyboardInterrupt):
            base = f"http://{url_host(args.host)}:{listening.getsockname()[1]}"
            print(f"tether console: {base}/", flush=True)
            if console.auth == "link":
                print(f"sign in (this link works once): {base}{app.state.logins.link_path()}",
                      flush=True)
            server.run(sockets=[listening])
    finally:
        signal.signal(signal.SIGTERM, previous)
        listening.close()
        store.close()
    print("tether console: stopped", file=sys.stderr, flush=True)
    return EXIT_OK


def _stopped(signum: int, frame: Any) -> None:
    """SIGTERM (re-raised by uvicorn after its graceful shutdown) stops the console the way
    Ctrl-C does, through the same ``finally`` (as ``tether mcp serve`` does)."""
    raise KeyboardInterrupt


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: a free port); Unreachable (an OSError)
    saying what to do."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host.strip("[]"), port))
        listening.listen(128)
    except OSError as exc:
        listening.close()
        raise Unreachable(f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick "
                          "another --port (0: any free one) or --host") from None
    listening.set_inheritable(True)
    return listening


def url_host(host: str) -> str:
    return f"[{host.strip('[]')}]" if ":" in host else host


def _server(config: Any, stopping: Callable[[], None]) -> Any:
    """uvicorn's server, ending the console's live streams (``stopping``) when asked to stop."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            stopping()
            super().handle_exit(sig, frame)

    return Server(config)
