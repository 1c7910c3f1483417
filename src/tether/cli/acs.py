"""``tether acs serve``: tether as an OWASP ACS v0.1.0 Guardian over HTTP on loopback.

Why: an agent built on another framework that speaks ACS asks a Guardian before each step; this
command makes tether that Guardian, with the policy, approvals and journal of any tether run.

Decision: the deployment secret (base64, at least 16 bytes) is read from ``TETHER_ACS_SECRET``,
never from an option (an option is in ``ps`` output). The tools the Guardian knows are those the
policy names and those ``--tools`` (an overlay file) declares, with the overlay's metadata; any
other tool is refused. Exit codes: 0 stopped by a signal; 2 it could not start (no secret, a
policy, tools file or approver that does not load, a store that does not open, a port in use).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import os
import sys
from typing import Any

from tether.cli.common import EXIT_OK, EXIT_USAGE, STORE_HELP, error, note, usage

SECRET_ENV = "TETHER_ACS_SECRET"


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "acs", help="be an OWASP ACS Guardian for another framework's agent",
        description="Answer an observed agent's ACS v0.1.0 hooks with tether's policy, "
        "approvals and journal (the agent runs its tools; tether decides them).")
    parser.set_defaults(run=lambda _args: usage(parser))
    sub = parser.add_subparsers(title="acs commands", metavar="COMMAND")
    serve = sub.add_parser(
        "serve", help="serve the Guardian over HTTP (POST /acs)",
        description=f"Serve an ACS Guardian at http://HOST:PORT/acs. The deployment secret "
        f"(base64) is read from ${SECRET_ENV}; each session's HMAC key is derived from it.")
    serve.add_argument("--policy", metavar="FILE", required=True,
                       help="the YAML policy every tool call is decided by")
    serve.add_argument("--store", metavar="URL", help=STORE_HELP + "; journals, approvals and "
                       "the request ids a restart must remember")
    serve.add_argument("--tools", metavar="FILE",
                       help="a tools overlay: the observed agent's tools and their metadata "
                       "(default: the tools the policy names, declared cautiously)")
    serve.add_argument("--transport", choices=("http", "stdio"), default="http",
                       help="http (POST /acs, the default) or stdio (Content-Length framed, for "
                       "an agent that spawns its Guardian)")
    serve.add_argument("--host", default="127.0.0.1", help="loopback address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8787, help="port (default 8787; 0: any)")
    serve.add_argument("--skew-ms", type=int, default=300_000,
                       help="how far a request's timestamp may be from this clock (default "
                       "300000)")
    serve.add_argument("--approval-ttl", type=float, default=24 * 3600.0,
                       help="seconds an approval request stays answerable (default 86400)")
    serve.add_argument("--tenant", metavar="ID", help="the tenant the sessions belong to")
    serve.add_argument("--approver", metavar="MODULE:NAME",
                       help="an agent or service approver deciding every approval request at "
                       "once: an Approver, or a function (ApprovalRequest) -> True / False / "
                       "None (None leaves it to a person); any other answer denies (default: "
                       "people, with tether approvals)")
    serve.set_defaults(run=run_serve)


def _secret() -> bytes | None:
    text = os.environ.get(SECRET_ENV)
    if not text:
        error(f"${SECRET_ENV} is not set: export a base64 secret of at least 16 bytes "
              "(openssl rand -base64 32), shared with the observed agent")
        return None
    try:
        secret = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        error(f"${SECRET_ENV} is not base64; export one made with openssl rand -base64 32")
        return None
    if len(secret) < 16:
        error(f"${SECRET_ENV} decodes to {len(secret)} bytes; use at least 16")
        return None
    return secret


def run_serve(args: argparse.Namespace) -> int:
    from tether.cli.common import store_url
    from tether.cli.telemetry import environment_sinks
    from tether.errors import TetherError
    from tether.policy.overlay import load_overlay
    from tether.policy.yaml_policy import load_policy
    from tether.policy.yaml_source import PolicyLoadError
    from tether.references import import_object
    from tether.runtime.approvals.approver import as_approver
    from tether.serve.acs import acs_guardian
    from tether.serve.acs.http import serve_acs
    from tether.serve.acs.stdio import serve_stdio
    from tether.store.base import StoreError
    from tether.store.opening import open_store
    from tether.urls import redact_text, redact_url

    secret = _secret()
    if secret is None:
        return EXIT_USAGE
    try:
        policy = load_policy(args.policy)
        overlay = load_overlay(args.tools) if args.tools else None
        approver = (as_approver(import_object(args.approver, "an approver")) if args.approver
                    else None)
    except (PolicyLoadError, OSError, TetherError) as exc:
        error(f"cannot load: {exc}")
        return EXIT_USAGE
    url = store_url(args.store)
    try:
        store = open_store(url)
    except (StoreError, OSError) as exc:
        error(f"cannot open the store {redact_url(url)}: {redact_text(str(exc), url)}")
        return EXIT_USAGE
    if url.startswith("memory:"):
        note("memory:// keeps journals, approvals and used request ids in this process only: "
             "a restart forgets them, and `tether approvals approve` cannot reach them")
    try:
        guardian = acs_guardian(policy, secret=secret, store=store, overlay=overlay,
                                skew_ms=args.skew_ms, tenant_id=args.tenant,
                                approval_ttl=args.approval_ttl, telemetry=environment_sinks(),
                                approver=approver)
    except PolicyLoadError as exc:
        store.close()
        error(f"cannot apply the tools file: {exc}")
        return EXIT_USAGE

    def ready(at: str) -> None:
        print(f"tether ACS Guardian at {at} (policy {args.policy}, store "
              f"{redact_url(url)})", file=sys.stderr, flush=True)

    try:
        if args.transport == "stdio":
            print(f"tether ACS Guardian on stdio (policy {args.policy}, store "
                  f"{redact_url(url)})", file=sys.stderr, flush=True)
            asyncio.run(serve_stdio(guardian))
        else:
            asyncio.run(serve_acs(guardian, host=args.host, port=args.port, on_ready=ready))
    except (OSError, ValueError) as exc:
        error(f"cannot serve: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:  # Ctrl-C stops serving: the way a foreground Guardian ends
        return EXIT_OK
    finally:
        store.close()
    return EXIT_OK
