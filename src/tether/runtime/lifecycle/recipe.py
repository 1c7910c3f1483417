"""The Agent a reference names: ``module:attribute`` or ``path/to/file.py:attribute``.

Why: ``tether run``, ``tether resume`` and the fleet (``tether fleet``, ``python -m
tether.durable.worker``) all start from a string naming the operator's recipe. When each had its
own loader they disagreed: the fleet's imported a plain module name without the current
directory on the import path, so ``--agent myapp.agents:build`` worked for ``tether run`` and
failed for ``tether fleet`` in the same project directory, with a message that did not say why.
One loader here gives every command the same forms, the same import path and the same errors.

Decision: the name is resolved by ``tether.references`` (a file is imported with its folder on
the path, a module with the current directory on it, as ``python -m`` would). The attribute may
be an Agent or a function taking no arguments that returns one; ``find_recipe`` checks that
without building anything (a fleet's client checks its reference before any worker builds from
it), ``load_recipe`` builds. Here, not in the CLI, because the fleet stands below the CLI.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tether.references import BadReference, import_object

if TYPE_CHECKING:
    from tether.runtime.lifecycle.agent import Agent

RecipeError = BadReference  # the reference does not name an Agent; the message says what to fix
WHAT = "the Agent object (or a function returning one)"


def find_recipe(spec: str) -> Agent | Callable[[], Agent]:
    """What ``spec`` names, checked to be an Agent or something to call for one; not called."""
    from tether.runtime.lifecycle.agent import Agent

    value = import_object(spec, WHAT)
    if not isinstance(value, Agent) and not callable(value):
        raise RecipeError(f"{spec} is a {type(value).__name__}, not a tether Agent or a function "
                          "returning one")
    return value  # type: ignore[no-any-return]


def build_recipe(spec: str, found: Agent | Callable[[], Agent]) -> Agent:
    """The Agent ``found`` (from ``find_recipe(spec)``) is or returns."""
    from tether.runtime.lifecycle.agent import Agent

    value: object = found
    if not isinstance(value, Agent):
        try:
            value = found()  # type: ignore[operator]
        except TypeError as exc:
            raise RecipeError(f"{spec} is callable but could not be called without arguments "
                              f"({exc}); name the Agent object instead") from None
    if not isinstance(value, Agent):
        raise RecipeError(f"{spec} returned a {type(value).__name__}, not a tether Agent")
    return value


def load_recipe(spec: str) -> Agent:
    """The Agent named by ``module:attribute`` or ``path/to/file.py:attribute``."""
    return build_recipe(spec, find_recipe(spec))
