"""The chokepoint's tool side is assembled in one place, and ``session.start`` written in one.

A door to a tool assembled by hand is a door that may govern less when the pipeline grows: so
no module but ``tether.runtime.chokepoint.assembly`` builds a ``PolicyGate`` or ``ToolCalls``,
or appends a ``session.start``; and what each caller's start records of its subject is the one
shape ``subject_record`` gives.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tether
from tether import Budget
from tether.policy.base import AllowAll, Subject
from tether.runtime.chokepoint.assembly import subject_record
from tether.vocabulary import EventType

SOURCE = Path(tether.__file__).parent
ASSEMBLY = SOURCE / "runtime" / "chokepoint" / "assembly.py"
# an evaluation's grades journal: a session of records, with no run and no chokepoint behind it
NOT_A_RUN = {SOURCE / "evals" / "grades.py"}


def _offences(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else "")
        if name in ("PolicyGate", "ToolCalls"):
            found.append(f"{path.relative_to(SOURCE)}:{node.lineno} builds {name}")
        first = node.args[0] if node.args else None
        start = (isinstance(first, ast.Constant) and first.value == "session.start") or (
            isinstance(first, ast.Attribute) and first.attr == EventType.SESSION_START.name)
        if name == "append" and start:
            found.append(f"{path.relative_to(SOURCE)}:{node.lineno} appends session.start")
    return found


def test_only_the_assembly_builds_the_chokepoint_or_writes_a_start() -> None:
    offences = [o for path in sorted(SOURCE.rglob("*.py"))
                if path != ASSEMBLY and path not in NOT_A_RUN for o in _offences(path)]
    assert offences == []
    assert {o.split(" ", 1)[1] for o in _offences(ASSEMBLY)} == {
        "builds PolicyGate", "builds ToolCalls", "appends session.start"}


@pytest.mark.parametrize("roles", [(), ("b", "a")])
def test_every_caller_records_its_subject_alike(roles: tuple[str, ...]) -> None:
    from tether.integrations.governed import GovernedRun
    from tether.runtime.chokepoint.gateway import Gateway

    subject = Subject("ann", "t1", frozenset(roles), "x")
    gateway = Gateway([], policy=AllowAll(), client="ann", tenant_id="t1", roles=roles,
                      budget=Budget(max_tool_calls=1))
    run = GovernedRun([], policy=AllowAll(), request="r", user="ann", tenant_id="t1",
                      roles=roles)
    for journal in (gateway.journal, run.journal):
        (start,) = [e for e in journal.events() if e.type == "session.start"]
        assert start.data["subject"] == subject_record(subject)
