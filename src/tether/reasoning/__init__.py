"""Reasoning strategies. Each drives a run only through the Handle it is given.

ReAct (think, act, observe), Reflexion (attempt, evaluate, reflect, retry), LATS (a tree search
over model and tool steps: ``tether.reasoning.lats``), LLM+P (the model
writes a PDDL problem, a real planner solves it: ``tether.reasoning.llmp``, needs the
``planning`` extra) and Router (one of them per task). Imported lazily: an agent that runs
ReAct loads none of the others."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import exports

if TYPE_CHECKING:
    from tether.reasoning.lats import LATS
    from tether.reasoning.lats_values import GraderValue, SelfEvaluation
    from tether.reasoning.react import ReAct
    from tether.reasoning.reflexion import GraderCheck, Reflexion, SelfCritique
    from tether.reasoning.router import Router, RouteRule

_WHERE = {
    "LATS": "tether.reasoning.lats",
    "GraderValue": "tether.reasoning.lats_values",
    "SelfEvaluation": "tether.reasoning.lats_values",
    "ReAct": "tether.reasoning.react",
    "GraderCheck": "tether.reasoning.reflexion",
    "Reflexion": "tether.reasoning.reflexion",
    "SelfCritique": "tether.reasoning.reflexion",
    "Router": "tether.reasoning.router",
    "RouteRule": "tether.reasoning.router",
}
__all__ = ["LATS", "GraderCheck", "GraderValue", "ReAct", "Reflexion", "RouteRule", "Router",
           "SelfCritique", "SelfEvaluation"]


__getattr__, __dir__ = exports(__name__, _WHERE, globals())
