"""Every timeline renderer reads its event's data through a payload TypedDict (issue 46 part 5).

Why: the mypy plugin (tests/mypy_payloads.py) only checks a ``d.get("field")`` whose ``d`` is
typed with a TypedDict of ``tether.journal.payloads``; a renderer annotated ``Mapping[str, Any]``
is read unchecked, and mypy says nothing. A merge once lost these annotations silently, so this
AST test reads each ``*_RENDER`` table under ``journal/views`` and fails when a renderer it
names (a function, not a factory's call) takes anything but a payload type.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tether.journal.payloads as payloads

VIEWS = Path(__file__).parent.parent / "src" / "tether" / "journal" / "views"
PAYLOADS = {name for name in vars(payloads) if name.endswith("Data")}


def _untyped_renderers(tree: ast.Module) -> list[str]:
    defs = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    found: list[str] = []
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if not (isinstance(target, ast.Name) and target.id.endswith("_RENDER")
                and isinstance(node.value, ast.Dict)):
            continue
        for key, value in zip(node.value.keys, node.value.values, strict=True):
            if key is None or not isinstance(value, ast.Name):  # **ANOTHER_RENDER, a factory
                continue
            first = defs[value.id].args.args[0].annotation
            names = {n.id for n in ast.walk(first) if isinstance(n, ast.Name)} if first else set()
            if not names or not names <= PAYLOADS:
                found.append(f"{target.id}: {value.id}({ast.unparse(first) if first else ''})")
    return found


def test_every_renderer_takes_its_payload_type() -> None:
    tables = 0
    problems: list[str] = []
    for path in sorted(VIEWS.glob("*.py")):
        tree = ast.parse(path.read_text())
        tables += sum(1 for n in tree.body if isinstance(n, ast.AnnAssign)
                      and isinstance(n.target, ast.Name) and n.target.id.endswith("_RENDER"))
        problems += [f"{path.name}: {p}" for p in _untyped_renderers(tree)]
    assert tables >= 6, "the render tables moved: point this test at them"
    assert not problems, "renderers read event data unchecked:\n" + "\n".join(problems)


def test_an_untyped_renderer_is_found() -> None:
    tree = ast.parse("def _f(d: Mapping[str, Any]) -> list[str]: ...\n"
                     "def _g(d: ToolResultData) -> list[str]: ...\n"
                     "X_RENDER: dict[str, R] = {'a': _f, 'b': _g, 'c': make('x')}\n")
    assert _untyped_renderers(tree) == ["X_RENDER: _f(Mapping[str, Any])"]
