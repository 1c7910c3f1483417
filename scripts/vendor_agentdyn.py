"""Rebuild tether's vendored copy of AgentDyn's three suites from a checkout of the fork.

Why a script: the copy under ``src/tether/evals/agentdojo/agentdyn/_vendor`` must stay a
mechanical, reviewable function of AgentDyn's source (its SOURCE.md lists every change), so a
new AgentDyn commit is taken by running this again and reading the diff, never by hand edits.

Usage: ``python scripts/vendor_agentdyn.py AGENTDYN_CHECKOUT`` (a work tree or a
``git archive`` of leolee99/AgentDyn). It copies the shopping, github and dailylife suites, the
nine tool modules they add and their data (without the stray, unused
``shopping/environment——.yaml``); rewrites their ``agentdojo.default_suites.v1`` imports to the
vendored package; replaces ``tools/types.py`` with the installed agentdojo's types plus the six
classes AgentDyn adds (so ``Email`` and ``CalendarEvent`` stay the classes agentdojo's own
clients use); and drops ``tools/utils.py``'s circular import of the shopping suite (it is
unused there, and breaks whenever github or dailylife is imported first).
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

PACKAGE = "tether.evals.agentdojo.agentdyn._vendor"
DEST = Path(__file__).resolve().parent.parent / "src/tether/evals/agentdojo/agentdyn/_vendor"
SUITES = ("shopping", "github", "dailylife")
TOOLS = ("dynamic_banking_client", "dynamic_calendar_client", "dynamic_email_client",
         "dynamic_web_client", "file_client", "github_client", "shopping_client",
         "tool_registry", "utils")
HEADER = "# Vendored from AgentDyn (MIT, see LICENSE and SOURCE.md beside it); do not edit.\n"


def main(checkout: Path) -> None:
    src = checkout / "src/agentdojo"
    v1 = src / "default_suites/v1"
    kept = (DEST / "SOURCE.md").read_text(encoding="utf-8") if DEST.exists() else None
    if DEST.exists():
        shutil.rmtree(DEST)
    (DEST / "tools").mkdir(parents=True)
    for suite in SUITES:
        shutil.copytree(v1 / suite, DEST / suite, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(src / "data/suites" / suite, DEST / "data" / suite,
                        ignore=shutil.ignore_patterns("environment——.yaml"))
    for tool in TOOLS:
        shutil.copy(v1 / "tools" / f"{tool}.py", DEST / "tools" / f"{tool}.py")
    shutil.copy(checkout / "LICENSE", DEST / "LICENSE")
    for path in DEST.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"agentdojo\.default_suites\.v1\.tools\.(types|dynamic_\w+|file_client|"
                      r"github_client|shopping_client|tool_registry|utils)\b",
                      rf"{PACKAGE}.tools.\1", text)
        text = re.sub(r"agentdojo\.default_suites\.v1\.(shopping|github|dailylife)\b",
                      rf"{PACKAGE}.\1", text)
        if path.name == "utils.py" and path.parent.name == "tools":
            text = "\n".join(line for line in text.splitlines() if not line.startswith((
                f"from {PACKAGE}.shopping.task_suite import", "ShoppingUserTask = ",
                "from agentdojo.base_tasks import BaseUserTask"))) + "\n"
        path.write_text(HEADER + text, encoding="utf-8")
    # after the rewrite: the shim imports the installed agentdojo's own types
    types = (v1 / "tools/types.py").read_text(encoding="utf-8")
    added = types[types.index("class Permissions"):types.index("class SharingPermission")]
    (DEST / "tools/types.py").write_text(HEADER +
        "from agentdojo.default_suites.v1.tools.types import *  # noqa: F403\n"
        "from agentdojo.default_suites.v1.tools.types import CalendarEvent, CalendarEventID, "
        "CloudDriveFileID, Email, EmailID, EmailStatus, EvenStatus  # noqa: F401\n"
        "from typing import Any, Dict, Literal, Union\n"
        "from pydantic import BaseModel, Field\n\n" + added, encoding="utf-8")
    for folder in (DEST, DEST / "tools"):
        if not (folder / "__init__.py").exists():
            (folder / "__init__.py").write_text(HEADER, encoding="utf-8")
    if kept is not None:  # tether's own record of the copy
        (DEST / "SOURCE.md").write_text(kept, encoding="utf-8")
    print(f"vendored {', '.join(SUITES)} into {DEST}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
