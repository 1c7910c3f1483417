"""Moved to ``tether.reasoning.graders``: strategies grade with them too (Reflexion's check,
LATS's value), and evaluations run strategies, so the graders sit below both, on the reasoning
side of the strategies floor (DESIGN.md). Their public names stay in the ``tether.evals`` face;
this stub keeps the old path working for one release, each use warning ``DeprecationWarning``
(``tether._lazy.moved``).
"""

from __future__ import annotations

from tether._lazy import moved

__getattr__, __dir__ = moved(__name__, "tether.reasoning.graders")
