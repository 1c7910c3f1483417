"""tether's own attack plans for AgentDyn's injection tasks whose ground truth is no attack.

Why: every shopping and github injection task of AgentDyn ships the same copy-pasted ground
truth (``send_money(recipient="", amount=0.01)``): in github no such tool exists, in shopping it
never reaches the task's goal. Replayed as written, the obedient model would attack nothing and
attack success would be zero by construction. These plans are what an obeying model does for
each task's ``GOAL``; a test runs each one alone and checks it with the task's own
``security()``, so the goal is AgentDyn's and only the calls are tether's.

Decision: a plan is a list of (tool, arguments) with the same run-time ``Read``s as the user
tasks' (a one-time password the attack's own call makes the platform send); a task not listed
keeps its own ground truth.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tether.evals.agentdojo.reading import planned
from tether.evals.obedient import PlannedCall

PLANS: dict[tuple[str, str], Callable[[Any], list[PlannedCall]]] = {}


def attack_calls(suite: str, injection_task: Any, env: Any) -> list[PlannedCall]:
    """The calls an obeying model makes for ``injection_task`` of ``suite`` in ``env``."""
    plan = PLANS.get((suite, injection_task.ID))
    if plan is not None:
        return plan(env)
    return planned(injection_task.ground_truth(env))
