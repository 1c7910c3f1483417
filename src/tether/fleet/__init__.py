"""tether past one machine: a fleet of workers draining a queue of sessions (extra ``dbos``).

``Fleet(agent='pkg.mod:build', database=URL).enqueue(task)`` queues a session; workers
(``python -m tether.fleet.worker --agent pkg.mod:build --db URL --executor-id w1``) run it as a
DBOS workflow whose body is one tether activation, recovered after a crash from tether's journal
(see ``tether.fleet.dbos`` for the decisions). Nothing here imports DBOS until it is used.
"""

from __future__ import annotations

from tether.fleet.activation import activate
from tether.fleet.dbos import Activation, Fleet, serve

__all__ = ["Activation", "Fleet", "activate", "serve"]
