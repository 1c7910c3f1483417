"""The OpenAI Agents SDK's own agent under tether: its tool calls pass the chokepoint, its model
is metered.

Why: an Agents SDK user keeps the SDK's ``Runner`` loop, handoffs, guardrails, sessions and
``RunState``; what tether adds is the promise — every call of a governed tool is decided,
budgeted and journaled, every model call is reserved against the budget before it is sent —
through the seams the SDK offers: a ``FunctionTool``'s own invoker and its ``needs_approval``
(where each call is run, and where the SDK asks whether it must wait), and the ``Model``
interface (where each model call is made). Both feed one ``GovernedRun``
(``tether.integrations.governed``), so the journal reads like a native session's.

Decision: the door stands in the tool's ``on_invoke_tool``, not in a ``tool_input_guardrail``:
a guardrail can refuse but not run the call, and tether's decision and run are one step (the
arguments the decision covers are the ones the tool gets); the invoker is the call itself. A
tether approval is the SDK's own pause: the tool's ``needs_approval`` asks tether, which
answers yes only for a call the policy sends to a person (asked there, through the door, before
the SDK would run it), so ``Runner.run`` returns with ``interruptions``. The person decides in
tether's approval store; ``resume_with(state)`` approves in the SDK only the calls a person has
decided there, and the door — not the SDK's flag — runs an approved call once, refuses a denied
one with the approver's words, and hands a second resume the recorded result. A refusal is the
tool's output, so the model reads the policy's reason. The Agents SDK is imported here only:
``import tether`` never loads it.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidArgument, MissingExtra, WrongType, install_command

try:
    from agents import FunctionTool, function_tool
    from agents.exceptions import AgentsException
    from agents.function_schema import FuncSchema, function_schema
    from agents.items import ModelResponse as AgentsResponse
    from agents.models.interface import Model, ModelTracing
    from agents.run_state import RunState
    from openai.types.responses import ResponseCompletedEvent
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise MissingExtra("tether.integrations.openai_agents needs the OpenAI Agents SDK: "
                       f"{install_command('openai-agents')}") from exc

from tether.integrations.decided import Reader, arrived, jsonable
from tether.integrations.governed import GovernedRun, RunStopped
from tether.integrations.governed_model import Metered
from tether.integrations.runs import ForeignRun, declared_tools
from tether.models.base import CHARS_PER_TOKEN, estimate_message_tokens, estimate_tools_tokens
from tether.tools.base import Tool, ToolMeta
from tether.types import Message, ModelResponse, ToolCall, ToolSpec, Usage

if TYPE_CHECKING:
    from agents.agent_output import AgentOutputSchemaBase
    from agents.handoffs import Handoff
    from agents.items import TResponseInputItem, TResponseStreamEvent
    from agents.model_settings import ModelSettings
    from agents.tool import Tool as AgentsTool
    from agents.tool_context import ToolContext
    from openai.types.responses.response_prompt_param import ResponsePromptParam

    from tether.policy.base import Policy
    from tether.policy.overlay import Overlay


class AgentsRunStopped(RunStopped, AgentsException):
    """``RunStopped`` as the Agents SDK lets it through its loop unchanged (the SDK wraps any
    other exception a tool raises in its ``UserError``)."""

    def __init__(self, stopped: RunStopped) -> None:
        super().__init__(stopped.reason, stopped.detail)


def governed_tool(tool: FunctionTool, governed: GovernedRun) -> FunctionTool:
    """A copy of ``tool`` whose every call goes through tether's door, and whose
    ``needs_approval`` is tether's: the SDK pauses a call exactly when tether does."""
    if tool.needs_approval is not False:
        raise InvalidArgument(f"tool {tool.name!r} has the SDK's own needs_approval; tether's "
                              "approval store decides for governed tools: let the policy ask for "
                              "approvals (REQUIRE_APPROVAL) and drop needs_approval")
    if getattr(tool, "_is_agent_tool", False):
        raise InvalidArgument(f"tool {tool.name!r} is an agent run as a tool; run that agent from "
                              "a function tool of yours, with an OpenAIAgentsRun of its own made "
                              "there with parent=run (its tools and model governed, on this run's "
                              "budget and policy)")
    name, original, own = tool.name, tool.on_invoke_tool, _function_of(tool)

    async def invoke(ctx: ToolContext[Any], raw: str) -> Any:
        try:
            arguments = json.loads(raw or "{}")
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):  # journaled with the model's answer; not run
            return f"Error: the arguments of {name!r} are not a JSON object; it was not run."

        async def body(allowed: dict[str, Any]) -> Any:  # only what the decision covers
            if own is None:  # a tool of its own making: it reads exactly this JSON
                return await original(ctx, json.dumps(allowed))
            return await _run_function(name, *own, ctx, allowed)

        try:
            outcome = await governed.call(ctx.tool_call_id or name, name, arguments, body)
        except RunStopped as stopped:
            raise AgentsRunStopped(stopped) from None
        return outcome.result.content

    async def needs_approval(_: Any, arguments: dict[str, Any], call_id: str) -> bool:
        try:
            return await governed.ask_first(call_id, name, arguments)
        except RunStopped as stopped:
            raise AgentsRunStopped(stopped) from None

    wrapped = copy.copy(tool)
    wrapped.on_invoke_tool = invoke
    wrapped.needs_approval = needs_approval
    return wrapped


def _function_of(tool: FunctionTool) -> tuple[Callable[..., Any], FuncSchema] | None:
    """A ``function_tool``'s function and the schema the SDK reads its arguments with, rebuilt
    from it (tether reads and runs them the same way); None for a FunctionTool made by hand."""
    function = getattr(tool, "__wrapped__", None)  # the SDK's: the function_tool's callable
    if function is None:
        return None
    try:
        return function, function_schema(function)
    except Exception as exc:
        raise InvalidArgument(f"tether cannot read the arguments of tool {tool.name!r} as its "
                              f"function does ({exc}); make it a function_tool of a plain "
                              "function") from None


def reader(tool: FunctionTool) -> Reader | None:
    """The SDK's reading of a ``function_tool``'s arguments (its schema's validation, every
    field, in JSON form): what the door decides on is what the function will get."""
    own = _function_of(tool)
    if own is None:
        return None
    model = own[1].params_pydantic_model

    def read(arguments: Mapping[str, Any]) -> dict[str, Any]:
        parsed = model(**arguments)
        return {k: jsonable(getattr(parsed, k)) for k in type(parsed).model_fields}

    return read


async def _run_function(name: str, function: Callable[..., Any], schema: FuncSchema,
                        ctx: ToolContext[Any], allowed: dict[str, Any]) -> Any:
    """Run a ``function_tool``'s function itself with the decided arguments, as the SDK would
    (its context first when it takes one; a plain function in a thread) — and only if its
    schema reads them back as they are (``arrived``): nothing validates them after that."""
    parsed = schema.params_pydantic_model(**allowed)
    fields = type(parsed).model_fields
    arrived(name, {k: getattr(parsed, k) for k in fields}, fields)
    args, kwargs = schema.to_call_args(parsed)
    if schema.takes_context:
        args = [ctx, *args]
    if inspect.iscoroutinefunction(function):
        return await function(*args, **kwargs)
    result = await asyncio.to_thread(function, *args, **kwargs)
    return await result if inspect.isawaitable(result) else result


class TetherModel(Model):
    """An Agents SDK model whose every call is reserved, capped and charged by tether."""

    def __init__(self, wrapped: Model, governed: GovernedRun) -> None:
        self.wrapped = wrapped
        self.governed = governed
        self._seen = 0  # input items already journaled

    async def get_response(
            self, system_instructions: str | None, input: str | list[TResponseInputItem],
            model_settings: ModelSettings, tools: list[AgentsTool],
            output_schema: AgentOutputSchemaBase | None, handoffs: list[Handoff],
            tracing: ModelTracing, *, previous_response_id: str | None,
            conversation_id: str | None, prompt: ResponsePromptParam | None) -> AgentsResponse:
        metered, settings = await self._reserve(system_instructions, input, model_settings,
                                                tools, output_schema, handoffs,
                                                previous_response_id or conversation_id)
        try:
            response = await self.wrapped.get_response(
                system_instructions, input, settings, tools, output_schema, handoffs, tracing,
                previous_response_id=previous_response_id, conversation_id=conversation_id,
                prompt=prompt)
        except BaseException as exc:
            await self.governed.failed(metered, exc)
            raise
        u = response.usage
        cached = getattr(u.input_tokens_details, "cached_tokens", 0) or 0
        await self._charge(metered, response.output, None if u.requests == 0 else Usage(
            u.input_tokens, u.output_tokens, cached), len(input))
        return response

    async def stream_response(
            self, system_instructions: str | None, input: str | list[TResponseInputItem],
            model_settings: ModelSettings, tools: list[AgentsTool],
            output_schema: AgentOutputSchemaBase | None, handoffs: list[Handoff],
            tracing: ModelTracing, *, previous_response_id: str | None,
            conversation_id: str | None, prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        metered, settings = await self._reserve(system_instructions, input, model_settings,
                                                tools, output_schema, handoffs,
                                                previous_response_id or conversation_id)
        final: Any = None
        try:
            async for event in self.wrapped.stream_response(
                    system_instructions, input, settings, tools, output_schema, handoffs,
                    tracing, previous_response_id=previous_response_id,
                    conversation_id=conversation_id, prompt=prompt):
                if isinstance(event, ResponseCompletedEvent):
                    final = event.response
                yield event
        except BaseException as exc:
            await self.governed.failed(metered, exc)
            raise
        output = list(getattr(final, "output", None) or ())
        u = getattr(final, "usage", None)
        usage = None if u is None else Usage(u.input_tokens, u.output_tokens, getattr(
            u.input_tokens_details, "cached_tokens", 0) or 0)
        await self._charge(metered, output, usage, len(input))

    async def close(self) -> None:
        await self.wrapped.close()

    def get_retry_advice(self, request: Any) -> Any:
        return self.wrapped.get_retry_advice(request)

    async def _reserve(self, system: str | None, input: str | list[TResponseInputItem],
                       settings: ModelSettings, tools: Sequence[AgentsTool],
                       output_schema: AgentOutputSchemaBase | None,
                       handoffs: Sequence[Handoff], stored: str | None,
                       ) -> tuple[Metered, ModelSettings]:
        items = [input] if isinstance(input, str) else list(input)
        fresh = items if stored or self._seen > len(items) else items[self._seen:]
        new = ([Message.system(system)] if system and not self._seen else []) + _messages(fresh)
        metered = await self.governed.reserve(
            estimate(system, items, tools, output_schema, handoffs), new=new,
            ceiling=settings.max_tokens)
        self._seen = len(items)
        if metered.max_output_tokens is not None:  # the cap the budget leaves, sent
            settings = settings.resolve(type(settings)(max_tokens=metered.max_output_tokens))
        return metered, settings

    async def _charge(self, metered: Metered, output: Sequence[Any], usage: Usage | None,
                      sent: int) -> None:
        registry, calls, outside, text = self.governed.registry, [], [], []
        for item in output:
            kind = _get(item, "type")
            if kind == "function_call":
                name = _get(item, "name")
                if registry.get(name) is None:
                    outside.append(name)  # a handoff, an MCP server's tool, a tool not wrapped
                    continue
                raw = _get(item, "arguments") or "{}"
                try:
                    arguments: Mapping[str, Any] | str = json.loads(raw)
                except ValueError:
                    arguments = raw
                if not isinstance(arguments, Mapping):
                    arguments = raw
                calls.append(ToolCall(_get(item, "call_id"), name, arguments))
            elif kind == "message":
                text.append(_text(_get(item, "content")))
            elif kind != "reasoning":
                outside.append(str(kind))  # a hosted tool (web search, MCP, code ...) ran
        if usage is None or (usage.input_tokens == 0 and usage.output_tokens == 0):
            # the provider reported nothing: tether's own counts, erring high
            dumped = json.dumps([_dump(i) for i in output], default=str)
            usage = Usage(metered.reservation.input_tokens,
                          -(-len(dumped) // CHARS_PER_TOKEN), estimated=True)
        self._seen = sent + len(output)
        await self.governed.charge(metered, ModelResponse(
            "".join(text), tuple(calls), usage, _model_name(self.wrapped),
            "tool_calls" if calls else "stop"), outside)


def estimate(system: str | None, items: Sequence[Any], tools: Sequence[Any],
             output_schema: AgentOutputSchemaBase | None, handoffs: Sequence[Handoff]) -> int:
    """tether's estimate of a model call's input tokens — its instructions, items, tools and
    output schema, counted as a native request's are (``tether.models.base``: erring high)."""
    specs = [ToolSpec(t.name, t.description, t.params_json_schema) for t in tools
             if isinstance(t, FunctionTool)]
    specs += [ToolSpec(h.tool_name, h.tool_description, h.input_json_schema) for h in handoffs]
    chars = sum(len(repr(t)) for t in tools if not isinstance(t, FunctionTool))
    if output_schema is not None and not output_schema.is_plain_text():
        chars += len(json.dumps(output_schema.json_schema()))
    known = _messages(items, answers=True)
    chars += sum(len(json.dumps(_dump(i), default=str)) for i in items if not _plain(i))
    return (estimate_tools_tokens(specs) + sum(estimate_message_tokens(m) for m in known)
            + (estimate_message_tokens(Message.system(system)) if system else 0)
            + -(-chars // CHARS_PER_TOKEN))


def _messages(items: Sequence[Any], answers: bool = False) -> list[Message]:
    """Input items as tether messages: the user's, the system's and tool outputs (for the
    journal's ``model.request``), and with ``answers`` the model's own text and calls."""
    names = {_get(i, "call_id"): _get(i, "name") for i in items
             if _get(i, "type") == "function_call"}
    out: list[Message] = []
    for item in items:
        if isinstance(item, str):
            out.append(Message.user(item))
            continue
        kind, role = _get(item, "type"), _get(item, "role")
        if kind == "function_call_output":
            call_id = _get(item, "call_id")
            out.append(Message.tool(call_id, names.get(call_id) or "",
                                    _text(_get(item, "output"))))
        elif kind == "function_call" and answers:
            out.append(Message.assistant("", (ToolCall(_get(item, "call_id"), _get(item, "name"),
                                                       _get(item, "arguments") or "{}"),)))
        elif role in ("system", "developer"):
            out.append(Message.system(_text(_get(item, "content"))))
        elif role == "user":
            out.append(Message.user(_text(_get(item, "content"))))
        elif role == "assistant" and answers:
            out.append(Message.assistant(_text(_get(item, "content"))))
    return out


def _plain(item: Any) -> bool:
    """Whether ``_messages`` reads the item (the rest is estimated by its length)."""
    return isinstance(item, str) or _get(item, "type") in (
        "function_call", "function_call_output") or _get(item, "role") in (
        "system", "developer", "user", "assistant")


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


def _dump(item: Any) -> Any:
    dump = getattr(item, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else item


def _text(content: Any) -> str:
    """The text of an item's content: a string, or its parts' text (other parts by kind)."""
    if content is None or isinstance(content, str):
        return content or ""
    parts = []
    for part in content if isinstance(content, list) else [content]:
        text = _get(part, "text") or _get(part, "refusal")
        parts.append(text if isinstance(text, str) else f"[{_get(part, 'type') or 'part'}]")
    return "".join(parts)


def _model_name(model: Model) -> str:
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__


def foreign_tools(tools: Sequence[FunctionTool], meta: Mapping[str, ToolMeta] | None = None,
                  overlay: Overlay | None = None) -> tuple[Tool, ...]:
    """tether's view of Agents SDK function tools: each one's name, description and schema,
    its metadata from ``meta`` (by name) and then ``overlay``, else the cautious reading."""
    readers = {t.name: read for t in tools if (read := reader(t)) is not None}
    return declared_tools([ToolSpec(t.name, t.description, t.params_json_schema)
                           for t in tools], meta, overlay, readers)


def _function_tools(tools: Iterable[Any]) -> list[FunctionTool]:
    out = []
    for tool in tools:
        if isinstance(tool, FunctionTool):
            out.append(tool)
        elif callable(tool) and not hasattr(tool, "type"):
            out.append(function_tool(tool))
        else:
            raise WrongType(f"tether governs the SDK's function tools; {type(tool).__name__} "
                            "runs at the provider or outside the function-tool API. Give it to "
                            "the Agent directly (tether does not govern it) or leave it out")
    return out


class OpenAIAgentsRun(ForeignRun):
    """One Agents SDK agent's work on one request, governed as one tether session.

    Give the agent ``run.tools`` and ``model=run.model``; when ``Runner.run`` returns with
    ``interruptions``, a person decides in tether's approval store, then
    ``state = result.to_state(); run.resume_with(state); await Runner.run(agent, state)``;
    ``close`` at the end. ``options`` are ``GovernedRun``'s: ``budget``, ``price``, ``store``,
    ``approvals``, the subject (``user``, ``tenant_id``, ``roles``), ``limits``, and
    ``resume=`` the id of a stored run to continue it in this process.
    """

    def __init__(self, tools: Iterable[FunctionTool | Callable[..., Any]], *, policy: Policy,
                 request: str, model: Model | None = None,
                 meta: Mapping[str, ToolMeta] | None = None, overlay: Overlay | None = None,
                 **options: Any) -> None:
        found = _function_tools(tools)
        name = _model_name(model) if model is not None else ""
        self.governed = GovernedRun(foreign_tools(found, meta, overlay), policy=policy,
                                    request=request, framework="openai-agents", model=name,
                                    **options)
        self.tools = [governed_tool(t, self.governed) for t in found]
        self.model = TetherModel(model, self.governed) if model is not None else None

    def resume_with(self, state: RunState[Any, Any]) -> int:
        """Approve in the SDK's ``state`` each call tether paused that a person has decided in
        tether's approval store, so resuming hands it to the door: it runs once if approved, is
        refused with the approver's words if denied, and a call resolved before gets its
        recorded result. Undecided ones stay paused. Returns how many were handed back."""
        handed = 0
        for item in state.get_interruptions():
            call_id = _get(item.raw_item, "call_id")
            if isinstance(call_id, str) and self.governed.decided(call_id):
                state.approve(item)
                handed += 1
        return handed

