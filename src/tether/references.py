"""Objects named by reference: ``module:attribute`` or ``path/to/file.py:attribute``.

Why: recipes, tool lists, agent factories and graders live in the operator's code, and a command
line, a suite file or a worker process names them by a string, the way ASGI servers name an app.
One resolver gives every such string the same forms and the same errors.

Decision: a file path is imported under a private module name with its folder put on the import
path (as running the file would), and a plain module name is imported with the current directory
on the path (as ``python -m`` would).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from tether.errors import UsageError


class BadReference(UsageError):
    """A reference does not name what it should; the message says what to fix."""


def import_object(spec: str, what: str) -> Any:
    """The object named by ``module:attribute`` or ``path/to/file.py:attribute`` (the attribute
    may be dotted); ``what`` says what it should be, for error messages."""
    target, sep, attribute = spec.rpartition(":")
    if not sep or not target or not attribute:
        raise BadReference(f"{spec!r} must be MODULE:ATTRIBUTE (e.g. myapp.agents:agent) or "
                           f"path/to/file.py:ATTRIBUTE, naming {what}")
    value: Any = _import(target)
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise BadReference(f"{target} has no attribute {attribute!r}; name {what}") from None
    return value


def _import(target: str) -> ModuleType:
    is_file = target.endswith(".py") or "/" in target or os.sep in target
    try:
        if is_file:
            return _import_file(Path(target))
        if os.getcwd() not in sys.path:  # as `python -m` would: modules beside the operator
            sys.path.insert(0, os.getcwd())
        return importlib.import_module(target)
    except BadReference:
        raise
    except ModuleNotFoundError as exc:
        if is_file or not _is_or_holds(exc.name, target):  # the module's own import failed
            raise BadReference(_failed(target, exc)) from None
        raise BadReference(f"cannot import {target!r}: there is no module {exc.name!r} on the "
                           f"import path (run from {os.getcwd()}); run from the directory that "
                           "holds it, or name its file instead: path/to/file.py:ATTRIBUTE"
                           ) from None
    except Exception as exc:  # a SyntaxError, or anything the module raised as it was imported
        raise BadReference(_failed(target, exc)) from None


def _is_or_holds(missing: str | None, target: str) -> bool:
    """Whether the module found missing is ``target`` or a package on its way to it."""
    return missing is not None and (target == missing or target.startswith(missing + "."))


def _failed(target: str, exc: BaseException) -> str:
    """The import error as it is: its type, its words, and where it was raised."""
    where = ""
    if not isinstance(exc, SyntaxError):  # a SyntaxError's words name its file and line
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if not f.filename.startswith("<frozen")]  # not importlib's own machinery
        where = f" (at {frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
    fix = (f"; install {exc.name!r} where tether runs, or fix the import"
           if isinstance(exc, ModuleNotFoundError) and exc.name else
           "; fix the module: it fails whenever it is imported")
    return f"importing {target!r} failed: {type(exc).__name__}: {exc}{where}{fix}"


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise BadReference(f"no file {path}; path/to/file.py:ATTRIBUTE must name an existing "
                           "Python file")
    resolved = path.resolve()
    name = f"_tether_recipe_{resolved.stem}_{abs(hash(str(resolved))):x}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise BadReference(f"cannot load {path} as a Python module")
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
