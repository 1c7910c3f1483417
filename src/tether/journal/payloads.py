"""The data of the events the journal's views read, typed: one TypedDict per event type.

Why: a view (``tether.journal.views``) reads an event's data by field name, and a misspelt
field is a view that silently shows nothing. Each view reads an event's data through the type
of that event's payload here, so mypy refuses a field the payload does not have.

Decision: these are TypedDicts of the data *as stored* (plain JSON: a Decimal is its string, a
record its ``to_dict``), all ``total=False``, since a journal written by an older tether may
lack a field a newer one writes and the views read with ``.get``; nested values are ``Any``.
They describe; they convert nothing, so the stored JSON is what it was. ``PAYLOADS`` maps each
type to its payload (test_vocabulary.py checks that what tether appends fits it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from tether.vocabulary import EventType

# -- a session's life ----------------------------------------------------------------------------


class SessionStartData(TypedDict, total=False):
    agent: str
    budget: dict[str, Any]
    context: dict[str, Any]
    metadata: dict[str, Any]
    model: str
    provider: str
    output: dict[str, Any]
    plan: dict[str, Any]
    recipe: str
    request: str
    subject: dict[str, Any]
    system_prompt: str
    task: str
    thread: dict[str, Any]
    tools: list[Any]


class SessionResumedData(SessionStartData, total=False):
    after: str
    link: str


class SessionEndData(TypedDict, total=False):
    answer: str
    detail: str
    notice: str
    reason: str
    spend: dict[str, Any]


class SessionPausedData(SessionEndData, total=False):
    active_seconds: float
    pending: list[Any]
    uncertain: list[Any]


class SessionErrorData(TypedDict, total=False):
    error: str


class SessionNoteData(TypedDict, total=False):
    text: str


class WrapUpSkippedData(TypedDict, total=False):
    detail: str
    reason: str


# -- the model side ------------------------------------------------------------------------------


class ModelRequestData(TypedDict, total=False):
    final: bool
    max_output_tokens: int | None
    new: list[Any]
    ref: int
    reserved_cost_usd: str
    reserved_input: int
    step: int
    tool_choice: Any
    tools: list[Any]


class ModelResponseData(TypedDict, total=False):
    cost_usd: str
    reserved_input: int
    response: dict[str, Any]
    step: int


class ModelChargeData(TypedDict, total=False):
    """``model.error``, ``model.unmetered``, ``model.lost``: a call charged its reservation."""

    cached_input_tokens: int
    cost_usd: str
    error: str
    input_tokens: int
    output_tokens: int
    step: int


class ModelOverrunData(TypedDict, total=False):
    branch: str
    detail: str
    limit: str
    purpose: str
    reported: dict[str, Any]
    reserved: dict[str, Any]
    step: int


class QuotaRefusedData(TypedDict, total=False):
    detail: str
    frees_at: float | None
    key: str
    limit: str
    need: str
    per: str
    quota: str
    used: str


class BranchRequestData(TypedDict, total=False):
    digest: str
    key: str
    max_output_tokens: int | None
    messages: list[Any]
    reserved_cost_usd: str
    reserved_input: int
    step: int
    tools: list[Any]


class BranchResponseData(ModelResponseData, total=False):
    key: str


class ChatRequestData(ModelRequestData, BranchRequestData, total=False):
    """A turn's request or a branch's, which the spans read alike (``new`` or ``messages``)."""


class CallData(TypedDict, total=False):
    """``branch.simulated`` and ``client.call``: one tool call (its ``to_dict``)."""

    call: dict[str, Any]
    invalid: str
    traceparent: str


class SummaryRequestData(TypedDict, total=False):
    """``compaction.request``, ``plan.request`` and ``sampling.request``."""

    call_id: str
    digest: str
    end: int
    max_output_tokens: int
    max_tokens: int
    messages: list[Any]
    model: str
    notes: list[Any]
    reserved_cost_usd: str
    reserved_input: int
    server: str
    start: int
    step: int
    tools: list[Any]


class SummaryResponseData(TypedDict, total=False):
    """``compaction.response``, ``plan.response`` and ``sampling.response``."""

    cache_write_tokens: int
    cached_input_tokens: int
    call_id: str
    cost_usd: str
    finish_reason: str
    input_tokens: int
    model: str
    output_tokens: int
    overrun: dict[str, Any]
    reserved: dict[str, Any]
    reserved_input: int
    server: str
    step: int
    text: str


class SummaryErrorData(TypedDict, total=False):
    """``compaction.error``, ``plan.error`` and ``sampling.error``."""

    cached_input_tokens: int
    call_id: str
    cost_usd: str
    error: str
    fallback: str
    input_tokens: int
    lost: bool
    output_tokens: int
    server: str
    step: int


class CompactedData(TypedDict, total=False):
    digest: str
    end: int
    fallback: str
    reason: str
    replaced: int
    replacement: list[Any]
    request_tokens: int
    start: int
    step: int
    strategy: str
    tokens_after: int
    tokens_before: int
    turns: int
    window: int | None


class ToolsSelectedData(TypedDict, total=False):
    branch: str
    denied: list[str]
    error: str
    scores: dict[str, Any]
    step: int


class PlanAmendedData(TypedDict, total=False):
    added: list[Any]
    plan: dict[str, Any]
    rejected: list[str]


# -- the tool side -------------------------------------------------------------------------------


class ToolDecisionData(TypedDict, total=False):
    arguments: dict[str, Any]
    call_id: str
    charged: bool
    context: dict[str, Any]
    decision: dict[str, Any]
    labels: dict[str, Any]
    provenance: dict[str, Any]
    resource: dict[str, Any]
    signature: str
    tool: str


class ToolStartedData(TypedDict, total=False):
    """``tool.started`` and ``effect.rerun``."""

    call_id: str
    tool: str
    why: str


class ToolResultData(TypedDict, total=False):
    call_id: str
    content: str
    status: str
    tool: str
    untrusted: bool
    asked_by: list[str]  # arguments only untrusted text supplied (runtime.provenance.inherited)
    declared: dict[str, Any]  # what the tool declared, where the result inherited distrust


class EffectSettledData(TypedDict, total=False):
    action: str
    call_id: str
    note: str
    operator: str


class StrategyCallsData(TypedDict, total=False):
    calls: list[Any]
    flushed: list[Any]
    reason: str


class StrategyNoteData(TypedDict, total=False):
    data: dict[str, Any]
    kind: str


class SubagentChargeData(TypedDict, total=False):
    cached_input_tokens: int
    call_id: str
    cost_usd: str
    input_tokens: int
    output_tokens: int
    steps: int
    tool_calls: int


class CredentialIssuedData(TypedDict, total=False):
    call_id: str
    max_uses: int
    token_id: str
    tool: str
    ttl: float


class ApprovalData(TypedDict, total=False):
    """``approval.requested``, ``approval.granted`` and ``approval.refused``."""

    approval_id: str
    approver: str
    approver_auth: str
    arguments: dict[str, Any]
    break_glass: bool
    call_hash: str
    call_id: str
    charged: bool
    expires_at: float
    note: str
    policy_id: str
    reason: str
    requested_at: float
    tool: str
    why: str


class AskData(TypedDict, total=False):
    """What an MCP server asked during a tool call, and what became of it: the sampling and
    elicitation relays and answers, the elicitation's request, the refusals and drops."""

    action: str
    approval_id: str
    by: str
    call_id: str
    content: dict[str, Any]
    expires_at: float
    max_tokens: int
    message: str
    messages: list[Any]
    reason: str
    schema: dict[str, Any]
    server: str
    text: str


# -- the session's result ------------------------------------------------------------------------


class OutputData(TypedDict, total=False):
    """``output.valid`` and ``output.invalid``."""

    attempt: int
    errors: list[Any]
    output: dict[str, Any]
    repairs_left: int
    text: str
    type: str


class EvalGradedData(TypedDict, total=False):
    attempt: int
    error: str
    evaluation: str
    grader: str
    passed: bool
    perturbation: str
    repetition: int
    score: float | None
    seed: int
    session_id: str
    suite: str
    task: str
    trial: str
    why: str


class SubscriberErrorData(TypedDict, total=False):
    error: str
    event_seq: int
    subscriber: str


PAYLOADS: Mapping[EventType, type] = {
    EventType.SESSION_START: SessionStartData,
    EventType.SESSION_RESUMED: SessionResumedData,
    EventType.SESSION_PAUSED: SessionPausedData,
    EventType.SESSION_END: SessionEndData,
    EventType.SESSION_ERROR: SessionErrorData,
    EventType.SESSION_NOTE: SessionNoteData,
    EventType.SESSION_WRAP_UP_SKIPPED: WrapUpSkippedData,
    EventType.SUBSCRIBER_ERROR: SubscriberErrorData,
    EventType.MODEL_REQUEST: ModelRequestData,
    EventType.MODEL_RESPONSE: ModelResponseData,
    EventType.MODEL_ERROR: ModelChargeData,
    EventType.MODEL_UNMETERED: ModelChargeData,
    EventType.MODEL_LOST: ModelChargeData,
    EventType.MODEL_OVERRUN: ModelOverrunData,
    EventType.QUOTA_REFUSED: QuotaRefusedData,
    EventType.BRANCH_REQUEST: BranchRequestData,
    EventType.BRANCH_RESPONSE: BranchResponseData,
    EventType.BRANCH_SIMULATED: CallData,
    EventType.COMPACTION_REQUEST: SummaryRequestData,
    EventType.COMPACTION_RESPONSE: SummaryResponseData,
    EventType.COMPACTION_ERROR: SummaryErrorData,
    EventType.CONTEXT_COMPACTED: CompactedData,
    EventType.TOOLS_SELECTED: ToolsSelectedData,
    EventType.PLAN_REQUEST: SummaryRequestData,
    EventType.PLAN_RESPONSE: SummaryResponseData,
    EventType.PLAN_ERROR: SummaryErrorData,
    EventType.PLAN_AMENDED: PlanAmendedData,
    EventType.SAMPLING_REQUEST: SummaryRequestData,
    EventType.SAMPLING_RESPONSE: SummaryResponseData,
    EventType.SAMPLING_ERROR: SummaryErrorData,
    EventType.SAMPLING_REFUSED: AskData,
    EventType.SAMPLING_RELAYED: AskData,
    EventType.SAMPLING_ANSWERED: AskData,
    EventType.TOOL_DECISION: ToolDecisionData,
    EventType.TOOL_STARTED: ToolStartedData,
    EventType.TOOL_RESULT: ToolResultData,
    EventType.EFFECT_SETTLED: EffectSettledData,
    EventType.EFFECT_RERUN: ToolStartedData,
    EventType.CLIENT_CALL: CallData,
    EventType.STRATEGY_CALLS: StrategyCallsData,
    EventType.STRATEGY_NOTE: StrategyNoteData,
    EventType.SUBAGENT_CHARGE: SubagentChargeData,
    EventType.CREDENTIAL_ISSUED: CredentialIssuedData,
    EventType.APPROVAL_REQUESTED: ApprovalData,
    EventType.APPROVAL_GRANTED: ApprovalData,
    EventType.APPROVAL_REFUSED: ApprovalData,
    EventType.ELICITATION_REQUESTED: AskData,
    EventType.ELICITATION_ANSWERED: AskData,
    EventType.ELICITATION_REFUSED: AskData,
    EventType.ELICITATION_RELAYED: AskData,
    EventType.ROOTS_REFUSED: AskData,
    EventType.LOG_DROPPED: AskData,
    EventType.PROGRESS_DROPPED: AskData,
    EventType.OUTPUT_VALID: OutputData,
    EventType.OUTPUT_INVALID: OutputData,
    EventType.EVAL_GRADED: EvalGradedData,
}
