"""The ``tether`` command line: one entry point, one module per command group.

Why: people run agents (``run``), operators check policies, audit journals (``audit``), decide
approvals (``approvals``), continue sessions (``resume``, ``settle``), keep stores tidy
(``store``), list and forget a user's conversations (``memory``), try policy changes on
recorded traffic (``what-if``) and measure reliability
(``eval``, ``metrics``) from a shell and from CI, and serve a page over a store (``console``), so
every command is a plain function of its arguments that returns an exit code: 0 success, 1 the
thing checked is wrong (a policy does not load, a case fails, a hash chain is broken, a request
is unknown or already decided), 2 the command could not run (bad usage, unreadable file, no
store). Each module's docstring lists its own codes. ``main`` never calls ``sys.exit`` itself,
so tests run it in-process; ``python -m tether`` and the ``tether`` script wrap it.

A command group lives in its own module exposing ``register(subparsers)``, which adds its parser
and sets ``run`` to a function ``(argparse.Namespace) -> int``. Groups import what they need
when they run, so ``tether --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys

from tether.cli.acs import register as register_acs
from tether.cli.approvals import register as register_approvals
from tether.cli.audit import register as register_audit
from tether.cli.common import EXIT_FINDING, EXIT_USAGE, AmbiguousId, error, usage
from tether.cli.console import register as register_console
from tether.cli.evals import register as register_evals
from tether.cli.fleet import register as register_fleet
from tether.cli.halt import register as register_halt
from tether.cli.mcp import register as register_mcp
from tether.cli.memory import register as register_memory
from tether.cli.policy import register as register_policy
from tether.cli.prices import register as register_prices
from tether.cli.resume import register as register_resume
from tether.cli.run import register as register_run
from tether.cli.store import register as register_store
from tether.cli.tools import register as register_tools
from tether.cli.whatif import register as register_what_if
from tether.cli.witness import register as register_witness
from tether.store.base import StoreUnavailable


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether", description="tether: a governed runtime for AI agents.")
    parser.add_argument("--version", action="version", version=f"tether {version()}")
    parser.set_defaults(run=lambda _args: usage(parser))
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    register_run(commands)
    register_policy(commands)
    register_audit(commands)
    register_approvals(commands)
    register_resume(commands)
    register_what_if(commands)
    register_store(commands)
    register_mcp(commands)
    register_acs(commands)
    register_prices(commands)
    register_evals(commands)
    register_tools(commands)
    register_memory(commands)
    register_fleet(commands)
    register_halt(commands)
    register_console(commands)
    register_witness(commands)
    return parser


def version() -> str:
    """The installed tether's version (from its package metadata)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("tether")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits for --help (0) and for bad usage (2)
        return exc.code if isinstance(exc.code, int) else 2
    # run as the process's own command line (the script, ``python -m tether``): a command a
    # signal paused then ignores later signals until the process exits (tether.cli.interrupts)
    args.process_exits = argv is None
    try:
        code: int = args.run(args)
    except AmbiguousId as exc:
        error(str(exc))
        return EXIT_USAGE
    except StoreUnavailable as exc:  # a run stopped by its store: the message says how to resume
        error(str(exc))
        return EXIT_FINDING
    except BrokenPipeError:  # the reader went away (`tether audit export | head`): not an error
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (silence the flush at exit)
        return 0
    return code

