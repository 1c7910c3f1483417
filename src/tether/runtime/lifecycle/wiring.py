"""How one activation of a session wires its chokepoint from the recipe: one Environment.

Why its own module: a session owns a run's course (start, drive, pause, end); what the
chokepoint of one activation is made of — the executor (one that holds calls to the turn's offer
when the recipe selects tools), the tool side assembled from the run context
(``tether.runtime.chokepoint.assembly``), the output check, the turn shapers in their order — is
a separate decision, and it made the session's file the longest of the runtime. Here it reads
in one place, and ``Session._drive`` reads as the run's course.

Decision: the recipe's features that shape a turn are handed to the one ``Environment`` class
as an ordered tuple of ``TurnShaper``s (``tether.runtime.chokepoint.shaper``): compaction first
(its trigger estimates the request as the last turn's offer left it), then tool selection. A
recipe without either gets an empty tuple and loads neither module. The Environment takes the
run's ``RunContext`` whole — the session id, journal, state, accountant and trace the tool side
was assembled from — so each is passed once.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from tether.models.base import native_output
from tether.runtime.chokepoint.assembly import RunContext, ToolDoor, assemble
from tether.runtime.chokepoint.environment import Environment
from tether.runtime.chokepoint.executor import ToolExecutor
from tether.runtime.chokepoint.output import OutputCheck
from tether.runtime.chokepoint.shaper import TurnShaper

if TYPE_CHECKING:
    from tether.runtime.lifecycle.agent import Agent
    from tether.runtime.lifecycle.session import Session


def output_check(agent: Agent) -> OutputCheck | None:
    """The chokepoint's check of the recipe's output type (None without one)."""
    spec = agent.output_spec
    if spec is None:
        return None
    return OutputCheck(spec, agent.output_retries,
                       native_output(agent.model, bool(agent.registry.specs)))


def tool_door(session: Session, executor: ToolExecutor) -> ToolDoor:
    """What a session's tool calls are governed by: its recipe's policy, limits and approvals,
    its subject and context, and where hidden arguments are kept, if anywhere."""
    agent = session.agent
    private = agent.journal_store if agent.keep_hidden_arguments else None
    return ToolDoor(
        agent.policy, session.subject, session.context, executor, agent.limits,
        agent.approval_store, agent.approval_ttl, agent.policy_timeout,
        request=session.request, credentials=agent.credentials,
        keep=None if private is None else partial(private.put_private, session.id),
        kept=None if private is None else partial(private.get_private, session.id),
        approver=agent.decides_approvals, telemetry=tuple(agent.telemetry),
        model=agent.model)


def environment(session: Session, run: RunContext, check: OutputCheck | None,
                on_delta: Callable[[str], None] | None) -> Environment:
    """The chokepoint of one activation of ``session`` (see the module docstring)."""
    agent = session.agent
    shapers: list[TurnShaper] = []
    if agent.compaction is not None:  # (a recipe without compaction pays nothing for it)
        from tether.runtime.context.compactor import Compactor

        shapers.append(Compactor(agent.compaction, agent.model, run))
    if agent.tool_selection is None:
        door = assemble(run, tool_door(session, ToolExecutor(agent.registry,
                                                             agent.max_result_chars)))
    else:  # each turn offered a few tools: calls are held to the offer, the gate probed
        from tether.runtime.context.selecting import Selector, offered_executor

        assert agent.tool_index is not None  # (the recipe builds it with the selection)
        executor = offered_executor(agent.registry, agent.max_result_chars, run.journal)
        door = assemble(run, tool_door(session, executor))
        shapers.append(Selector(agent.tool_selection, agent.tool_index, agent.registry, run,
                                door.gate, executor.offer))
    return Environment(run, model=agent.model, specs=agent.registry.specs, tools=door.calls,
                       show_budget=agent.show_budget, on_delta=on_delta,
                       first_tool_choice=agent.first_tool_choice, output=check,
                       shapers=tuple(shapers))
