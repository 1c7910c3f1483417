"""Tool execution: the gates before a tool runs and the guards around it while it runs.

Decision: each gate returns a result the model can act on instead of raising — unknown tool
(listing the visible ones), malformed JSON (showing what arrived), schema mismatch (naming the
field) — so every call gets a result and the run goes on. Running a tool is bounded: a timeout
that returns on time (blocking tools run on daemon threads, so a hung one is abandoned, never
awaited), exceptions become error results, and oversized output is cut with an announcement.
Budget and policy are not this module's business; the turn pipeline (``turn.py``) calls them
between the gates and the run.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from tether.errors import RunError
from tether.journal.redaction import MASKED
from tether.runtime.accounting.stop import Stop
from tether.runtime.chokepoint.additions import truncated
from tether.runtime.chokepoint.eager import start
from tether.runtime.record.result import ToolResult, ToolStatus
from tether.tools.base import Tool, ToolArgumentError, ToolContext, ToolFailure
from tether.tools.content import (
    Content,
    Part,
    TooMuchBinary,
    check_binary,
    cut,
    render,
    scrubbed,
)
from tether.tools.registry import ToolRegistry
from tether.types import ToolCall, detached

MAX_SHOWN_RAW = 200


class Rejected(RunError):
    """A gate refused the call before it ran; ``result`` is what the model is told."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.content)
        self.result = result


def unknown_tool(call: ToolCall, visible: Sequence[str]) -> ToolResult:
    """What a call to a tool the model may not name is told: the tools it may."""
    return ToolResult(call.id, call.name, f"Error: unknown tool {call.name!r}. Available "
                      f"tools: {', '.join(visible) or '(none)'}.", "rejected")


class ToolExecutor:
    __slots__ = ("max_result_chars", "registry")

    def __init__(self, registry: ToolRegistry, max_result_chars: int = 20_000) -> None:
        self.registry = registry
        self.max_result_chars = max_result_chars

    def resolve(self, call: ToolCall) -> tuple[Tool, dict[str, Any]]:
        """Run the gates: the tool exists, the arguments are a JSON object matching its schema."""
        tool = self.registry.get(call.name)
        if tool is None:
            raise Rejected(unknown_tool(call, self.registry.names))
        return tool, self.validate(tool, call)

    def validate(self, tool: Tool, call: ToolCall) -> dict[str, Any]:
        """The arguments of ``call`` validated against ``tool``'s schema, or Rejected. They are
        detached from the call's own objects: what a policy decides on next cannot be changed
        by whoever else holds the model's arguments (a strategy, a concurrent task)."""
        if isinstance(call.arguments, str):
            shown = call.arguments[:MAX_SHOWN_RAW]
            more = "…" if len(call.arguments) > MAX_SHOWN_RAW else ""
            raise Rejected(ToolResult(
                call.id, call.name, f"Error: the arguments for {call.name!r} are not a JSON "
                f"object. Received: {shown!r}{more}. Send the arguments as a JSON object.",
                "rejected"))
        started = time.monotonic()
        try:
            validated: dict[str, Any] = detached(tool.validate(call.arguments))
        except ToolArgumentError as exc:
            raise Rejected(ToolResult(
                call.id, call.name, f"Error: invalid arguments for {tool.name!r}: field "
                f"{exc.field!r}: {exc}. Fix that field and call again.", "rejected")) from None
        except Exception as exc:  # a tool's own validate() failed some other way
            raise Rejected(ToolResult(
                call.id, call.name, f"Error: invalid arguments for {tool.name!r}: "
                f"{type(exc).__name__}: {exc}.", "rejected")) from None
        took = time.monotonic() - started
        if took > tool.meta.timeout:  # validation shares the tool's timeout
            raise Rejected(ToolResult(
                call.id, call.name, f"Error: {tool.name!r} timed out validating its arguments "
                f"({took:.3g}s, longer than its {tool.meta.timeout:.3g}s timeout); it did not "
                "run.", "timeout"))
        return validated

    async def run(self, tool: Tool, call_id: str, arguments: dict[str, Any],
                  context: ToolContext, timeout: float, *,
                  mask_fields: frozenset[str] = frozenset(),
                  scrub: Callable[[str], str] | None = None,
                  max_chars: int | None = None) -> ToolResult:
        """Run a resolved tool with a timeout; never raises except on cancellation.

        ``mask_fields`` are redacted from a structured result before it is rendered; ``scrub``
        cleans the rendered text (and any error message) before anyone sees it; ``max_chars``
        lowers the size limit for this call (the budget's room for results).
        """
        scope = None
        status: ToolStatus
        parts: tuple[Part, ...] = ()
        try:
            value, rest = start(tool.invoke(arguments, context))
            if rest is not None:  # it suspended: the rest runs under the timer
                scope = asyncio.timeout(timeout)
                async with scope:
                    value = await rest
            if isinstance(value, Content):
                try:
                    parts = self._parts(value, max_chars, scrub)
                except TooMuchBinary as exc:
                    raise ToolFailure(f"Error: {tool.name!r} returned too much: {exc}") from None
                text, status = render(parts), "ok"
            else:
                if mask_fields:
                    value = mask_structure(value, mask_fields)
                text, status = self._render(value, max_chars, scrub), "ok"
        except (Exception, SystemExit, Stop) as exc:  # a tool can neither end the host nor the run
            if isinstance(exc, TimeoutError) and scope is not None and scope.expired():
                text = f"Error: {tool.name!r} timed out after {timeout:.3g}s and was abandoned."
                status = "timeout"
            elif isinstance(exc, ToolFailure):  # the tool's own words, as they are
                text, status = exc.text, "timeout" if exc.status == "timeout" else "error"
            else:
                text = f"Error: {tool.name!r} failed: {type(exc).__name__}: {exc}"
                status = "error"
        if scrub is not None and status != "ok":  # ok results were scrubbed before the cut
            text = scrub(text)
        return ToolResult(call_id, tool.name, text, status, parts)

    def _parts(self, value: Content, max_chars: int | None,
               scrub: Callable[[str], str] | None) -> tuple[Part, ...]:
        """A Content result's parts: bounded in bytes (TooMuchBinary past the limit), their
        text scrubbed, then cut to the size limit (``tether.tools.content``)."""
        check_binary(value.parts)
        parts = value.parts if scrub is None else scrubbed(value.parts, scrub)
        limit = self.max_result_chars if max_chars is None else min(max_chars,
                                                                    self.max_result_chars)
        return cut(parts, limit)

    def _render(self, value: Any, max_chars: int | None = None,
                scrub: Callable[[str], str] | None = None) -> str:
        """The result as text: scrubbed first (a secret cut in half would escape the scrubber),
        then cut to the size limit with an announcement."""
        if isinstance(value, str):
            text = value
        else:
            try:
                text = json.dumps(value, ensure_ascii=False, default=str)
            except (TypeError, ValueError):
                text = str(value)
        if scrub is not None:
            text = scrub(text)
        limit = self.max_result_chars if max_chars is None else min(max_chars,
                                                                    self.max_result_chars)
        if len(text) > limit:
            text = truncated(text, limit)
        return text



def check_not_cancelled() -> None:
    """Raise ``CancelledError`` when the running task was asked to stop and something on the way
    swallowed the request (a tool that caught it and returned): the run stops all the same,
    after what the tool returned is recorded."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError



def mask_structure(value: Any, fields: frozenset[str]) -> Any:
    """A copy of ``value`` with every mapping key in ``fields`` replaced by ``[masked]``."""
    if isinstance(value, dict):
        return {k: MASKED if k in fields else mask_structure(v, fields) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_structure(v, fields) for v in value]
    return value
