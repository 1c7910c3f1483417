"""A tool call reads as one pipeline: the held-call cases live in ``chokepoint/held.py`` alone.

``chokepoint/turn.py`` settles what waits, admits what is new, runs and records; everything about
a call held from an earlier pass (interrupted, approved, decided earlier) and about holding a new
call for a person is ``held.py``'s. So no other runtime module journals an approval request, a
grant, a refusal of an approval or an idempotent re-run, and ``turn.py`` reads none of the
journal's held-call state (what started, what was settled, granted, asked or decided): if a case
creeps back into the pipeline, or a second copy of it appears elsewhere, this fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tether

RUNTIME = Path(tether.__file__).parent / "runtime"
CHOKEPOINT = RUNTIME / "chokepoint"
HELD = CHOKEPOINT / "held.py"
HELD_EVENTS = {"approval.requested", "approval.granted", "approval.refused", "effect.rerun"}
# a gateway attaches a request an earlier try of the same call made (``attach_approval``): the
# request is old, and held.py settles it like any other
ATTACHED = {("chokepoint/gateway.py", "approval.requested")}
HELD_STATE = {"started", "settled", "granted", "approvals", "decisions"}  # of SessionState


def _event(node: ast.expr | None) -> str | None:
    """The event type ``node`` names: a string, or an enumeration member (``APPROVAL_GRANTED``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Attribute):
        return node.attr.lower().replace("_", ".", 1)
    return None


def _journals_held(path: Path) -> list[tuple[str, int, str]]:
    """(module, line, event) for each held-call event ``path`` appends to a journal."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "append" and node.args:
            event = _event(node.args[0])
            if event in HELD_EVENTS:
                found.append((path.relative_to(RUNTIME).as_posix(), node.lineno, event))
    return found


def test_only_held_journals_what_settles_a_held_call() -> None:
    elsewhere = {(module, event) for path in sorted(RUNTIME.rglob("*.py")) if path != HELD
                 for module, _, event in _journals_held(path)}
    assert elsewhere == ATTACHED
    assert {event for _, _, event in _journals_held(HELD)} == HELD_EVENTS


def test_the_pipeline_reads_no_held_state() -> None:
    turn = CHOKEPOINT / "turn.py"
    reads = sorted(f"turn.py:{node.lineno} reads .{node.attr}"
                   for node in ast.walk(ast.parse(turn.read_text(), str(turn)))
                   if isinstance(node, ast.Attribute) and node.attr in HELD_STATE)
    assert reads == []


def test_both_stay_readable() -> None:
    for name in ("turn.py", "held.py"):
        assert len((CHOKEPOINT / name).read_text().splitlines()) < 400, name
