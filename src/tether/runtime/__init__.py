"""The runtime: Agent (recipe), Session (one run), Environment (the chokepoint) and its parts.

The runtime is in named parts, each one concern (docs/architecture.md draws them):
``accounting`` (budgets, stops), ``provenance`` (where values came from), ``record`` (a session as
a fold over its journal), ``approvals``, ``chokepoint`` (one governed model call, one governed
tool call), ``strategy`` (the doors a strategy has), ``context`` (what each turn is shown) and
``lifecycle`` (recipe, open, pause, resume, end). Every module in them is internal; the public
modules of the runtime are ``tether.runtime.rerun`` and ``tether.runtime.stream``.
"""
