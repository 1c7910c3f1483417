"""Apply the conformance suite's own later fixes to its fake authorization server, in the pinned
0.1.13 bundle: ``python tests/conformance_patch.py`` (run by ``make mcp-deps``).

Why: 0.1.13 is the newest release of ``@modelcontextprotocol/conformance`` that runs on Node 20
(later ones need Node 22's ``fs.globSync``), and its fake authorization server publishes an
``issuer`` that RFC 8414 §3.3 forbids a client to accept in three client scenarios: without the
``/tenant1`` path it is served under (``auth/metadata-var2``, ``-var3``), and with the ``/oauth``
prefix of its endpoints although its metadata is served at the root
(``auth/2025-03-26-oauth-metadata-backcompat``). tether's client (the ``mcp`` SDK's issuer check)
rightly refuses all three. Upstream fixed the first in commit 50c3cf1 (released in 0.1.15) and
the consequence for the third in af64895; this applies exactly those two changes: the issuer is
the authorization server's base URL plus its route prefix, except in the one scenario whose
metadata lives at the root (the only one with the ``/oauth`` prefix), where it is the bare origin.

Decision: the bundle is minified, so the patch is one exact replacement that must match once; a
bundle that does not match (another version) fails loudly instead of running unpatched, and an
already patched bundle is left as it is.
"""

from __future__ import annotations

import sys
from pathlib import Path

BUNDLE = (Path(__file__).resolve().parent / "mcp" / "node_modules" / "@modelcontextprotocol" /
          "conformance" / "dist" / "index.js")
ORIGINAL = "let a={issuer:t(),authorization_endpoint:"
FIXED = "let a={issuer:o===`/oauth`?t():`${t()}${o}`,authorization_endpoint:"


def is_patched(bundle: Path = BUNDLE) -> bool:
    return FIXED in bundle.read_text(encoding="utf-8")


def patch(bundle: Path = BUNDLE) -> str:
    text = bundle.read_text(encoding="utf-8")
    if FIXED in text:
        return "already patched"
    if text.count(ORIGINAL) != 1 or "routePrefix:o=``" not in text:
        raise SystemExit(f"{bundle} is not the conformance 0.1.13 bundle this patch was written "
                         "for; pin 0.1.13 in tests/mcp/package.json (npm ci) or revisit the "
                         "patch")
    bundle.write_text(text.replace(ORIGINAL, FIXED), encoding="utf-8")
    return "patched"


if __name__ == "__main__":
    print(f"conformance suite: {patch(Path(sys.argv[1]) if len(sys.argv) > 1 else BUNDLE)} "
          "(upstream fixes 50c3cf1 and af64895)")
