"""``tether audit trust``: which tools declared trusted carried text a third party wrote.

Why: see ``tether.journal.views.trust`` — every containment rule rests on ``output_trust``
declarations, and this checks them against recorded tool results, by canaries planted where
third parties write. Exit codes: 0 no tool declared trusted carried a canary; 1 one did (the
finding names it); 2 the command could not run (no canary, no store).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tether.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    EXIT_USAGE,
    add_store_option,
    add_tenant_option,
    error,
    open_existing,
    parse_time,
)


def add(sub: Any) -> None:
    trust = sub.add_parser(
        "trust", help="find tools declared trusted that carried third-party text",
        description="Look for canaries — unique strings you planted where third parties write "
        "(an e-mail to yourself, a channel name, a shared file) — in every recorded tool "
        "result, and report each tool that carried one; a tool declared trusted that did is a "
        "finding (exit 1). For AgentDojo's suites, `tether eval agentdojo --trust-probe` plants "
        "the canaries and runs the sessions itself.")
    trust.add_argument("--canary", action="append", required=True, metavar="TEXT",
                       help="a planted string (repeat for several)")
    trust.add_argument("--since", metavar="WHEN", type=parse_time,
                       help="only sessions written since: 7d, 12h, 2025-01-31, ...")
    trust.add_argument("--json", action="store_true", help="print a JSON array")
    add_store_option(trust)
    add_tenant_option(trust)
    trust.set_defaults(run=run_trust)


def run_trust(args: argparse.Namespace) -> int:
    from tether.cli.audit_reading import read_sessions
    from tether.journal.views.trust import carriers, render

    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    try:
        found = carriers(read_sessions(store, args.tenant, args.since), args.canary)
    except ValueError as exc:
        error(str(exc))
        return EXIT_USAGE
    finally:
        store.close()
    print(json.dumps([c.to_dict() for c in found]) if args.json else render(found))
    return EXIT_FINDING if any(c.finding for c in found) else EXIT_OK
