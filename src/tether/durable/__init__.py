"""tether past one machine: a fleet of workers draining a queue of sessions (extra ``dbos``).

``Fleet(agent='pkg.mod:build', database=URL).enqueue(task)`` queues a session; workers
(``python -m tether.durable.worker --agent pkg.mod:build --db URL --executor-id w1``) run it as a
DBOS workflow whose body is one tether activation, recovered after a crash from tether's journal
(see ``tether.durable.dbos`` for the decisions). Nothing here imports DBOS until it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import exports

if TYPE_CHECKING:
    from tether.durable.activation import activate
    from tether.durable.dbos import Activation, AlreadyQueued, Fleet, SessionRefused, serve
    from tether.durable.status import STATUSES, Report

__all__ = ["STATUSES", "Activation", "AlreadyQueued", "Fleet", "Report", "SessionRefused",
           "activate", "serve"]
_HOMES = {"activate": "activation", "Activation": "dbos", "AlreadyQueued": "dbos",
          "Fleet": "dbos", "SessionRefused": "dbos", "serve": "dbos", "STATUSES": "status",
          "Report": "status"}


# imported when first used: the worker's CLI stays light
__getattr__, __dir__ = exports(__name__, _HOMES, globals())
