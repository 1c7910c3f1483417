"""What each policy effect lets through to a tool, as pure functions of a call and a decision.

Decision: the pipeline in ``turn.py`` sequences gates; the meaning of ALLOW, PARTIAL_ALLOW and
MASK (what the tool receives, what is cut from its output, what the journal may show) lives here,
in one place, so the live path and the resume path shape a call identically. A call rebuilt from
a journal that hid some of its arguments is refused rather than run with a placeholder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tether.journal.redaction import HIDDEN_MARKERS, MASKED
from tether.policy.base import MASK_TARGETS, Decision, Effect
from tether.records import fast_init
from tether.runtime.chokepoint.executor import Rejected
from tether.runtime.record.result import ToolResult
from tether.tools.base import Tool
from tether.types import ToolCall

# read on every call: bound once (an enum member read through its class is slow, benchmarks.md)
_ALLOW, _MASK, _REQUIRE_APPROVAL = Effect.ALLOW, Effect.MASK, Effect.REQUIRE_APPROVAL


@fast_init
@dataclass(frozen=True, slots=True)
class Admitted:
    """A call cleared to run: the tool that runs and exactly what it receives."""

    call: ToolCall
    tool: Tool
    arguments: dict[str, Any]
    mask_output: frozenset[str] = frozenset()
    scrub_values: tuple[str, ...] = ()
    prefix: str = ""
    warn: bool = False


PLACEHOLDERS = HIDDEN_MARKERS  # "[masked]", and "[redacted]" in older journals


def is_hidden(value: Any) -> bool:
    """Whether a placeholder stands anywhere in ``value`` for something the journal hid."""
    if isinstance(value, str):
        return any(p in value for p in PLACEHOLDERS)
    if isinstance(value, Mapping):
        return any(is_hidden(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(is_hidden(v) for v in value)
    return False


def check_unredacted(call: ToolCall) -> None:
    """Refuse to run a call rebuilt from a journal in which its arguments were redacted: the
    real values are not there, and running with the placeholder would act on the wrong thing."""
    if is_hidden(call.arguments):
        raise Rejected(refusal(call, "its arguments were hidden from the journal, so after a "
                                     "restart they are not known; make the call again (an "
                                     "agent built with keep_hidden_arguments=True keeps them "
                                     "apart from the journal, in its store, for this)"))


def needs_operator(tool: Tool | None, approved: bool) -> bool:
    """Whether a call that started and left no result (its process died, or the run was
    interrupted) waits for an operator to settle it — retry or skip — instead of running again
    on resume: every side effect, except one declared ``idempotent`` that no person approved
    (an approval is for one run; a tool no longer there is not known to be safe either)."""
    if tool is None:
        return True
    return tool.meta.side_effect and (approved or not tool.meta.idempotent)


def refusal(call: ToolCall, why: str) -> ToolResult:
    return ToolResult(call.id, call.name, f"Refused: calling {call.name!r} is not permitted "
                      f"({why}). Do not retry this call; continue without it or explain what "
                      "is blocked.", "denied")


def skipped(call: ToolCall, why: str) -> ToolResult:
    return ToolResult(call.id, call.name, f"Not executed: {why}.", "skipped")


def shape(call: ToolCall, tool: Tool, arguments: dict[str, Any], decision: Decision,
          warn: bool = False, prefix: str = "") -> Admitted:
    """What ALLOW, PARTIAL_ALLOW and MASK let through. Raises Rejected for the rest."""
    effect = decision.effect
    if effect is _ALLOW:
        return Admitted(call, tool, arguments, prefix=prefix, warn=warn)
    if effect is Effect.PARTIAL_ALLOW:
        allowed = set(decision.fields)
        kept = {k: v for k, v in arguments.items() if k in allowed}
        try:
            kept = tool.validate(kept)
        except Exception as exc:
            dropped = sorted(set(arguments) - allowed)
            raise Rejected(refusal(call, f"policy lets only {sorted(allowed)} through and the "
                                         f"call is invalid without {dropped}: {exc}")) from None
        return Admitted(call, tool, kept, prefix=prefix, warn=warn)
    if effect is Effect.MASK:
        where = decision.mask_in or MASK_TARGETS
        fields = frozenset(decision.fields)
        given = {k: MASKED if "input" in where and k in fields else v
                 for k, v in arguments.items()}
        secrets = tuple(str(arguments[k]) for k in fields  # any length: short ones as tokens
                        if "output" in where and k in arguments and str(arguments[k]))
        return Admitted(call, tool, given, fields if "output" in where else frozenset(),
                        secrets, prefix, warn)
    raise Rejected(refusal(call, decision.reason or f"policy effect {effect.value}"))


def masked_for_journal(arguments: Mapping[str, Any], decision: Decision) -> Mapping[str, Any]:
    """Arguments as the journal may show them under this decision (the same object when nothing
    is hidden)."""
    effect = decision.effect
    journal_mask = effect is _MASK and "journal" in (decision.mask_in or MASK_TARGETS)
    if not decision.fields or not (journal_mask or effect is _REQUIRE_APPROVAL):
        return arguments
    hidden = set(decision.fields)
    return {k: MASKED if k in hidden else v for k, v in arguments.items()}
