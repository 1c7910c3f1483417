"""``tether tools show``: what each tool declares, after a reviewed overlay, and who said so.

Why: a policy decides on declarations, so the person who reviews a policy must see them as the
runtime will — a tool's own metadata with the overlay (``tools.yaml``) applied — and where each
came from. Exit codes: 0 shown; 2 the command could not run (bad usage, tools that cannot be
loaded, an overlay that does not load or does not fit the tools).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tether.cli.common import EXIT_OK, EXIT_USAGE, error, usage


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "tools", help="show tools' declared metadata",
        description="Show what tools declare (side effects, egress, output trust, risk, tags, "
        "parties, intents, trusted fields), with a tools overlay applied.")
    parser.set_defaults(run=lambda _args: usage(parser))
    sub = parser.add_subparsers(title="tools commands", metavar="COMMAND")
    show = sub.add_parser("show", help="the tools and their metadata")
    show.add_argument("--tools", required=True, metavar="MODULE:TOOLS",
                      help="a list of tools, an object with a 'tools' attribute (an Agent) or "
                      "a function returning one")
    show.add_argument("--overlay", metavar="FILE", help="a tools overlay (tools.yaml)")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(run=run_show)


def run_show(args: argparse.Namespace) -> int:
    from tether.cli.mcp import load_tools
    from tether.cli.recipe import RecipeError
    from tether.policy.overlay import OverlayError, load_overlay

    try:
        tools, _policy = load_tools(args.tools)
        if args.overlay:
            tools = list(load_overlay(args.overlay).apply(tools))
    except (RecipeError, OverlayError) as exc:
        error(str(exc))
        return EXIT_USAGE
    rows = []
    for tool in tools:
        meta = tool.meta.to_dict()
        meta["parties"] = sorted(tool.meta.parties)
        meta["intents"] = sorted(tool.meta.intents)
        meta["trusted_fields"] = sorted(tool.meta.trusted_fields)
        rows.append({"name": tool.name, **meta,
                     "declared_by": list(getattr(tool, "source", ())) or ["code"]})
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    for row in rows:
        flags = [k for k in ("side_effect", "egress", "idempotent") if row[k]]
        fields = f"; trusted fields {row['trusted_fields']}" if row["trusted_fields"] else ""
        print(f"{row['name']}: {', '.join(flags) or 'no side effect, no egress'}; output "
              f"{row['output_trust']}; risk {row['risk']}; tags {row['tags'] or '-'}; parties "
              f"{row['parties'] or '-'}; intents {row['intents'] or '-'}{fields}  "
              f"(declared by {'; '.join(row['declared_by'])})")
    return EXIT_OK
