"""pydantic-ai's own agent under tether: its tool calls pass the chokepoint, its model is metered.

Why: a pydantic-ai user keeps pydantic-ai's loop, output types, retries and message history;
what tether adds is the promise — every tool call the agent makes is decided, budgeted and
journaled, every model call it makes is reserved against the budget before it is sent — through
the two seams pydantic-ai offers: a ``WrapperToolset`` (where each tool call is made) and a
``WrapperModel`` (where each model request is made). Both feed one ``GovernedRun``
(``tether.integrations.governed``), so the journal reads like a native session's.

Decision: a tether approval is pydantic-ai's own pause. A call the policy sends to a person
raises ``ApprovalRequired``, so ``agent.run`` ends with ``DeferredToolRequests``; the person
decides in tether's approval store; ``resume_with(requests)`` hands pydantic-ai the calls back,
and the door — not pydantic-ai's approval flag — runs an approved call once, refuses a denied
one with the approver's words, and defers an undecided one again. A refusal is the tool's
return, so the model reads the policy's reason. What the model sees of a result is what was
journaled (tether's text of it). A tool's metadata is declared as any foreign tool's is — a
``ToolMeta`` per name, or a tools overlay — and, undeclared, read cautiously (side effects,
egress, untrusted output). pydantic-ai is imported here only: ``import tether`` never loads it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.errors import MissingExtra, WrongType, install_command

try:
    from pydantic_ai import DeferredToolRequests, DeferredToolResults
    from pydantic_ai.exceptions import ApprovalRequired
    from pydantic_ai.messages import (
        ModelMessage,
        ModelMessagesTypeAdapter,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.messages import ModelRequest as AIRequest
    from pydantic_ai.messages import ModelResponse as AIResponse
    from pydantic_ai.models import Model as AIModel
    from pydantic_ai.models import ModelRequestParameters, StreamedResponse
    from pydantic_ai.models.wrapper import WrapperModel
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.tools import Tool as AITool
    from pydantic_ai.toolsets import AbstractToolset, FunctionToolset, WrapperToolset
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise MissingExtra("tether.integrations.pydantic_ai needs pydantic-ai: "
                       f"{install_command('pydantic-ai')}") from exc

from tether.integrations.decided import Reader
from tether.integrations.governed import GovernedRun
from tether.integrations.governed_model import Metered
from tether.integrations.runs import ForeignRun, declared_tools
from tether.models.base import (
    CHARS_PER_TOKEN,
    estimate_message_tokens,
    estimate_tools_tokens,
)
from tether.tools.base import Tool, ToolMeta
from tether.types import Message, ModelResponse, ToolCall, ToolSpec, Usage

if TYPE_CHECKING:
    from pydantic_ai import RunContext
    from pydantic_ai.toolsets.abstract import ToolsetTool

    from tether.policy.base import Policy
    from tether.policy.overlay import Overlay

APPROVAL_KEY = "tether_approval_id"  # in DeferredToolRequests.metadata: tether's approval


@dataclass
class TetherToolset(WrapperToolset[Any]):
    """pydantic-ai tools whose every call goes through tether's door."""

    governed: GovernedRun | None = None

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any],
                        tool: ToolsetTool[Any]) -> Any:
        governed = self.governed
        assert governed is not None, "TetherToolset needs its GovernedRun (use PydanticAIRun)"
        wrapped = self.wrapped

        async def body(arguments: dict[str, Any]) -> Any:
            return await wrapped.call_tool(name, arguments, ctx, tool)

        outcome = await governed.call(ctx.tool_call_id or name, name, tool_args, body)
        if outcome.approval_id is not None:  # pydantic-ai's own pause
            raise ApprovalRequired(metadata={APPROVAL_KEY: outcome.approval_id,
                                             "reason": outcome.result.content})
        return outcome.result.content


class TetherModel(WrapperModel):
    """A pydantic-ai model whose every request is reserved, capped and charged by tether."""

    def __init__(self, wrapped: AIModel, governed: GovernedRun) -> None:
        super().__init__(wrapped)
        self.governed = governed
        self._seen = 0  # messages of the conversation already journaled

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> AIResponse:
        metered, settings = await self._reserve(messages, model_settings,
                                                model_request_parameters)
        try:
            response = await self.wrapped.request(messages, settings, model_request_parameters)
        except BaseException as exc:
            await self.governed.failed(metered, exc)
            raise
        await self._charge(metered, response)
        return response

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage],
                             model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: RunContext[Any] | None = None,
                             ) -> AsyncGenerator[StreamedResponse]:
        metered, settings = await self._reserve(messages, model_settings,
                                                model_request_parameters)
        try:
            async with self.wrapped.request_stream(messages, settings, model_request_parameters,
                                                   run_context) as stream:
                yield stream
        except BaseException as exc:
            await self.governed.failed(metered, exc)
            raise
        await self._charge(metered, stream.get())

    async def _reserve(self, messages: list[ModelMessage], settings: ModelSettings | None,
                       parameters: ModelRequestParameters) -> tuple[Metered, ModelSettings]:
        new = messages[self._seen:] if self._seen <= len(messages) else messages
        asked = dict(settings or {})
        ceiling = asked.get("max_tokens")
        metered = await self.governed.reserve(
            estimate(messages, parameters), new=[m for r in new for m in _messages(r)],
            ceiling=ceiling if isinstance(ceiling, int) else None)
        self._seen = len(messages) + 1  # and the answer
        if metered.max_output_tokens is not None:  # the cap the budget leaves, sent
            asked["max_tokens"] = metered.max_output_tokens
        return metered, ModelSettings(**asked)  # type: ignore[typeddict-item]

    async def _charge(self, metered: Metered, response: AIResponse) -> None:
        governed, calls, outside = self.governed.registry, [], []
        for part in response.parts:
            if isinstance(part, ToolCallPart):
                if governed.get(part.tool_name) is None:
                    outside.append(part.tool_name)  # an output tool, or a tool not wrapped
                    continue
                try:
                    arguments: Mapping[str, Any] | str = part.args_as_dict()
                except ValueError:
                    arguments = part.args if isinstance(part.args, str) else str(part.args)
                calls.append(ToolCall(part.tool_call_id, part.tool_name, arguments))
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        u = response.usage
        usage = Usage(u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens)
        if u.unmeasured_requests or (u.input_tokens == 0 and u.output_tokens == 0):
            # the provider reported nothing: tether's own counts, erring high
            usage = Usage(metered.reservation.input_tokens,
                          -(-len(ModelMessagesTypeAdapter.dump_json([response])) //
                            CHARS_PER_TOKEN), estimated=True)
        finish = response.finish_reason
        await self.governed.charge(metered, ModelResponse(
            text, tuple(calls), usage, response.model_name or self.wrapped.model_name,
            "tool_calls" if finish == "tool_call" else finish or "stop"), outside)


def estimate(messages: Sequence[ModelMessage], parameters: ModelRequestParameters) -> int:
    """tether's estimate of a request's input tokens — its messages and tools, counted as a
    native request's are (``tether.models.base``: erring high); a provider's reports that
    come in higher scale later estimates up (``Tally.input_scale``)."""
    tools = [ToolSpec(t.name, t.description or "", t.parameters_json_schema)
             for t in (*parameters.function_tools, *parameters.output_tools)]
    return estimate_tools_tokens(tools) + sum(
        estimate_message_tokens(m) for message in messages for m in _messages(message, True))


def _messages(message: ModelMessage, answers: bool = False) -> list[Message]:
    """A pydantic-ai message as tether messages: a request's parts (for the journal's
    ``model.request``, and estimates), and with ``answers`` a response's text and calls."""
    if not isinstance(message, AIRequest):
        if not answers:
            return []  # an answer: journaled already, as the model's response
        return [Message.assistant(
            "".join(p.content for p in message.parts if isinstance(p, TextPart)),
            tuple(ToolCall(p.tool_call_id, p.tool_name, p.args_as_json_str())
                  for p in message.parts if isinstance(p, ToolCallPart)))]
    out = [Message.system(message.instructions)] if message.instructions else []
    for part in message.parts:
        if isinstance(part, SystemPromptPart):
            out.append(Message.system(part.content))
        elif isinstance(part, UserPromptPart):
            content = part.content
            out.append(Message.user(content if isinstance(content, str) else str(content)))
        elif isinstance(part, ToolReturnPart):
            out.append(Message.tool(part.tool_call_id, part.tool_name,
                                    part.model_response_str()))
        elif isinstance(part, RetryPromptPart):
            text = part.model_response()
            out.append(Message.tool(part.tool_call_id, part.tool_name, text)
                       if part.tool_name else Message.user(text))
    return out


def foreign_tools(toolset: AbstractToolset[Any], meta: Mapping[str, ToolMeta] | None = None,
                  overlay: Overlay | None = None) -> tuple[Tool, ...]:
    """tether's view of a pydantic-ai toolset's tools: each one's name, description and schema,
    its metadata from ``meta`` (by name) and then ``overlay``, else the cautious reading."""
    if not isinstance(toolset, FunctionToolset):
        raise WrongType(f"tether needs the tools up front to decide on them; "
                        f"{type(toolset).__name__} lists its tools only during a run. Pass a "
                        "FunctionToolset, or pydantic-ai Tools or functions")
    if type(toolset).call_tool is not FunctionToolset.call_tool:
        raise WrongType(f"{type(toolset).__name__} overrides call_tool, which runs after "
                        "tether's decision and could run arguments nobody decided; put that "
                        "layer outside run.toolset (a WrapperToolset around it), where tether "
                        "decides on what it hands on")
    return declared_tools([ToolSpec(name, t.tool_def.description or "",
                                    t.tool_def.parameters_json_schema)
                           for name, t in toolset.tools.items()], meta, overlay,
                          {name: _reader(t) for name, t in toolset.tools.items()})


def _reader(tool: AITool[Any]) -> Reader:
    """pydantic-ai's own reading of a tool's arguments (its schema's validator, as its tool
    manager runs it before any call): the door decides on what the function will get."""
    validator = tool.function_schema.validator

    def read(arguments: Mapping[str, Any]) -> dict[str, Any]:
        read: dict[str, Any] = validator.validate_python(dict(arguments))
        return read

    return read


class PydanticAIRun(ForeignRun):
    """One pydantic-ai agent's work on one request, governed as one tether session.

    Give the agent ``run.model`` and ``run.toolset``, and let its output type include
    ``DeferredToolRequests``; resume a paused run with ``resume_with``; ``close`` at the end.
    ``options`` are ``GovernedRun``'s: ``budget``, ``price``, ``store``, ``approvals``, the
    subject (``user``, ``tenant_id``, ``roles``), ``limits``, and ``resume=`` the id of a stored
    run to continue it in this process (``tether.integrations.reopen``).
    """

    def __init__(self, tools: AbstractToolset[Any] | Iterable[Any], *, policy: Policy,
                 request: str, model: AIModel | None = None,
                 meta: Mapping[str, ToolMeta] | None = None, overlay: Overlay | None = None,
                 **options: Any) -> None:
        toolset = tools if isinstance(tools, AbstractToolset) else FunctionToolset(list(tools))
        name = model.model_name if model is not None else ""
        self.governed = GovernedRun(foreign_tools(toolset, meta, overlay), policy=policy,
                                    request=request, framework="pydantic-ai", model=name,
                                    **options)
        self.toolset = TetherToolset(toolset, self.governed)
        self.model = TetherModel(model, self.governed) if model is not None else None

    def resume_with(self, requests: DeferredToolRequests) -> DeferredToolResults:
        """The results that hand tether's paused calls back to pydantic-ai: each goes through
        the door again, which runs it once if a person approved it, refuses it with their words
        if they denied it, and pauses it again if nobody has decided yet."""
        return DeferredToolResults(approvals={
            c.tool_call_id: True for c in requests.approvals
            if APPROVAL_KEY in requests.metadata.get(c.tool_call_id, {})})

