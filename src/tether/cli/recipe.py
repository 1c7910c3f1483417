"""Find the Agent recipe a command names with ``--agent``, and bind it to the store.

Why: resuming a session needs its recipe — the model, the tools, the policy — and those live in
the operator's code, not in the journal. ``--agent myapp.agents:refund_agent`` names it the way
ASGI servers name an app; ``--agent path/to/file.py:agent`` names a file that is not on the
import path. The attribute may be an Agent or a function that takes no arguments and returns
one.

Decision: a recipe built without a store is given the command's store (``--store``, else
``TETHER_STORE``, else the default), together with approvals kept in that store — a recipe's
default in-memory approvals could never see a decision made from another process. A recipe that
has its own store keeps it: the journal lives where the recipe writes, and a different
``--store`` is reported rather than silently used.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether.runtime.agent import Agent
    from tether.store.base import Store


class RecipeError(Exception):
    """``--agent`` does not name an Agent; the message says what to fix."""


def load_recipe(spec: str) -> Agent:
    """The Agent named by ``module:attribute`` or ``path/to/file.py:attribute``."""
    from tether.runtime.agent import Agent

    value = import_object(spec, "the Agent object (or a function returning one)")
    if not isinstance(value, Agent) and callable(value):
        try:
            value = value()
        except TypeError as exc:
            raise RecipeError(f"{spec} is callable but could not be called without arguments "
                              f"({exc}); name the Agent object instead") from None
    if not isinstance(value, Agent):
        raise RecipeError(f"{spec} is a {type(value).__name__}, not a tether Agent")
    return value


def import_object(spec: str, what: str) -> Any:
    """The object named by ``module:attribute`` or ``path/to/file.py:attribute`` (the attribute
    may be dotted); ``what`` says what it should be, for error messages."""
    target, sep, attribute = spec.rpartition(":")
    if not sep or not target or not attribute:
        raise RecipeError(f"{spec!r} must be MODULE:ATTRIBUTE (e.g. myapp.agents:agent) or "
                          f"path/to/file.py:ATTRIBUTE, naming {what}")
    value: Any = _import(target)
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise RecipeError(f"{target} has no attribute {attribute!r}; name {what}") from None
    return value


def _import(target: str) -> ModuleType:
    is_file = target.endswith(".py") or "/" in target or os.sep in target
    try:
        if is_file:
            return _import_file(Path(target))
        if os.getcwd() not in sys.path:  # as `python -m` would: modules beside the operator
            sys.path.insert(0, os.getcwd())
        return importlib.import_module(target)
    except RecipeError:
        raise
    except ModuleNotFoundError as exc:
        raise RecipeError(f"cannot import {target!r} ({exc}); run from the directory that holds "
                          "it, or name a file: --agent path/to/file.py:agent") from None
    except Exception as exc:
        raise RecipeError(f"importing {target!r} failed: {type(exc).__name__}: {exc}") from None


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise RecipeError(f"no file {path}; --agent path/to/file.py:ATTRIBUTE needs an existing "
                          "Python file")
    resolved = path.resolve()
    name = f"_tether_recipe_{resolved.stem}_{abs(hash(str(resolved))):x}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise RecipeError(f"cannot load {path} as a Python module")
    folder = str(resolved.parent)
    if folder not in sys.path:  # as running the file would: its siblings are importable
        sys.path.insert(0, folder)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def with_store(agent: Agent, store: Store) -> Agent:
    """A recipe built without a store, given ``store`` for its journals and its approvals (unless
    it was given approvals of its own that are not the in-memory default)."""
    from tether.runtime.chokepoint.approvals import StoredApprovals
    from tether.store.memory import MemoryStore

    approvals = agent.approvals
    if isinstance(approvals, StoredApprovals) and isinstance(approvals.store, MemoryStore):
        approvals = None  # the recipe's default: approvals go where the journal goes
    return replace(agent, store=store, approvals=approvals)
