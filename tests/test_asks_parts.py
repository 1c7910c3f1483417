"""A tool's asks are split by concern, and every ask passes the shared bounds first.

``chokepoint/asks.py`` is the one module the rest of tether imports asks from; the shared record
(``ask_ledger.py``), sampling (``sampling.py``) and questions (``elicitation.py``) are its parts.
Every ask of ``CallAsks`` is counted (``admit``: at most ``MAX_ASKS`` of a kind) and taken in
turn (``serial``) before its part makes it: an ask that skipped either would let a server flood
the journal or interleave its asks.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

import tether
from tether.runtime.chokepoint.asks import CallAsks

SOURCE = Path(tether.__file__).parent
CHOKEPOINT = SOURCE / "runtime" / "chokepoint"
PARTS = {f"tether.runtime.chokepoint.{m}" for m in ("ask_ledger", "sampling", "elicitation")}


def test_outside_the_chokepoint_asks_are_imported_from_asks_alone() -> None:
    offences = []
    for path in sorted(SOURCE.rglob("*.py")):
        if path.parent == CHOKEPOINT:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                a.name for a in node.names] if isinstance(node, ast.Import) else []
            offences += [f"{path.relative_to(SOURCE)}:{node.lineno} imports {name}"
                         for name in names if name in PARTS]
    assert offences == []


def test_every_ask_is_admitted_and_taken_in_turn_before_it_is_made() -> None:
    asks = [name for name, fn in vars(CallAsks).items()
            if inspect.iscoroutinefunction(fn) and not name.startswith("_")]
    assert sorted(asks) == ["elicit", "relay_elicit", "relay_sample", "sample"]
    for name in asks:
        (method,) = ast.parse(textwrap.dedent(inspect.getsource(getattr(CallAsks, name)))).body
        assert isinstance(method, ast.AsyncFunctionDef)
        body = [s for s in method.body
                if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        assert len(body) >= 2, name
        first, then = body[0], body[1]
        assert isinstance(first, ast.Expr) and ast.unparse(first.value).startswith(
            "self.admit("), name
        assert isinstance(then, ast.AsyncWith) and ast.unparse(
            then.items[0].context_expr) == "self.serial()", name
