"""LangGraph's own agent under tether: its tool calls pass the chokepoint, its model is metered.

Why: a LangGraph user keeps LangGraph's graph, state, checkpointer and streaming; what tether
adds is the promise — every tool call the agent makes is decided, budgeted and journaled, every
model call it makes is reserved against the budget before it is sent — through the seams
LangChain's agent offers: an ``AgentMiddleware`` whose ``wrap_tool_call`` stands where each
tool call is made (also usable alone as a ``ToolNode(wrap_tool_call=...)``) and whose
``wrap_model_call`` stands where each model call is made. Both feed one ``GovernedRun``
(``tether.integrations.governed``), so the journal reads like a native session's.

Decision: a tether approval is LangGraph's own pause. A call the policy sends to a person calls
``interrupt`` with tether's approval id, so the graph stops with ``__interrupt__``; the person
decides in tether's approval store; ``Command(resume=...)`` re-runs the tool node, and the door
— not the resume value — runs an approved call once, refuses a denied one with the approver's
words, and pauses an undecided one again. LangGraph re-runs a node from its start on resume (and
on a replay from an earlier checkpoint): the door answers a call it already resolved with the
recorded result, so nothing runs twice. A refusal is the ``ToolMessage`` the model reads, with
the policy's reason; what the model reads of a result is what was journaled. The sync graph API
(``invoke``/``stream``) is served too: the door then runs on the run's own event loop, one call
at a time. LangGraph and LangChain are imported here only: ``import tether`` never loads them.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from tether.errors import MissingExtra, WrongState, install_command

try:
    from langchain.agents.middleware.types import (
        AgentMiddleware,
        ExtendedModelResponse,
        ModelRequest,
        ModelResponse,
    )
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
    )
    from langchain_core.tools import BaseTool
    from langchain_core.tools import tool as as_tool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command, interrupt
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise MissingExtra("tether.integrations.langgraph needs LangGraph and LangChain: "
                       f"{install_command('langgraph')}") from exc

from tether.integrations.governed import GovernedRun
from tether.integrations.governed_model import Metered
from tether.integrations.governed_tools import Outcome
from tether.integrations.langgraph_tools import guarded, reader
from tether.integrations.nesting import NestedRunError
from tether.integrations.runs import ForeignRun, declared_tools
from tether.models.base import (
    CHARS_PER_TOKEN,
    estimate_message_tokens,
    estimate_text_tokens,
    estimate_tools_tokens,
)
from tether.tools.base import Tool, ToolFailure, ToolMeta
from tether.types import FinishReason, Message, ToolCall, ToolSpec, Usage
from tether.types import ModelResponse as Answer

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from tether.policy.base import Policy
    from tether.policy.overlay import Overlay

APPROVAL_KEY = "tether_approval_id"  # in the interrupt's value: tether's approval
ToolOutput = ToolMessage | Command[Any]
Handler = Callable[[ToolCallRequest], Awaitable[ToolOutput]]
T = TypeVar("T")
# providers' words for why an answer ended (OpenAI's finish_reason, Anthropic's stop_reason)
FINISH: dict[str, FinishReason] = {
    "stop": "stop", "end_turn": "stop", "stop_sequence": "stop", "length": "length",
    "max_tokens": "length", "content_filter": "content_filter", "refusal": "content_filter",
    "tool_calls": "tool_calls", "tool_use": "tool_calls"}


class TetherMiddleware(AgentMiddleware):
    """A LangChain agent middleware: each tool call through tether's door, each model call
    reserved, capped and charged. ``cap_setting``: the model setting that carries the output
    cap (``max_tokens`` for OpenAI's and Anthropic's chat models; None sends no cap)."""

    def __init__(self, governed: GovernedRun, *, cap_setting: str | None = "max_tokens",
                 passthrough: Iterable[str] = ()) -> None:
        self.governed, self.cap_setting = governed, cap_setting
        self.passthrough = frozenset(passthrough)  # other middleware's tools, not governed
        self.tools = []
        self._made: dict[str, ToolOutput] = {}  # framework call id -> what the tool returned
        self._seen = 0  # messages of the conversation already journaled
        self._lock = threading.Lock()  # the sync API: one door call at a time, on one loop
        self._runner: asyncio.Runner | None = None

    @property
    def name(self) -> str:
        return "tether"

    # -- the tool door -------------------------------------------------------------------------

    async def awrap_tool_call(self, request: ToolCallRequest, handler: Handler) -> ToolOutput:
        name = request.tool_call["name"]
        if name in self.passthrough:
            return await handler(request)
        outcome = await self._door(request, handler)
        self._wait(request, outcome)
        return self._answer(request, outcome)

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], ToolOutput]) -> ToolOutput:
        if request.tool_call["name"] in self.passthrough:
            return handler(request)

        async def run(r: ToolCallRequest) -> ToolOutput:
            return handler(r)

        outcome = self._blocking(self._door(request, run))
        self._wait(request, outcome)
        return self._answer(request, outcome)

    async def _door(self, request: ToolCallRequest, handler: Handler) -> Outcome:
        call = request.tool_call
        call_id = call.get("id") or call["name"]

        async def body(arguments: dict[str, Any]) -> Any:
            made = await handler(request.override(tool_call={**call, "args": arguments}))
            self._made[call_id] = made
            text = _text_of(made, call_id)
            if isinstance(made, ToolMessage) and made.status == "error":
                raise ToolFailure(text)  # a failure, counted as one (tool error ceiling)
            return text

        return await self.governed.call(call_id, call["name"], call["args"], body)

    def _wait(self, request: ToolCallRequest, outcome: Outcome) -> None:
        """LangGraph's pause for a call that waits for a person. A resume value LangGraph
        replays to this node was given before the person decided (the door read the store
        first): it decides nothing, so ask again until LangGraph has no value left to replay
        and pauses the graph (``GraphInterrupt``)."""
        if outcome.approval_id is None:
            return
        record = self.governed.approvals.get(outcome.approval_id)
        ask = {APPROVAL_KEY: outcome.approval_id, "tool": request.tool_call["name"],
               "arguments": request.tool_call["args"],
               "reason": record.reason if record is not None else outcome.result.content,
               "policy_id": record.policy_id if record is not None else None}
        while True:
            interrupt(ask)

    def _answer(self, request: ToolCallRequest, outcome: Outcome) -> ToolOutput:
        """The ToolMessage the model reads: tether's text of the result (what the journal
        holds); a Command the tool returned keeps its state update, with that text."""
        call, result = request.tool_call, outcome.result
        call_id = call.get("id") or call["name"]
        status = "success" if result.status == "ok" else "error"
        made = self._made.get(call_id)
        if isinstance(made, Command) and status == "success":
            return _with_text(made, call_id, result.content)
        if isinstance(made, ToolMessage):
            return made.model_copy(update={"content": result.content, "status": status})
        return ToolMessage(content=result.content, tool_call_id=call_id, name=call["name"],
                           status=status)

    # -- the model meter -----------------------------------------------------------------------

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[Any]],
                               ) -> Any:
        metered, request = await self._reserve(request)
        try:
            response = await handler(request)
        except BaseException as exc:
            await self.governed.failed(metered, exc)
            raise
        await self._charge(metered, response, _model_name(request.model))
        return response

    def wrap_model_call(self, request: ModelRequest,
                        handler: Callable[[ModelRequest], Any]) -> Any:
        metered, request = self._blocking(self._reserve(request))
        try:
            response = handler(request)
        except BaseException as exc:
            self._blocking(self.governed.failed(metered, exc))
            raise
        self._blocking(self._charge(metered, response, _model_name(request.model)))
        return response

    async def _reserve(self, request: ModelRequest,
                       ) -> tuple[Metered, ModelRequest]:
        messages = request.messages
        new = messages[self._seen:] if self._seen <= len(messages) else messages
        if self._seen == 0 and request.system_message is not None:
            new = [request.system_message, *new]  # what the first call is told, journaled
        settings = dict(request.model_settings)
        asked = settings.get(self.cap_setting) if self.cap_setting else None
        if not isinstance(asked, int):
            asked = getattr(request.model, "max_tokens", None)
        metered = await self.governed.reserve(
            estimate(request, self.governed.registry.specs),
            new=[m for r in new for m in _messages(r)],
            ceiling=asked if isinstance(asked, int) and asked > 0 else None)
        self._seen = len(messages) + 1  # and the answer
        if metered.max_output_tokens is not None and self.cap_setting:
            settings[self.cap_setting] = metered.max_output_tokens  # the cap the budget leaves
            request = request.override(model_settings=settings)
        return metered, request

    async def _charge(self, metered: Metered, response: Any, model: str) -> None:
        if isinstance(response, ExtendedModelResponse):
            response = response.model_response
        made = response.result if isinstance(response, ModelResponse) else [response]
        answer = next((m for m in reversed(made) if isinstance(m, AIMessage)), None)
        if answer is None:
            answer = AIMessage(content="")
        registry, calls, outside = self.governed.registry, [], []
        for c in answer.tool_calls:
            if registry.get(c["name"]) is None:
                outside.append(c["name"])  # structured output, or a tool tether does not govern
                continue
            calls.append(ToolCall(c.get("id") or c["name"], c["name"], c["args"]))
        outside += [c.get("name") or "?" for c in answer.invalid_tool_calls]
        u = answer.usage_metadata
        if u is None or (u["input_tokens"] == 0 and u["output_tokens"] == 0):
            # the provider reported nothing: tether's own counts, erring high
            said = json.dumps([answer.content, answer.tool_calls], default=str)
            usage = Usage(metered.reservation.input_tokens,
                          -(-len(said) // CHARS_PER_TOKEN), estimated=True)
        else:
            details = u.get("input_token_details") or {}
            usage = Usage(u["input_tokens"], u["output_tokens"],
                          details.get("cache_read") or 0, details.get("cache_creation") or 0)
        meta = answer.response_metadata
        name = meta.get("model_name") or meta.get("model") or model
        finish = FINISH.get(str(meta.get("finish_reason") or meta.get("stop_reason")), "stop")
        await self.governed.charge(metered, Answer(
            str(answer.text), tuple(calls), usage, str(name),
            "tool_calls" if calls else finish), outside)

    # -- the sync API ----------------------------------------------------------------------------

    def _blocking(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` to its end from LangGraph's sync API: on this run's own event loop, one
        at a time (LangGraph runs a turn's tool calls in threads), in the caller's context;
        NestedRunError from inside one of the run's own tool calls (it would wait on itself)."""
        try:
            self.governed.not_nested()
        except NestedRunError:
            work.close()
            raise
        with self._lock:
            if self._runner is None:
                self._runner = asyncio.Runner()
            try:
                return self._runner.run(work, context=contextvars.copy_context())
            except RuntimeError as exc:
                if "running event loop" not in str(exc):
                    raise
                work.close()
                raise WrongState("tether's LangGraph middleware was called through the sync "
                                 "API (invoke, stream) inside a running event loop; use "
                                 "ainvoke or astream there") from exc

    def close(self) -> None:
        with self._lock:
            if self._runner is not None:
                self._runner.close()
                self._runner = None


def _text_of(made: ToolOutput, call_id: str) -> str:
    """A tool's output as text: its ToolMessage's, or the one in a Command's update."""
    if isinstance(made, Command):
        update = made.update
        found = [m for m in (update.get("messages") or []) if isinstance(m, ToolMessage)
                 and m.tool_call_id == call_id] if isinstance(update, dict) else []
        return str(found[0].text) if found else json.dumps(update, default=str)
    if isinstance(made, ToolMessage):
        return made.content if isinstance(made.content, str) else str(made.text)
    return str(made)


def _with_text(command: Command[Any], call_id: str, text: str) -> Command[Any]:
    """``command`` with the call's ToolMessage reading ``text`` (what tether journaled)."""
    update = command.update
    if not isinstance(update, dict) or not isinstance(update.get("messages"), list):
        return command
    messages = [m.model_copy(update={"content": text})
                if isinstance(m, ToolMessage) and m.tool_call_id == call_id else m
                for m in update["messages"]]
    return replace(command, update={**update, "messages": messages})


def estimate(request: ModelRequest, known: Sequence[ToolSpec] = ()) -> int:
    """tether's estimate of a model request's input tokens — its messages, tools and output
    schema, counted as a native request's are (``tether.models.base``: erring high). ``known``:
    the governed tools' specs, read once (a LangChain tool's schema is costly to derive)."""
    system = [request.system_message] if request.system_message is not None else []
    specs = {s.name: s for s in known}
    total = estimate_tools_tokens([
        specs.get(t.name) or _spec(t) if isinstance(t, BaseTool) else _spec(t)
        for t in request.tools])
    if request.response_format is not None:
        total += estimate_text_tokens(repr(request.response_format))
    return total + sum(estimate_message_tokens(m) for message in (*system, *request.messages)
                       for m in _messages(message, True))


def _spec(tool: BaseTool | Mapping[str, Any]) -> ToolSpec:
    described = convert_to_openai_tool(tool)
    function = described.get("function", described)
    return ToolSpec(str(function.get("name", "")), str(function.get("description", "")),
                    function.get("parameters") or {})


def _messages(message: BaseMessage, answers: bool = False) -> list[Message]:
    """A LangChain message as tether messages: the input a model call sends (for the journal's
    ``model.request``, and estimates), and with ``answers`` the model's own answers too."""
    text = str(message.text)
    if isinstance(message, AIMessage):
        if not answers:
            return []  # an answer: journaled already, as the model's response
        return [Message.assistant(text, tuple(
            ToolCall(c.get("id") or c["name"], c["name"], json.dumps(c["args"], default=str))
            for c in message.tool_calls))]
    if isinstance(message, SystemMessage):
        return [Message.system(text)]
    if isinstance(message, ToolMessage):
        return [Message.tool(message.tool_call_id, message.name or "", text)]
    if isinstance(message, HumanMessage):
        return [Message.user(text)]
    return [Message.user(text)]


def _model_name(model: BaseChatModel | str | None) -> str:
    if model is None or isinstance(model, str):
        return model or ""
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return str(model._llm_type)


def foreign_tools(tools: Sequence[BaseTool], meta: Mapping[str, ToolMeta] | None = None,
                  overlay: Overlay | None = None) -> tuple[Tool, ...]:
    """tether's view of LangChain tools: each one's name, description and schema (what the
    model sees: injected arguments left out), its metadata from ``meta`` (by name) and then
    ``overlay``, else the cautious reading."""
    readers = {t.name: read for t in tools if (read := reader(t)) is not None}
    return declared_tools([_spec(t) for t in tools], meta, overlay, readers)


class LangGraphRun(ForeignRun):
    """One LangGraph agent's work on one request, governed as one tether session.

    Give ``create_agent`` ``run.tools`` and ``middleware=[run.middleware]`` and a checkpointer
    (approvals pause the graph); resume a paused graph with ``Command(resume=...)`` once a
    person decided; ``close`` at the end. For a graph of your own, ``ToolNode(run.tools,
    wrap_tool_call=run.middleware.wrap_tool_call,
    awrap_tool_call=run.middleware.awrap_tool_call)`` governs its tools (its model is then not
    metered). ``options`` are ``GovernedRun``'s: ``budget``, ``price``, ``store``,
    ``approvals``, the subject (``user``, ``tenant_id``, ``roles``), ``limits``, and ``resume=``
    the id of a stored run to continue it in this process (``tether.integrations.reopen``).
    """

    def __init__(self, tools: Iterable[BaseTool | Callable[..., Any]], *, policy: Policy,
                 request: str, model: BaseChatModel | str | None = None,
                 meta: Mapping[str, ToolMeta] | None = None, overlay: Overlay | None = None,
                 cap_setting: str | None = "max_tokens", passthrough: Iterable[str] = (),
                 **options: Any) -> None:
        given = [t if isinstance(t, BaseTool) else as_tool(t) for t in tools]
        declared = foreign_tools(given, meta, overlay)
        self.governed = GovernedRun(declared, policy=policy, request=request,
                                    framework="langgraph", model=_model_name(model), **options)
        # what the graph runs: each tool's body checks it got the decided arguments
        self.tools: list[BaseTool] = [
            guarded(t, set(d.spec.parameters.get("properties") or {}))
            for t, d in zip(given, declared, strict=True)]
        self.middleware = TetherMiddleware(self.governed, cap_setting=cap_setting,
                                           passthrough=passthrough)

    def close(self, answer: object = "") -> None:
        """End the session (``finished``), recording the agent's answer: text, a message's
        text, or the last message of a LangGraph state."""
        if isinstance(answer, Mapping) and answer.get("messages"):
            answer = answer["messages"][-1]
        if isinstance(answer, BaseMessage):
            answer = str(answer.text)
        super().close(answer)
        self.middleware.close()
