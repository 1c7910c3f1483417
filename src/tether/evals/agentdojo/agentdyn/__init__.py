"""AgentDyn's three suites (shopping, github, dailylife), run by the AgentDojo harness.

Why: AgentDyn (Li et al., arXiv 2602.03117) extends AgentDojo with open-ended tasks where the
user *delegates* to third-party data — do what Alice's e-mail asks, pay the bill in this file —
and where platforms answer the agent's own calls through the user's mailbox (one-time passwords,
invoices, invitation links). That is the hard case for a provenance policy, so tether measures
it with the same harness, model and checkers as AgentDojo's suites.

Decisions: AgentDyn is a fork of the ``agentdojo`` package itself (same name and version) and is
not on PyPI, so its suites are vendored under ``_vendor`` (MIT; ``_vendor/SOURCE.md`` lists
every change, ``scripts/vendor_agentdyn.py`` rebuilds it) beside the installed agentdojo, whose
core they use unchanged. The suites are found by an import (``suite``), not registered at run
time: the benchmark's worker processes look them up afresh. AgentDyn has no benchmark versions;
the harness's ``version`` is ignored for these names and reported as ``VERSION``.
"""

from __future__ import annotations

from importlib import import_module
from importlib.resources import files
from pathlib import Path
from typing import Any

SUITES = ("shopping", "github", "dailylife")
VERSION = "agentdyn@bd3fc6b"  # the AgentDyn commit vendored (_vendor/SOURCE.md)


def suite(name: str) -> Any:
    """AgentDyn's suite ``name`` (one of ``SUITES``), reading its data from the vendored copy."""
    found: Any = getattr(import_module(f"{__name__}._vendor.{name}"), f"{name}_task_suite")
    found.data_path = Path(str(files(__name__) / "_vendor" / "data" / name))
    return found
