"""The journal's event vocabulary: every event type tether writes, spelled once.

Why: an event's type is the key every reader of a journal dispatches on (the session's fold,
the rerun, the views, the CLI). Spelled as a string in each writer and each reader, a misspelt
type is a reader that silently sees nothing. Here each type is a member of one enumeration,
and the journal's ``append`` takes a member, so mypy refuses a type that is not in the list.

Decision: ``EventType`` is a ``StrEnum``, so a member *is* its string: it compares equal to the
type of an event read back from any store, encodes to the same JSON text and hashes the same,
so the stored journals and their hash chains do not change (an old journal verifies and folds
as before). ``Event.type`` stays ``str``: a journal read back may hold a type this version does
not write. The module sits on the ground floor, not in ``tether.journal``, because the store (a
floor below the journal) knows some types too: it anchors a session's head on its start, pause
and end, and erasure rewrites an event as ``content.erased``.

The data each type carries, for the types the journal's views read, is typed in
``tether.journal.payloads``.
"""

from __future__ import annotations

from enum import StrEnum, unique


@unique
class EventType(StrEnum):
    """Every type of event tether journals; a member equals its value (the stored type)."""

    # a session's life
    SESSION_START = "session.start"  # a session opened: its recipe, budget, policy, model, tools
    SESSION_RESUMED = "session.resumed"  # a paused or interrupted session taken up again
    SESSION_PAUSED = "session.paused"  # the session stopped to wait (an approval), resumable
    SESSION_END = "session.end"  # the session finished: its stop reason, result and spend
    SESSION_ERROR = "session.error"  # the session stopped on an error of its own (the store)
    SESSION_NOTE = "session.note"  # a note the runtime adds to the conversation (a repair hint)
    SESSION_WRAP_UP_SKIPPED = "session.wrap_up_skipped"  # no room left for the wrap-up turn
    SESSION_HALTED = "session.halted"  # a standing halt stopped the session: the halt, who, why
    SUBSCRIBER_ERROR = "subscriber.error"  # a journal subscriber raised on an event

    # the model side: a session turn, and the other doors of one governed model call
    MODEL_REQUEST = "model.request"  # a turn's request, journaled before it is sent
    MODEL_RESPONSE = "model.response"  # a turn's answer and what it cost
    MODEL_ERROR = "model.error"  # a turn's call failed (charged what was reserved)
    MODEL_UNMETERED = "model.unmetered"  # a turn's call with no usable usage (cut off, unusable)
    MODEL_LOST = "model.lost"  # a turn's call lost to a crash, charged on resume
    MODEL_OVERRUN = "model.overrun"  # an answer went past its reservation: the run stops
    QUOTA_REFUSED = "quota.refused"  # a quota had no room for a call: which, used, frees when
    BRANCH_REQUEST = "branch.request"  # a search branch's model request (out of the conversation)
    BRANCH_RESPONSE = "branch.response"  # a search branch's answer
    BRANCH_SIMULATED = "branch.simulated"  # a branch's tool calls simulated, not run
    COMPACTION_REQUEST = "compaction.request"  # a summary call that compacts the context
    COMPACTION_RESPONSE = "compaction.response"  # the summary's answer
    COMPACTION_ERROR = "compaction.error"  # the summary call failed: the turns are dropped instead
    CONTEXT_COMPACTED = "context.compacted"  # turns replaced by their summary (or dropped)
    TOOLS_SELECTED = "tools.selected"  # which tools the model is shown from now on
    PLAN_REQUEST = "plan.request"  # the request planner's model call
    PLAN_RESPONSE = "plan.response"  # the planner's answer
    PLAN_ERROR = "plan.error"  # the planner's call failed: the rules' plan stands
    PLAN_AMENDED = "plan.amended"  # the request plan the policy enforces, amended
    SAMPLING_REQUEST = "sampling.request"  # an MCP server's sampling request, asked of the model
    SAMPLING_RESPONSE = "sampling.response"  # the model's answer to it
    SAMPLING_ERROR = "sampling.error"  # that call failed or was unusable: the tool is refused
    SAMPLING_REFUSED = "sampling.refused"  # a sampling request declined before anything was asked
    SAMPLING_RELAYED = "sampling.relayed"  # a sampling request passed to the waiting MCP client
    SAMPLING_ANSWERED = "sampling.answered"  # the client's answer to a relayed sampling request

    # the tool side: one governed tool call
    TOOL_DECISION = "tool.decision"  # the policy's decision on a tool call (allow, deny, ask...)
    TOOL_STARTED = "tool.started"  # an allowed call began (before its effect)
    TOOL_RESULT = "tool.result"  # what the call returned (or its error)
    EFFECT_SETTLED = "effect.settled"  # an effect left in doubt by a crash, settled by a person
    EFFECT_RERUN = "effect.rerun"  # a rerun met an effect it does not repeat
    CLIENT_CALL = "client.call"  # a gateway's client asked for a tool call
    ACS_HOOK = "acs.hook"  # an ACS observed agent's hook, and the Guardian's answer
    STRATEGY_CALLS = "strategy.calls"  # the tool calls a strategy made itself (not the model)
    STRATEGY_NOTE = "strategy.note"  # a strategy's own note (its ``kind`` says which)
    SUBAGENT_CHARGE = "subagent.charge"  # what a subagent spent, charged to its parent
    CREDENTIAL_ISSUED = "credential.issued"  # a scoped credential issued for a tool call
    APPROVAL_REQUESTED = "approval.requested"  # a call that needs a person's approval
    APPROVAL_GRANTED = "approval.granted"  # the approval given
    APPROVAL_REFUSED = "approval.refused"  # the approval refused
    ELICITATION_REQUESTED = "elicitation.requested"  # an MCP server asked the user a question
    ELICITATION_ANSWERED = "elicitation.answered"  # the answer given to it
    ELICITATION_REFUSED = "elicitation.refused"  # an elicitation declined before it was asked
    ELICITATION_RELAYED = "elicitation.relayed"  # an elicitation passed to the waiting client
    ROOTS_REFUSED = "roots.refused"  # an MCP server asked for roots, which tether never exposes
    LOG_DROPPED = "log.dropped"  # an MCP server's log lines past the call's limit, dropped
    PROGRESS_DROPPED = "progress.dropped"  # its progress notifications past the limit, dropped

    # the session's result
    OUTPUT_VALID = "output.valid"  # the final answer parsed as the structured output asked for
    OUTPUT_INVALID = "output.invalid"  # it did not: the errors, and whether a repair follows
    EVAL_GRADED = "eval.graded"  # an evaluation's grade of an attempt

    # the record itself
    VALUE_HIDDEN = "value.hidden"  # the keyed fingerprint of a value hidden from the journal
    ERASURE_RECORDED = "erasure.recorded"  # an erasure: which events' content was erased, why
    CONTENT_ERASED = "content.erased"  # an event whose content was erased (hash and link kept)
