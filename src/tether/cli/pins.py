"""``tether mcp pins list|show|diff|approve --pins FILE``: review and approve MCP tool definitions.

Why: a pinned MCP tool whose definition changed is blocked until a person reviews the change and
approves it — and that person is at a shell, reading a pin file that is committed like a lock
file, not writing Python. These commands are that review: what is pinned and what waits, the
definitions themselves, the change as a diff, and the approval (bound to the fingerprint of the
definition the reviewer saw, so a server that swaps it again in between is refused).

Exit codes: 0 done (``list``: nothing waits); 1 something waits for approval (``list``), or the
tool or its pending change is not there; 2 the command could not run (bad usage, unreadable pin
file).
"""

from __future__ import annotations

import argparse
import difflib
import json
from typing import TYPE_CHECKING, Any

from tether.cli.common import EXIT_FINDING, EXIT_OK, EXIT_USAGE, error, usage

if TYPE_CHECKING:
    from tether.mcp.pins import JSONFilePinStore, Pin


def register(mcp_commands: Any) -> None:
    parser: argparse.ArgumentParser = mcp_commands.add_parser(
        "pins", help="review and approve pinned MCP tool definitions",
        description="Review the MCP tool definitions a pin file holds, and approve changes.")
    parser.set_defaults(run=lambda _args: usage(parser))
    sub = parser.add_subparsers(title="pins commands", metavar="COMMAND")

    def command(name: str, help: str, *, tool: bool) -> argparse.ArgumentParser:
        one = sub.add_parser(name, help=help, description=help)
        one.add_argument("--pins", required=True, metavar="FILE", help="the pin file")
        if tool:
            one.add_argument("server", metavar="SERVER", help="the MCP server's name")
            one.add_argument("tool", metavar="TOOL", help="the tool's name on that server")
        return one

    command("list", "every pinned tool, and every change or new tool waiting for approval "
            "(exit 1 if any waits)", tool=False).set_defaults(run=run_list)
    command("show", "a tool's pinned definition, and the one waiting, if any",
            tool=True).set_defaults(run=run_show)
    command("diff", "what changed: the pinned definition against the one waiting",
            tool=True).set_defaults(run=run_diff)
    approve = command("approve", "make the definition waiting the pinned one", tool=True)
    approve.add_argument("--approver", required=True, metavar="NAME", help="who approves")
    approve.add_argument("--fingerprint", metavar="SHA256",
                         help="the fingerprint `show` or `diff` printed for the definition you "
                         "reviewed: refused if the server changed it again since")
    approve.set_defaults(run=run_approve)


def _store(args: argparse.Namespace) -> JSONFilePinStore | None:
    from tether.mcp.errors import MCPError
    from tether.mcp.pins import JSONFilePinStore

    try:
        return JSONFilePinStore(args.pins)
    except MCPError as exc:
        error(str(exc))
        return None


def run_list(args: argparse.Namespace) -> int:
    store = _store(args)
    if store is None:
        return EXIT_USAGE
    entries = store.entries()
    if not entries:
        print(f"no tools pinned in {args.pins}")
        return EXIT_OK
    waiting = 0
    for pinned, pending in entries:
        shown = pinned or pending
        assert shown is not None
        if pending is None:
            state = f"pinned {pinned.fingerprint[7:19] if pinned else ''}"
        else:
            waiting += 1
            state = ("NEW, waits for approval" if pinned is None else
                     "CHANGED, waits for approval") + f" {pending.fingerprint[7:19]}"
        by = f" by {pinned.approved_by}" if pinned and pinned.approved_by else ""
        when = f" ({pinned.pinned_at}{by})" if pinned else ""
        print(f"{shown.server}  {shown.tool}  {state}{when}")
    if waiting:
        print(f"{waiting} waiting: review with `tether mcp pins diff SERVER TOOL --pins "
              f"{args.pins}`, then `tether mcp pins approve ...`")
    return EXIT_FINDING if waiting else EXIT_OK


def _pair(args: argparse.Namespace) -> tuple[Pin | None, Pin | None] | None:
    store = _store(args)
    if store is None:
        return None
    pinned, pending = store.get(args.server, args.tool), store.pending(args.server, args.tool)
    if pinned is None and pending is None:
        error(f"no tool {args.tool!r} of MCP server {args.server!r} in {args.pins}; "
              f"`tether mcp pins list --pins {args.pins}` shows them")
    return pinned, pending


def _text(pin: Pin) -> str:
    return json.dumps(dict(pin.definition), indent=2, sort_keys=True, ensure_ascii=False)


def run_show(args: argparse.Namespace) -> int:
    found = _pair(args)
    if found is None:
        return EXIT_USAGE
    if found == (None, None):
        return EXIT_FINDING
    for label, pin in zip(("pinned", "waiting for approval"), found, strict=True):
        if pin is not None:
            print(f"{label}: {pin.fingerprint}")
            print(_text(pin))
    return EXIT_OK


def run_diff(args: argparse.Namespace) -> int:
    found = _pair(args)
    if found is None:
        return EXIT_USAGE
    pinned, pending = found
    if pending is None:
        if pinned is not None:
            error(f"nothing waits for {args.tool!r}: its pinned definition is current")
        return EXIT_FINDING
    before = _text(pinned).splitlines() if pinned else []
    print("".join(line + "\n" for line in difflib.unified_diff(
        before, _text(pending).splitlines(), lineterm="",
        fromfile=f"pinned {pinned.fingerprint if pinned else '(new tool)'}",
        tofile=f"waiting {pending.fingerprint}")), end="")
    print(f"approve with: tether mcp pins approve {args.server} {args.tool} --pins "
          f"{args.pins} --approver NAME --fingerprint {pending.fingerprint}")
    return EXIT_OK


def run_approve(args: argparse.Namespace) -> int:
    from tether.mcp.errors import PinError

    store = _store(args)
    if store is None:
        return EXIT_USAGE
    try:
        pin = store.approve(args.server, args.tool, approver=args.approver,
                            fingerprint=args.fingerprint)
    except PinError as exc:
        error(str(exc))
        return EXIT_FINDING
    print(f"approved {pin.server} {pin.tool} {pin.fingerprint} by {pin.approved_by}; calls with "
          "this definition run from now on (no restart needed)")
    return EXIT_OK
