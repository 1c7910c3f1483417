"""One error tree: every exception tether defines is a ``TetherError``, split into usage errors
and run errors, and ``except tether.TetherError`` catches what each subpackage raises through
its public API. No ``raise`` in the package names a built-in or a foreign exception class, but
for the few a protocol asks for by name; every class keeps the built-in bases it had, so an
``except ValueError`` written before the tree took a check in still catches it. Control-flow
signals are the only exceptions, each listed with its reason."""

from __future__ import annotations

import ast
import asyncio
import builtins
import importlib
import inspect
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import tether
from tether.errors import RunError, TetherError, UsageError
from vendored import vendored

PACKAGE = Path(tether.__file__).parent

# Control-flow signals: not errors, so not under TetherError (each says why in its docstring).
SIGNALS = {
    "tether.runtime.accounting.stop.Stop":
        "a BaseException so that no `except Exception` in a tool, a strategy or a framework "
        "swallows a budget stop",
    "tether.tools.inline.Deadline":
        "a BaseException so that no `except Exception` in a sync tool swallows its timeout",
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


# The raises a protocol asks for by name (tether.errors' docstring says why for each kind):
# the exception as written in the raise -> the places ("file:function") it may be raised from,
# or None for every module of a folder named in the reason's key.
PROTOCOL_RAISES: dict[str, tuple[frozenset[str] | None, str]] = {
    "AttributeError": (frozenset({"_lazy.py:load", "secret.py:__setattr__",
                                  "secret.py:__delattr__"}),
                       "a module's __getattr__ and an immutable object's __setattr__ and "
                       "__delattr__: hasattr, getattr(default) and copy read this exact type"),
    "asyncio.CancelledError": (frozenset({"executor.py:check_not_cancelled"}),
                               "asyncio's cancellation: the task was asked to stop"),
    "KeyboardInterrupt": (frozenset({"mcp.py:stop", "console.py:_stopped"}),
                          "SIGTERM stops `tether mcp serve` and `tether console` the way Ctrl-C "
                          "does"),
    "HTTPException": (frozenset({"_access.py:open_session", "evals.py:report_page"}),
                      "Starlette's answer with an HTTP status from a console page (a 404)"),
    "SystemExit": (frozenset({"__main__.py:<module>"}), "the exit status of `python -m tether`"),
    "IndexError": (frozenset({"_snapshots.py:__getitem__"}),
                   "a sequence's index out of range: the sequence protocol (iteration, "
                   "Sequence.index) stops on this exact type"),
    "argparse.ArgumentTypeError": (None, "cli: argparse turns it into a usage message"),
    "ApprovalRequired": (frozenset({"pydantic_ai.py:call_tool"}),
                         "pydantic-ai's own pause for an approval: its agent loop catches it"),
}

BUILT_IN = {name for name, value in vars(builtins).items()
            if isinstance(value, type) and issubclass(value, BaseException)}


def _foreign_raises(path: Path) -> Iterator[tuple[str, str, int]]:
    """(exception as written, "file:function", line) for each ``raise`` in ``path`` of a class
    that is not tether's: a built-in, or a name or module attribute imported from elsewhere."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    foreign: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and not (
                node.module or "").startswith("tether"):
            foreign.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            foreign.update((alias.asname or alias.name).split(".")[0] for alias in node.names
                           if not alias.name.startswith("tether"))

    def walk(node: ast.AST, where: str) -> Iterator[tuple[str, str, int]]:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = child.name
            if isinstance(child, ast.Raise) and child.exc is not None:
                raised = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                root = raised
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and (
                        (raised is root and root.id in BUILT_IN) or root.id in foreign):
                    yield ast.unparse(raised), f"{path.name}:{where}", child.lineno
            yield from walk(child, inner)

    yield from walk(tree, "<module>")


def test_no_raise_of_a_built_in_outside_the_protocols() -> None:
    """A bare ``raise ValueError`` escapes ``except tether.TetherError``: raise the tree class
    that keeps the built-in as a base (tether.errors: InvalidArgument, WrongType, ...)."""
    found = [(raised, place, path.relative_to(PACKAGE.parent), line)
             for path in sorted(PACKAGE.rglob("*.py")) if not vendored(path)
             for raised, place, line in _foreign_raises(path)]
    assert len(found) >= 6, found  # the walk saw the protocol raises
    stray = [f"{where}:{line} raises {raised}" for raised, place, where, line in found
             if raised not in PROTOCOL_RAISES or not _allowed(raised, place, where)]
    assert stray == [], ("raise a class of tether.errors (it keeps the built-in base), or "
                         f"argue a protocol in PROTOCOL_RAISES and tether.errors: {stray}")
    used = {raised for raised, *_ in found}
    assert used == set(PROTOCOL_RAISES), f"stale entries: {set(PROTOCOL_RAISES) - used}"


def _allowed(raised: str, place: str, where: Path) -> bool:
    places, _ = PROTOCOL_RAISES[raised]
    return "cli" in where.parts if places is None else place in places


def test_the_drawn_tree_names_each_protocol_kind() -> None:
    import tether.errors

    drawn = tether.errors.__doc__ or ""
    for raised in ("AttributeError", "CancelledError", "KeyboardInterrupt", "SystemExit",
                   "HTTPException"):
        assert raised in drawn, f"tether.errors' docstring: say why {raised} stays built-in"


# Every class of the tree with the built-in exceptions it is (besides Exception): a class may
# gain one, never lose one, or an ``except`` written against it stops catching.
BUILT_IN_BASES: dict[str, frozenset[str]] = {name: frozenset(bases.split()) for name, bases in {
    "AlreadyQueued": "", "AmbiguousId": "", "ApprovalError": "", "ApprovalNotFound": "",
    "ApprovalRefused": "",
    "ArgumentsChanged": "", "AttemptOver": "", "BadData": "ValueError",
    "BadReference": "", "BranchRefused": "", "CalculatorError": "ValueError",
    "CallCancelled": "", "CallerCannot": "", "InputNeeded": "", "ClientExpired": "",
    "AcsRefused": "", "ConflictError": "",
    "CredentialError": "", "ErasureRefused": "RuntimeError",
    "ExportFormatError": "ValueError", "Halted": "", "HiddenNotRecalled": "",
    "IndexRefused": "ValueError",
    "InvalidArgument": "ValueError", "JournalTampered": "", "JournalValueError": "ValueError",
    "KeyFileError": "ValueError", "NoteInvalid": "ValueError", "WitnessRefused": "",
    "Inconsistent": "",
    "KeyMismatch": "LookupError", "MCPConnectionError": "RuntimeError",
    "MCPCapabilityMissing": "RuntimeError", "MCPError": "RuntimeError",
    "MCPToolBlocked": "RuntimeError",
    "MCPToolError": "RuntimeError", "MissingExtra": "ImportError",
    "MissingFile": "FileNotFoundError OSError", "ModelError": "",
    "NestedRunError": "RuntimeError", "NotFound": "LookupError",
    "OverlayError": "ValueError", "PinError": "RuntimeError KeyError LookupError",
    "PlannerMissing": "ImportError RuntimeError", "PlanningError": "",
    "PolicyLoadError": "ValueError", "PolicyNameError": "ValueError", "ProviderError": "",
    "RecipeChanged": "", "Refused": "", "Rejected": "", "RetrievalError": "ValueError",
    "RunError": "", "RunFailed": "RuntimeError", "RunStopped": "", "SchemaError": "",
    "SessionBusy": "", "SessionEnded": "RuntimeError ValueError", "SessionMoved": "",
    "SessionRefused": "", "StoreError": "", "StoreFull": "", "StoreUnavailable": "",
    "SuiteError": "ValueError", "TetherError": "", "ThreadTampered": "RuntimeError",
    "TimedOut": "TimeoutError OSError", "ToolArgumentError": "ValueError",
    "ToolDefinitionError": "TypeError", "ToolFailure": "", "TooMuchBinary": "ValueError",
    "Unanswered": "", "Unreachable": "OSError", "UpstreamLost": "RuntimeError",
    "UsageError": "", "WrongState": "RuntimeError", "WrongType": "TypeError",
    "_Failed": "", "_Spent": "", "_Unmetered": "",
}.items()}


def _built_in_bases(cls: type[BaseException]) -> frozenset[str]:
    return frozenset(base.__name__ for base in cls.__mro__
                     if base.__module__ == "builtins" and base not in (Exception, BaseException,
                                                                        object))


def test_every_class_keeps_its_built_in_bases() -> None:
    classes = {cls.__name__: cls for cls in _exception_classes().values()
               if issubclass(cls, TetherError)}
    classes.update(TetherError=TetherError, UsageError=UsageError, RunError=RunError)
    unlisted = sorted(set(classes) - set(BUILT_IN_BASES) - {"AgentsRunStopped"})
    assert unlisted == [], f"list these in BUILT_IN_BASES with their built-in bases: {unlisted}"
    lost = {name: sorted(BUILT_IN_BASES[name] - _built_in_bases(cls))
            for name, cls in classes.items() if name in BUILT_IN_BASES
            and not BUILT_IN_BASES[name] <= _built_in_bases(cls)}
    assert lost == {}, f"these classes lost a built-in base an `except` may catch them by: {lost}"


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
