"""One error tree: every exception tether defines is a ``TetherError``, split into usage errors
and run errors, and ``except tether.TetherError`` catches what each subpackage raises through
its public API. Control-flow signals are the only exceptions, each listed with its reason."""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import tether
from tether.errors import RunError, TetherError, UsageError

PACKAGE = Path(tether.__file__).parent

# Control-flow signals: not errors, so not under TetherError (each says why in its docstring).
SIGNALS = {
    "tether.runtime.accounting.stop.Stop":
        "a BaseException so that no `except Exception` in a tool, a strategy or a framework "
        "swallows a budget stop",
}


def _modules() -> Iterator[str]:
    """Every module of the package, walked on disk (a folder without ``__init__.py`` too)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _class_names(module: str) -> list[str]:
    """The classes a module defines at its top level; AssertionError for a class defined inside
    a function or class whose bases look like an exception (the walk could not reach it)."""
    source = (PACKAGE.parent / module.replace(".", "/")).with_suffix(".py")
    if not source.exists():
        source = PACKAGE.parent / module.replace(".", "/") / "__init__.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    top = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    nested = [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
              and node not in top and any(ast.unparse(base).endswith(("Error", "Exception"))
                                          for base in node.bases)]
    assert nested == [], f"{module}: define {nested} at the top level, under tether.errors"
    return [node.name for node in top]


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in _modules():
            try:
                module = importlib.import_module(name)
            except ImportError as exc:  # an optional extra that is not installed
                pytest.skip(f"{name} needs an extra that is not installed: {exc}")
            for attribute in _class_names(name):
                value = getattr(module, attribute, None)
                if (inspect.isclass(value) and issubclass(value, BaseException)
                        and value.__module__ == name):
                    found[f"{name}.{value.__qualname__}"] = value
    return found


def test_every_exception_of_the_package_is_a_tether_error() -> None:
    classes = _exception_classes()
    assert len(classes) >= 50, sorted(classes)  # the walk reached every subpackage
    assert "tether.store.base.ConflictError" in classes  # store/ is walked too
    outside = sorted(name for name, cls in classes.items()
                     if not issubclass(cls, TetherError) and name not in SIGNALS)
    assert outside == [], f"put these under tether.errors (UsageError or RunError): {outside}"
    for name in SIGNALS:
        assert not issubclass(classes[name], Exception), name
        assert classes[name].__doc__ and "BaseException" in classes[name].__doc__, name


def test_the_tree_splits_usage_from_run() -> None:
    assert issubclass(UsageError, TetherError) and issubclass(RunError, TetherError)
    assert not issubclass(UsageError, RunError) and not issubclass(RunError, UsageError)
    for name, cls in _exception_classes().items():
        if name not in SIGNALS and cls.__module__ != "tether.errors":
            assert issubclass(cls, UsageError) != issubclass(cls, RunError), name


def test_the_drawn_tree_names_every_class() -> None:
    """The hierarchy drawn in tether.errors' docstring cannot fall behind the code."""
    import tether.errors

    drawn = tether.errors.__doc__ or ""
    missing = sorted(name for name, cls in _exception_classes().items()
                     if cls.__name__ not in drawn)
    assert missing == [], f"draw these in tether.errors' docstring: {missing}"


def test_the_root_is_exported_from_tether() -> None:
    assert (tether.TetherError, tether.UsageError, tether.RunError) == (
        TetherError, UsageError, RunError)
    assert {"TetherError", "UsageError", "RunError"} <= set(tether.__all__)


def test_built_in_bases_are_kept() -> None:
    """Callers that catch the built-in keep working."""
    from tether.mcp import PinError
    from tether.policy import PolicyLoadError
    from tether.runtime.lifecycle.session import SessionEnded
    from tether.tools import ToolDefinitionError

    assert issubclass(PolicyLoadError, ValueError) and issubclass(PolicyLoadError, UsageError)
    assert issubclass(ToolDefinitionError, TypeError)
    assert issubclass(SessionEnded, RuntimeError) and issubclass(SessionEnded, ValueError)
    assert issubclass(PinError, KeyError) and issubclass(PinError, RuntimeError)


def _policy() -> None:
    from tether.policy import YamlPolicy

    YamlPolicy.from_string("version: 1\nrules: 3")


def _tool() -> None:
    from tether import tool

    def undocumented(x: int) -> int:
        return x

    tool(undocumented)


def _model() -> None:
    from tether import ScriptedModel
    from tether.types import Message, ModelRequest

    asyncio.run(ScriptedModel([]).complete(
        ModelRequest(messages=(Message(role="user", content="hi"),))))


def _store() -> None:
    from tether.store.opening import open_store

    open_store("nosuch://place")


def _journal() -> None:
    from tether.journal.views.export import read_jsonl

    read_jsonl(["not json"])


def _runtime() -> None:
    from tether import Agent, ReAct, ScriptedModel
    from tether.store.memory import MemoryStore

    agent = Agent(model=ScriptedModel(["done"]), reasoning=ReAct()).with_store(MemoryStore())
    agent.resume(agent.run("finish").session_id)  # it ended: nothing to resume


def _evals(tmp: Path) -> None:
    from tether.evals import load_suite

    load_suite(tmp / "missing.yaml")


def _knowledge() -> None:
    from tether.knowledge import Document

    Document(doc_id="", text="x")


def _mcp() -> None:
    from tether.mcp import MemoryPinStore

    MemoryPinStore().approve("server", "tool")


def _credentials() -> None:
    from tether.credentials import CredentialBroker

    broker = CredentialBroker()
    broker.register("fetch", provider=lambda: "")
    broker.issue("session", "fetch")


def _reasoning() -> None:
    from tether.reasoning.planner import problem_text

    problem_text("no plan here")


def _references() -> None:
    from tether.references import import_object

    import_object("no-colon", "an agent")


def _integrations() -> None:
    from tether import Budget
    from tether.integrations.decided import ForeignTool
    from tether.integrations.governed import GovernedRun
    from tether.policy import AllowAll
    from tether.types import ToolSpec

    look = ForeignTool(ToolSpec("look", "Look something up.", {"type": "object"}))
    run = GovernedRun([look], policy=AllowAll(), request="look twice", framework="test",
                      budget=Budget(max_tool_calls=1))

    async def body(arguments: dict[str, object]) -> str:
        return "seen"

    async def twice() -> None:
        await run.call("c1", "look", {}, body)
        await run.call("c2", "look", {}, body)  # the budget allows one: the run stops

    asyncio.run(twice())


RAISERS: dict[str, tuple[Callable[..., None], type[TetherError]]] = {
    "policy": (_policy, UsageError),
    "tools": (_tool, UsageError),
    "models": (_model, RunError),
    "store": (_store, RunError),
    "journal": (_journal, UsageError),
    "runtime": (_runtime, RunError),
    "evals": (_evals, UsageError),
    "knowledge": (_knowledge, UsageError),
    "mcp": (_mcp, RunError),
    "credentials": (_credentials, RunError),
    "reasoning": (_reasoning, RunError),
    "references": (_references, UsageError),
    "integrations": (_integrations, RunError),
}


@pytest.mark.parametrize("part", sorted(RAISERS))
def test_except_tether_error_catches_each_subpackage(part: str, tmp_path: Path) -> None:
    raiser, branch = RAISERS[part]
    arguments = [tmp_path] if inspect.signature(raiser).parameters else []
    with pytest.raises(tether.TetherError) as caught:
        raiser(*arguments)
    assert isinstance(caught.value, branch), (part, type(caught.value).__mro__)
