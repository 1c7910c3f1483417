"""The OpenTelemetry GenAI semantic conventions tether emits, named in one place.

Why: the conventions now live in their own repository (``semantic-conventions-genai``), still
at status Development and not yet released, and its drafts already rename the token metric
(``gen_ai.client.token.usage`` becomes counters). Every name
tether writes into a span or a metric is defined here, so following a new release is an edit
to this file and its tests, not a search through the exporters.

Decision: only what the conventions define goes under ``gen_ai.*``; tether's own facts
(decisions, approvals, budgets, the journal's chain) go under ``tether.*``. Nothing is written
under ``gen_ai.guardrail.*``, where two drafts still compete.
"""

from __future__ import annotations

# The last *released* GenAI conventions: open-telemetry/semantic-conventions v1.41.1 (the
# GenAI models then moved to semantic-conventions-genai, which has published no release and no
# schema URL). gen_ai.conversation.compacted is that repository's, unreleased; the decision
# event a proposal (below).
SEMCONV_VERSION = "1.41.1"
SCHEMA_URL = "https://opentelemetry.io/schemas/1.41.1"

# operations and span names: "{operation} {target}"
INVOKE_AGENT = "invoke_agent"
CHAT = "chat"
EXECUTE_TOOL = "execute_tool"

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
ERROR_TYPE = "error.type"
OTHER_PROVIDER = "_OTHER"  # the conventions' value for a provider they do not list

# opt-in content (the conventions' own switch, below): through the journal's redaction
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
CAPTURE_CONTENT_ON = frozenset({"true", "1", "span_only", "span_and_event"})

# events on the agent's span
EVALUATION_RESULT = "gen_ai.evaluation.result"
EVALUATION_NAME = "gen_ai.evaluation.name"
EVALUATION_SCORE = "gen_ai.evaluation.score.value"
EVALUATION_LABEL = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
COMPACTED = "gen_ai.conversation.compacted"  # set only when true, as the registry says
# A *proposed* event (open-telemetry/semantic-conventions-genai PR #535, not merged): its name,
# attribute and outcomes may change. Each event says which proposal it follows (PROPOSAL).
TOOL_CALL_DECISION = "gen_ai.tool.call.decision"
DECISION_OUTCOME = "gen_ai.tool.call.decision.outcome"
PROPOSAL = "tether.semconv.proposal"
DECISION_PROPOSAL = "open-telemetry/semantic-conventions-genai#535"
# tether's six effects on the proposal's three outcomes: what runs is "allow" (a partial allow
# and a mask run the tool, changed or recorded masked); a degraded call's tool does not run
# (its fallback is decided on its own, a second event)
OUTCOMES = {"allow": "allow", "partial_allow": "allow", "mask": "allow", "deny": "deny",
            "degrade": "deny", "require_approval": "require_approval"}

# metrics (v1.41.1 names; semantic-conventions-genai is replacing the token histogram with
# counters)
TOKEN_USAGE = "gen_ai.client.token.usage"
TOKEN_TYPE = "gen_ai.token.type"
OPERATION_DURATION = "gen_ai.client.operation.duration"
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                 16777216, 67108864)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                    40.96, 81.92)

# tether's own attributes and metrics
SESSION_ID = "tether.session.id"
STOP_REASON = "tether.stop_reason"
PAUSED = "tether.paused"
CHAIN_HEAD = "tether.chain.head"
RECIPE = "tether.recipe"
BUDGET_LEFT = "tether.budget.left."  # + tokens, cost_usd, steps, tool_calls, seconds
STEP = "tether.step"
WRAP_UP = "tether.wrap_up"
COST_USD = "tether.cost_usd"
DECISION_EFFECT = "tether.decision.effect"
DECISION_REASON = "tether.decision.reason"
DECIDED_BY = "tether.decision.by"  # "policy <id>", or the person who approved or refused
MODEL_CALL_PURPOSE = "tether.model_call.purpose"  # compaction, plan, sampling (else the turn's)
EVALUATION_SESSION = "tether.evaluation.session.id"  # the graded trial's session
EVALUATION_TRIAL = "tether.evaluation.trial"
POLICY_ID = "tether.policy.id"
APPROVAL_ID = "tether.approval.id"
APPROVER = "tether.approval.approver"
APPROVAL_OUTCOME = "tether.approval.outcome"
TOOL_STATUS = "tether.tool.status"
UNFINISHED = "tether.unfinished"
OVERRUN_EVENT = "tether.model.overrun"
LIMIT = "tether.limit"

DECISIONS = "tether.decisions"
STOPS = "tether.stops"
APPROVALS = "tether.approvals"
OVERRUNS = "tether.budget.overruns"
ESTIMATE_ERROR = "tether.estimate.error"
