"""The Environment's seams stay seams (issue 46 part 3).

- What shapes a turn (compaction, tool selection) is handed to the one ``Environment`` class as
  ``TurnShaper``s: no class of tether subclasses the Environment, and none is built at run
  time with ``type(name, bases, namespace)`` (but the copy of a foreign framework's tool).
- A strategy's doors and the turn shapers reach the Environment only through its public
  protocols (``Seat``, ``TurnSeat``): no module outside ``chokepoint/environment.py`` reads a
  private attribute of another object in ``runtime/strategy`` and ``runtime/context``, nor of
  anything annotated as an Environment anywhere in tether.
- The Environment takes the run's ``RunContext`` (passed once), and a recipe without a shaper
  loads neither shaper's module.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path

from test_start_cost import loaded_after
from tether.runtime.chokepoint.assembly import RunContext
from tether.runtime.chokepoint.environment import Environment

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "tether"
ENVIRONMENT = SRC / "runtime" / "chokepoint" / "environment.py"
SEAT_SIDE = (SRC / "runtime" / "strategy", SRC / "runtime" / "context")
ENV_TYPES = {"Environment", "Seat", "TurnSeat"}
# the one class built at run time: a copy of a foreign LangChain tool whose body runs only with
# the decided arguments (its class is the framework's, not known before the run)
BUILT_AT_RUN_TIME = {"src/tether/integrations/langgraph_tools.py"}


def modules(under: Path = SRC) -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(under.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _names(node: ast.expr) -> set[str]:
    """The class names an annotation or a base mentions (``Environment``, ``x.Environment``,
    ``"Environment"``, ``Environment | None``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return set()
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
    return found


def test_no_class_subclasses_the_environment_nor_is_built_at_run_time() -> None:
    found = []
    for path, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    "Environment" in _names(b) for b in node.bases):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} class {node.name}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "type" and len(node.args) == 3
                    and str(path.relative_to(ROOT)) not in BUILT_AT_RUN_TIME):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} type(...) with three "
                             "arguments")
    assert not found, found


def private_reads(tree: ast.Module, only_env_typed: bool) -> list[tuple[int, str]]:
    """``X._name`` reads and writes in ``tree`` where X is not ``self``/``cls`` (with
    ``only_env_typed``: where X is a parameter annotated as an Environment or its seats)."""
    out = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
            continue
        watched: set[str] | None = None
        if only_env_typed:
            if isinstance(func, ast.Module):
                continue
            args = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
            watched = {a.arg for a in args
                       if a.annotation is not None and _names(a.annotation) & ENV_TYPES}
            if not watched:
                continue
        for node in ast.walk(func):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__") and isinstance(node.value, ast.Name)):
                continue
            name = node.value.id
            if (name in watched) if watched is not None else name not in ("self", "cls"):
                out.append((node.lineno, ast.unparse(node)))
    return sorted(set(out))


def test_the_doors_and_shapers_read_no_private_attribute_of_another_object() -> None:
    found = [f"{path.relative_to(ROOT)}:{line} {text}"
             for part in SEAT_SIDE for path, tree in modules(part)
             for line, text in private_reads(tree, only_env_typed=False)]
    assert not found, found


def test_no_module_reads_a_private_attribute_of_an_environment() -> None:
    found = [f"{path.relative_to(ROOT)}:{line} {text}"
             for path, tree in modules() if path != ENVIRONMENT
             for line, text in private_reads(tree, only_env_typed=True)]
    assert not found, found


def test_the_checks_see_what_they_forbid() -> None:
    """The AST checks above are not vacuous: each finds what it forbids in a sample."""
    sample = ast.parse(
        "class Faster(Environment): pass\n"
        "Made = type('Made', (Environment,), {})\n"
        "def door(env: Environment, other: int) -> None:\n"
        "    env._journal.append('x', {})\n"
        "    other._thing\n")
    classes = [n for n in ast.walk(sample) if isinstance(n, ast.ClassDef)
               and any("Environment" in _names(b) for b in n.bases)]
    assert len(classes) == 1
    assert private_reads(sample, only_env_typed=True) == [(4, "env._journal")]
    assert private_reads(sample, only_env_typed=False) == [(4, "env._journal"),
                                                           (5, "other._thing")]


def test_the_environment_takes_the_run_context() -> None:
    parameters = inspect.signature(Environment.__init__).parameters
    assert parameters["run"].annotation in (RunContext, "RunContext")
    assert not {"journal", "state", "accountant", "trace", "session_id"} & set(parameters)


def test_a_recipe_without_shapers_loads_neither_shaper() -> None:
    loaded = loaded_after("runpy.run_path('examples/quickstart.py', run_name='__main__')")
    assert "tether.runtime.chokepoint.environment" in loaded  # it did run
    assert not loaded & {"tether.runtime.context.compactor", "tether.runtime.context.selecting"}
