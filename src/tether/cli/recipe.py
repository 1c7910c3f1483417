"""Find the Agent recipe a command names with ``--agent``, and bind it to the store.

Why: resuming a session needs its recipe — the model, the tools, the policy — and those live in
the operator's code, not in the journal. ``--agent myapp.agents:refund_agent`` names it the way
ASGI servers name an app; ``--agent path/to/file.py:agent`` names a file that is not on the
import path. The attribute may be an Agent or a function that takes no arguments and returns
one.

Decision: a recipe built without a store is given the command's store (``--store``, else
``TETHER_STORE``, else the default), together with approvals kept in that store — a recipe's
default in-memory approvals could never see a decision made from another process. A recipe that
has its own store keeps it, and a ``--store`` naming another store is refused (exit 2), not
ignored and not obeyed: the recipe's sessions and approvals live in its store, so obeying the
flag would journal where the recipe's own code never looks, and ignoring it would journal where
the operator did not ask. The loading itself is ``tether.runtime.lifecycle.recipe``'s, shared
with the fleet (``tether fleet``, ``python -m tether.durable.worker``), so every command finds a
recipe the same way.
"""

from __future__ import annotations

from tether.runtime.lifecycle.recipe import RecipeError, load_recipe

__all__ = ["RecipeError", "load_recipe"]
