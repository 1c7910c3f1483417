"""How a package face exports names lazily, written once for every face (PEP 562).

Decision: a face (``tether``, ``tether.policy``, ``tether.mcp``, ...) lists where each public
name lives and imports that module only when the name is first used, so ``import tether`` stays
fast and an optional extra is imported only by the code that needs it. A home is a module path
(``"tether.runtime.lifecycle.agent"``) or a module of the face itself (``"combinators"``). Once
loaded, the value is kept in the face's namespace, so the second use costs a dict lookup. This
module imports nothing from tether: every face may use it.
"""

from __future__ import annotations

import importlib
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
