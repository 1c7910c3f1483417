"""PDDL domains whose actions are tools: what LLM+P plans over, and how a plan step becomes a call.

Why: the model writes only the *problem* (objects, initial state, goal); the domain — the actions,
their preconditions and effects — is fixed by whoever deployed the agent, per toolset, so the
planner can only ever produce actions that map onto real tools, parameter by parameter.

Decision: a ``Domain`` is the PDDL text plus, for each action, the tool it runs and the name of
the tool argument each PDDL parameter fills. The binding is checked against the PDDL when the
domain is built (every action bound, arities equal), so a plan step always becomes exactly one
well-formed call. Two ship here, with toolsets over an in-memory world
(``tether.reasoning.pddl.worlds``): Blocksworld, and a small logistics domain (trucks, roads,
packages).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

from tether.errors import InvalidArgument
from tether.reasoning.planner import PlanAction, domain_name

_ACTION = re.compile(r"\(:action\s+([^\s()]+)\s+:parameters\s*\(([^)]*)\)", re.I)


@dataclass(frozen=True, slots=True)
class ActionTool:
    """The tool a PDDL action runs, and the tool argument each PDDL parameter fills."""

    tool: str
    params: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Domain:
    pddl: str
    actions: Mapping[str, ActionTool]
    name: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", domain_name(self.pddl))
        if not self.name:
            raise InvalidArgument("the domain's PDDL has no (define (domain NAME) ...)")
        declared = {m.group(1).lower(): len(re.findall(r"\?[^\s)]+", m.group(2)))
                    for m in _ACTION.finditer(self.pddl)}
        bound = {k.lower(): v for k, v in self.actions.items()}
        if declared.keys() != bound.keys():
            raise InvalidArgument(f"domain {self.name}: actions {sorted(declared)} but tools bound "
                                  f"for {sorted(bound)}; bind each action to one tool")
        for action, arity in declared.items():
            if len(bound[action].params) != arity:
                raise InvalidArgument(f"domain {self.name}: action {action} has {arity} parameters "
                                      f"but its tool binding names {len(bound[action].params)}")
        object.__setattr__(self, "actions", bound)

    def call_for(self, action: PlanAction) -> tuple[str, dict[str, Any]]:
        """The tool call a plan step runs: (tool name, arguments)."""
        binding = self.actions.get(action.name.lower())
        if binding is None or len(binding.params) != len(action.args):
            raise InvalidArgument(f"{action} is no action of domain {self.name}")
        return binding.tool, dict(zip(binding.params, action.args, strict=True))

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(b.tool for b in self.actions.values()))


def _text(name: str) -> str:
    return files(__name__).joinpath(name).read_text(encoding="utf-8")


def blocksworld() -> Domain:
    """Blocksworld (the LLM+P paper's first domain), bound to ``BlocksWorld.tools()``."""
    return Domain(_text("blocksworld.pddl"), {
        "pick-up": ActionTool("pick_up", ("block",)),
        "put-down": ActionTool("put_down", ("block",)),
        "stack": ActionTool("stack", ("block", "onto")),
        "unstack": ActionTool("unstack", ("block", "from_block")),
    })


def logistics() -> Domain:
    """Trucks carry packages along roads, bound to ``Logistics.tools()``."""
    return Domain(_text("logistics.pddl"), {
        "load": ActionTool("load", ("package", "truck", "place")),
        "unload": ActionTool("unload", ("package", "truck", "place")),
        "drive": ActionTool("drive", ("truck", "origin", "destination")),
    })
