"""AgentAsTool: one agent used as a tool of another, inside the caller's budget.

Decision: a sub-agent is not a side door. It runs its own governed session (its recipe's tools
and journal) as the caller's user and tenant, its calls decided by its own policy *and* the
caller's (``DenyOverrides``: it never gets a permission its caller's policy denies), with a hard
budget equal to what the caller has left for it — less the caller's held-back wrap-up share and
one turn to use the answer — and everything it spends is charged to the caller's session as a
``subagent.charge`` event. So the caller's spend never exceeds its limits, however deep the
nesting, and each level's journal shows where the money went.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tether.policy.base import policy_id_of
from tether.tools.base import ToolArgumentError, ToolContext, ToolMeta
from tether.types import ToolSpec

if TYPE_CHECKING:
    from tether.runtime.lifecycle.agent import Agent


class AgentAsTool:
    """Expose ``agent`` as a tool taking a ``task`` string and returning its answer: each call
    runs a governed session of its own within what the caller's budget has left for it, its
    calls decided by its policy and the caller's, its spend charged to the caller.

    Args:
        agent: The agent the tool runs.
        name: The tool's name. Default: the agent's.
        description: What the calling model reads about it. Default: "Ask the <name> agent to
            do a task and return its answer."
        meta: Its metadata for the caller's policy. Default: tagged ``agent``, a side effect or
            egress when any of the agent's tools is one, an hour's timeout.
    """

    def __init__(self, agent: Agent, *, name: str | None = None, description: str | None = None,
                 meta: ToolMeta | None = None) -> None:
        self.agent = agent
        self.name = name or agent.name
        side_effect = any(t.meta.side_effect for t in agent.registry)
        egress = any(t.meta.egress for t in agent.registry)
        self.meta = meta or ToolMeta(tags=frozenset({"agent"}), side_effect=side_effect,
                                     egress=egress, timeout=3600.0)
        self.spec = ToolSpec(self.name, description or f"Ask the {agent.name} agent to do a "
                             "task and return its answer.", {
                                 "type": "object",
                                 "properties": {"task": {"type": "string"}},
                                 "required": ["task"], "additionalProperties": False})

    def __repr__(self) -> str:
        return f"AgentAsTool({self.agent.name!r})"

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        extra = set(arguments) - {"task"}
        if extra:
            raise ToolArgumentError(sorted(extra)[0], "unexpected field; only 'task'")
        task = arguments.get("task")
        if not isinstance(task, str) or not task.strip():
            raise ToolArgumentError("task", "must be a non-empty string")
        return {"task": task}

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> str:
        from tether.runtime.accounting.budget import Spend

        spend = Spend()
        agent = self.agent
        if context.policy is not None:  # the caller's denials bind it too
            from tether.policy.combinators import DenyOverrides

            both = (f"{policy_id_of(agent.policy)} and the caller's "
                    f"{policy_id_of(context.policy)}")
            agent = replace(agent, check_policy_names=False, policy=DenyOverrides(
                agent.policy, context.policy, policy_id=both))
        if context.telemetry and not agent.telemetry:  # its spans go where its caller's go
            agent = replace(agent, telemetry=context.telemetry)
        try:
            budget = agent.budget  # its own limits hold, never more than the caller has
            if context.sub_budget is not None:
                budget = budget.tighter(context.sub_budget())
            session = agent.session(arguments["task"], budget=budget,
                                         user_id=context.user_id, tenant_id=context.tenant_id,
                                         context={"parent_session": context.session_id,
                                                  "parent_call": context.call_id,
                                                  **({"traceparent": context.traceparent}
                                                     if context.traceparent else {})},
                                         request=context.request)
            try:
                result = await session.arun()
            finally:
                spend = session.spend()
        finally:  # always: charges what was spent and frees what the caller held for it
            if context.charge is not None:
                context.charge(spend)
        return (f"{result.answer}\n[sub-agent {self.agent.name}: {result.stop_reason.value}, "
                f"session {session.id}]")
