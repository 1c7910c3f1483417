"""Code vendored from elsewhere inside the package, kept byte-comparable with its upstream.

The tests that walk tether's own modules for house rules (module size, tether's error classes)
skip exactly these directories; each holds a LICENSE and a SOURCE.md saying where it came from
and what was changed. Nothing else may be listed here.
"""

from __future__ import annotations

from pathlib import Path

from doc_pages import ROOT

VENDORED = (ROOT / "src/tether/evals/agentdojo/agentdyn/_vendor",)  # AgentDyn's suites


def vendored(path: Path) -> bool:
    """Whether ``path`` is in a vendored directory."""
    return any(path.resolve().is_relative_to(folder) for folder in VENDORED)
