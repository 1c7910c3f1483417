"""No two files of tether import each other, even through others, even inside a function or
under ``TYPE_CHECKING``, outside an argued allow-list; and the floors contract keeps no debts.

Why: a circle between files means neither can be read, tested or moved without the other, and
an import hidden inside a function to break one at runtime only hides it. The graph is
import-linter's own (``grimp``), the one the floors contract (pyproject ``[tool.importlinter]``)
is checked on; a circle is a strongly connected set of modules.

Allowed, and why — one circle, and only in type names:

- ``tether.runtime.lifecycle``'s recipe and session: an ``Agent`` makes ``Session``s (a
  function-level import in ``Agent.session``), and the modules the session was split into
  (``opening``, ``planning``, ``stored``, ``wiring``, and the recipe's ``fingerprint``) name the
  ``Agent`` and the ``Session`` they are given, under ``TYPE_CHECKING`` only. At run time the
  lifecycle imports downward only (``test_no_circle_at_run_time``); the type names stay until the
  recipe is a record of its own that the session can name without the class that makes sessions.

A circle not listed fails; a listed one that no longer exists fails too, so the list shrinks.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = (
    frozenset({"tether.runtime.lifecycle.agent", "tether.runtime.lifecycle.fingerprint",
               "tether.runtime.lifecycle.opening", "tether.runtime.lifecycle.planning",
               "tether.runtime.lifecycle.session", "tether.runtime.lifecycle.stored",
               "tether.runtime.lifecycle.wiring"}),
)


def circles(graph: grimp.ImportGraph) -> list[frozenset[str]]:
    """The graph's strongly connected sets of more than one module (Tarjan's algorithm)."""
    imports = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in imports[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.add(top)
                if top == module:
                    break
            if len(group) > 1:
                found.append(frozenset(group))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for module in sorted(imports):
            if module not in index:
                visit(module)
    finally:
        sys.setrecursionlimit(limit)
    return found


@pytest.fixture(scope="module")
def found() -> list[frozenset[str]]:
    return circles(grimp.build_graph("tether", cache_dir=None))


def test_no_import_circle_between_files_outside_the_allowed(found: list[frozenset[str]]) -> None:
    unargued = [sorted(c) for c in found if not any(c <= allowed for allowed in ALLOWED)]
    assert unargued == [], ("these modules import each other; move what they share into a "
                            f"module both import (not an import inside a function): {unargued}")


def test_no_circle_at_run_time() -> None:
    """Without the type-only imports, no two files of tether import each other at all: the
    allowed circle is names for mypy, not an order of import or a call."""
    graph = grimp.build_graph("tether", exclude_type_checking_imports=True, cache_dir=None)
    assert circles(graph) == []


def test_every_allowed_circle_still_exists(found: list[frozenset[str]]) -> None:
    stale = [sorted(a) for a in ALLOWED if not any(c & a for c in found)]
    assert stale == [], f"no longer a circle: remove it from ALLOWED: {stale}"


def test_the_floors_contract_keeps_no_exceptions() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"]
                   if c.get("containers") == ["tether"]]
    assert contract["type"] == "layers"
    assert not contract.get("ignore_imports"), "the floors are kept with no ignored import"
    floors = [name.strip() for layer in contract["layers"]
              for name in layer.replace(":", "|").split("|")]
    assert {"serve", "integrations", "durable", "observe", "mcp", "secret"} <= set(floors)


def test_the_finder_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")
    assert circles(graph) == [frozenset({"p.a", "p.b", "p.c"})]
