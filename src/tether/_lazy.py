"""How a package face exports names lazily, written once for every face (PEP 562).

Decision: a face (``tether``, ``tether.policy``, ``tether.mcp``, ...) lists where each public
name lives and imports that module only when the name is first used, so ``import tether`` stays
fast and an optional extra is imported only by the code that needs it. A home is a module path
(``"tether.runtime.lifecycle.agent"``) or a module of the face itself (``"combinators"``). Once
loaded, the value is kept in the face's namespace, so the second use costs a dict lookup. This
module imports nothing from tether: every face may use it.

A public path that moved keeps working for one release (docs/reference/surface.md): its old
module is a stub whose names come from the new home, each use warning ``DeprecationWarning``
with the new path (``moved``). The stub finds the new home by name when a name is used, not by
an import statement, so an old path on a lower floor (``tether.mcp.server``, now
``tether.serve.server``) does not make that floor import upward; the stub is deleted with the
release that drops the old path.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def exports(face: str, homes: Mapping[str, str], namespace: dict[str, Any]
            ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the face named ``face`` whose module namespace is
    ``namespace`` and whose lazily imported names live in ``homes`` (name -> module):
    ``__getattr__, __dir__ = exports(__name__, _WHERE, globals())``."""

    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {face!r} has no attribute {name!r}")
        module = home if home.startswith("tether.") else f"{face}.{home}"
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted({*namespace, *homes})

    return load, names


def moved(old: str, new: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the stub left at the old path ``old`` of a module
    that moved to ``new``: every name of ``new`` is there, each use warning that the path moved
    (``__getattr__, __dir__ = moved(__name__, "tether.serve.server")``)."""

    def load(name: str) -> Any:
        if name.startswith("__"):  # the import machinery's own questions (__path__, ...)
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(f"{old} moved to {new}; import {name} from {new} (the old path goes in "
                      "the next release)", DeprecationWarning, stacklevel=2)
        try:
            return getattr(importlib.import_module(new), name)
        except AttributeError:
            raise AttributeError(f"module {old!r} (now {new!r}) has no attribute {name!r}"
                                 ) from None

    def names() -> list[str]:
        return sorted(vars(importlib.import_module(new)))

    return load, names
