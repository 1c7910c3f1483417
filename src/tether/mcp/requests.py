"""Requests an MCP server makes of tether during a tool call: sampling and elicitation.

Why: a server may, while it runs a tool, ask the client to run a prompt on its model
(``sampling/createMessage``) or to ask the user something (``elicitation/create``). Each arrives
on the connection's private loop, from the SDK's receive task, with nothing that says which of
tether's calls it belongs to — so the connection keeps the calls in flight (``calling``) and
hands the request to the session of *that* call (the ``tether.tools.asking.CallAsking``
``MCPTool`` gets from its ``ToolContext.asks``), on the session's own loop, where it is governed,
charged and journaled as anything else the session does.

A 2026-07-28 server asks inside the call's result instead (``InputRequiredResult``), where the
call it belongs to is known: ``tether.mcp.input_required`` answers it through ``elicit`` and
``sample`` here, with that call's asks — the same checks, configuration and journal events.

Decisions:

- Fail closed. With no call in flight, or calls of several sessions in flight on the connection
  (the request cannot be attributed), the request is declined without a record (no session to
  journal it in). With calls of one session, it is the oldest call's. A server's configuration
  (``MCPServer.elicitation`` / ``sampling``) of ``"decline"`` — the default — declines, journaled
  (``elicitation.refused`` / ``sampling.refused``).
- Elicitation: only the form mode, with a flat schema of primitive fields (as the MCP
  specification restricts it); a URL-mode request, a schema of another shape, or one that asks
  for a secret-looking field (a password, a token, a key: the specification says servers must not
  ask for those by form) is declined, journaled. The answer is validated against the requested
  schema (``jsonschema``) and must name no field the schema does not: what the server receives
  is what the form asked for, nothing else. The SDK does not fill defaults; ``accept_defaults``
  is an answerer that does.
- Sampling: text messages only. The server's ``systemPrompt`` is not used as a system prompt
  (tether sends its own, which says the messages are untrusted data), ``includeContext`` is
  ignored (nothing of the session's conversation is ever sent: it is not the server's to read),
  and tools offered in the request are not offered to the model; each such departure is journaled
  with the request. The output is capped at the request's ``maxTokens``, the server's
  ``sampling_max_tokens`` and what the session's budget affords; messages longer than
  ``MAX_SAMPLING_CHARS`` in all are refused.
- Size: a form of more than ``MAX_FIELDS`` fields is declined; an elicitation's message is cut
  at ``MAX_MESSAGE_CHARS``.
- Relaying (``"relay"``, what ``tether mcp proxy`` does by default): when the call was made by
  an MCP client waiting for it (``CallAsking.caller``, a proxied call), the request goes to that
  client — the party the server would have asked without the proxy — after the same checks
  (forms only, flat, no secret-looking field, text sampling only), counted against
  ``MAX_ASKS`` and journaled with the answer (``sampling.relayed`` / ``elicitation.relayed``,
  then ``sampling.answered`` / ``elicitation.answered`` or ``*.refused``); the client's
  elicitation answer is untrusted and checked against the requested schema like any other.
  With no client waiting, or one without the capability, it is declined, journaled. A
  2026-07-28 client answers on the call's next round (``tether.serve.rounds``): a 2025
  upstream's ask is refused with an error (``InputNeeded``'s text), so its call fails; a
  2026-07-28 upstream's round is not answered at all (``InputNeeded`` ends the call, nothing
  is sent back). The client is answered ``InputRequiredResult`` — under the upstream's own key
  when it named one — and on the next round the upstream's tool runs again and its same ask
  is answered with the client's answer.
- Logs and progress of a call whose client waits (``on_log``, ``progress_for``) reach that
  client through its ``Caller`` (scrubbed, a log line cut at its ``MAX_LOG_CHARS``), at most
  ``MAX_LOGS`` / ``MAX_PROGRESS`` a call (the first one dropped journaled, ``log.dropped`` /
  ``progress.dropped``); progress is asked of the server only when the client asked for it. A
  log line with no attributable call (several sessions' calls in flight) is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Iterator, Mapping
from typing import Any, TypeVar

from tether.errors import InvalidArgument
from tether.mcp.config import MCPServer
from tether.tools.asking import CallAsking, Refused, secret_looking
from tether.tools.asking import Question as Question
from tether.tools.caller import LOG_LEVELS, MAX_LOG_CHARS, InputNeeded
from tether.types import Message

T = TypeVar("T")
PRIMITIVES = frozenset({"string", "number", "integer", "boolean"})
MAX_FIELDS = 32  # a form asking more is no question for a person
MAX_MESSAGE_CHARS = 4000  # an elicitation's message, as shown and journaled
MAX_SAMPLING_CHARS = 100_000  # the text of a sampling request's messages, all of them
MAX_LOGS = 200  # log lines of one call relayed to its client; more are dropped
MAX_PROGRESS = 1000  # progress notifications of one call relayed to its client
RELAY_WAIT = 5.0  # seconds a log line or a progress notification may take to reach the client
REJECTED = -1  # the JSON-RPC error code MCP uses for a sampling request the user rejected


def accept_defaults(question: Question) -> dict[str, Any]:
    """An answerer that accepts the form with every field's ``default`` (the SDK does not fill
    them): ``MCPServer.http(..., elicitation=accept_defaults)``."""
    properties = question.schema.get("properties") or {}
    return {name: spec["default"] for name, spec in properties.items()
            if isinstance(spec, Mapping) and "default" in spec}


def form_problem(schema: Any) -> str | None:
    """Why tether does not answer a form with this requested schema, or None."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return "the requested schema is not an object"
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping):
        return "the requested schema's properties are not an object"
    if len(properties) > MAX_FIELDS:
        return f"the form asks for {len(properties)} fields (at most {MAX_FIELDS})"
    for name, spec in properties.items():
        if not isinstance(spec, Mapping):
            return f"field {name!r} has no schema"
        kind = spec.get("type")
        items = spec.get("items")
        flat = kind in PRIMITIVES or (kind == "array" and isinstance(items, Mapping)
                                      and items.get("type", "string") == "string")
        if not flat:
            return f"field {name!r} is not a string, number, integer, boolean or string list"
        if secret_looking(str(name)) or spec.get("format") == "password":
            return (f"it asks for {name!r}, which looks like a secret; a server must not ask "
                    "for secrets by form")
    try:
        from jsonschema import Draft202012Validator

        Draft202012Validator.check_schema(dict(schema))
    except Exception as exc:
        return f"the requested schema is not valid JSON Schema ({str(exc).splitlines()[0]})"
    return None


def checker(schema: Mapping[str, Any]) -> Any:
    """The check of an answer to a form of ``schema``: the content, or ValueError."""
    def check(answer: Any) -> dict[str, Any]:
        if not isinstance(answer, Mapping):
            raise InvalidArgument(f"the answer is a {type(answer).__name__}, not an object")
        content = dict(answer)
        extra = sorted(set(content) - set(schema.get("properties") or {}))
        if extra:
            raise InvalidArgument(f"it has fields the form does not ask for: {extra}")
        from jsonschema import Draft202012Validator

        error = next(iter(Draft202012Validator(dict(schema)).iter_errors(content)), None)
        if error is not None:
            where = "/".join(map(str, error.absolute_path)) or "(the form)"
            raise InvalidArgument(f"{where}: {error.message}")
        return content

    return check


class ServerRequests:
    """The sampling and elicitation callbacks of one connection (``Connection``), and the calls
    in flight they are routed to."""

    __slots__ = ("_calls", "server")

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self._calls: list[CallAsking | None] = []

    @contextlib.contextmanager
    def calling(self, asks: Any) -> Iterator[None]:
        """A call is in flight on the connection for as long as this lasts; ``asks``: the
        call's ``CallAsking`` (None for a call made outside a session)."""
        entry = asks if isinstance(asks, CallAsking) else None
        self._calls.append(entry)
        try:
            yield
        finally:
            self._calls.remove(entry)

    def _owner(self) -> CallAsking | None:
        """The asks of the call a request belongs to, or None when it cannot be told."""
        calls = self._calls
        if not calls or any(c is None for c in calls):
            return None
        first = calls[0]
        assert first is not None
        if any(c is not None and c.session_id != first.session_id for c in calls):
            return None
        return first

    @staticmethod
    async def _on(asks: CallAsking, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the session's loop (where its journal and accountant live)."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, asks.loop))

    async def _tell(self, asks: CallAsking, kind: str, coro: Coroutine[Any, Any, None]) -> None:
        """Tell the call's client a log line or progress (``coro``, run on the session's loop)
        when the call's tally of ``kind`` allows it; best effort, bounded by ``RELAY_WAIT``."""
        async def tell() -> None:
            if asks.tally(kind, self.server.name, MAX_LOGS if kind == "log" else MAX_PROGRESS):
                await coro
            else:
                coro.close()

        with contextlib.suppress(Exception):
            async with asyncio.timeout(RELAY_WAIT):
                await self._on(asks, tell())

    def progress_for(self, asks: Any) -> Any:
        """The ``progress_callback`` of a call whose client waits and asked for progress
        (``Caller.wants_progress``), or None: the server is asked for none."""
        caller = getattr(asks, "caller", None)
        if caller is None or not getattr(caller, "wants_progress", False):
            return None

        async def progress(value: float, total: float | None, message: str | None) -> None:
            await self._tell(asks, "progress", caller.progress(
                float(value), None if total is None else float(total),
                None if message is None else str(message)[:MAX_MESSAGE_CHARS]))

        return progress

    def log_level_for(self, asks: Any) -> str | None:
        """The level a 2026-07-28 server is asked to log a call at (its request's ``_meta``
        ``io.modelcontextprotocol/logLevel``): that of the client waiting for the call, or
        None — nobody waits to be told, so the server is asked for no log lines."""
        caller = getattr(asks, "caller", None)
        level = getattr(caller, "log_level", None)
        return level if level in LOG_LEVELS else None

    async def on_log(self, params: Any) -> None:
        """The server's ``notifications/message``: to the client of the call in flight."""
        asks = self._owner()
        caller = None if asks is None else asks.caller
        if asks is None or caller is None:
            return
        data = params.data
        text = data if isinstance(data, str) else _json(data)
        level = params.level if params.level in LOG_LEVELS else "info"
        logger = None if params.logger is None else str(params.logger)[:200]
        await self._tell(asks, "log", caller.log(level, text[:MAX_LOG_CHARS + 1],
                                                 logger=logger))

    async def refuse(self, asks: CallAsking, kind: str, reason: str) -> None:
        async def refuse() -> None:
            asks.refuse(kind, self.server.name, reason)

        with contextlib.suppress(Refused):
            await self._on(asks, refuse())

    # -- the SDK's callbacks (the 2025 back-channel) ---------------------------------------

    async def on_elicitation(self, context: Any, params: Any) -> Any:
        """A 2025 server's ``elicitation/create``: the call in flight's (``_owner``)."""
        from mcp import types

        asks = self._owner()
        if asks is None:
            return types.ElicitResult(action="decline")
        try:
            return await self.elicit(asks, params)
        except InputNeeded as exc:  # the server's call fails; it runs again next round
            return types.ErrorData(code=REJECTED, message=str(exc))

    async def on_sampling(self, context: Any, params: Any) -> Any:
        """A 2025 server's ``sampling/createMessage``: the call in flight's (``_owner``)."""
        from mcp import types

        asks = self._owner()
        if asks is None:
            return types.ErrorData(code=REJECTED, message="tether cannot tell which of its "
                                   "calls this sampling request belongs to; declined")
        try:
            return await self.sample(asks, params)
        except InputNeeded as exc:  # as for an elicitation
            return types.ErrorData(code=REJECTED, message=str(exc))

    # -- the answers, for the call whose session ``asks`` is (2025 or 2026-07-28) ----------

    async def elicit(self, asks: CallAsking, params: Any, key: str | None = None) -> Any:
        """The ``ElicitResult`` to an elicitation's ``params`` (a decline is an answer too).
        ``key``: the server's name for the ask (a 2026-07-28 input request's), relayed with it.
        InputNeeded when relayed to a 2026-07-28 client, which answers on its next round."""
        from mcp import types

        decline = types.ElicitResult(action="decline")
        server = self.server
        schema = getattr(params, "requested_schema", None)
        if getattr(params, "mode", "form") == "url" or schema is None:
            await self.refuse(asks, "elicitation", "a URL-mode elicitation: tether answers "
                               "forms only")
            return decline
        if server.elicitation == "decline":
            await self.refuse(asks, "elicitation", f"MCP server {server.name!r} is configured "
                               "to have its elicitations declined (MCPServer(elicitation=...))")
            return decline
        problem = form_problem(schema)
        if problem is not None:
            await self.refuse(asks, "elicitation", f"declined: {problem}")
            return decline
        message = str(params.message)
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[:MAX_MESSAGE_CHARS] + " [tether: cut]"
        if server.elicitation == "relay":
            if asks.caller is None:
                await self.refuse(asks, "elicitation", "no MCP client waits for this call to "
                                   "relay the elicitation to")
                return decline
            try:
                content = await self._on(asks, asks.relay_elicit(server.name, message, schema,
                                                                 checker(schema), key))
            except Refused:
                return decline
            return decline if content is None else types.ElicitResult(action="accept",
                                                                      content=content)
        answerer = None if server.elicitation == "ask" else server.elicitation
        try:
            content = await self._on(asks, asks.elicit(server.name, message, schema, answerer,
                                                       checker(schema)))
        except Refused:
            return decline
        if content is None:
            return decline
        return types.ElicitResult(action="accept", content=content)

    async def sample(self, asks: CallAsking, params: Any, key: str | None = None) -> Any:
        """The ``CreateMessageResult`` to a sampling request's ``params``, or the ``ErrorData``
        that declines it; ``key`` and InputNeeded as ``elicit``'s."""
        from mcp import types

        server = self.server
        if server.sampling == "decline":
            reason = (f"MCP server {server.name!r} is configured to have its sampling requests "
                      "declined (MCPServer(sampling=...))")
            await self.refuse(asks, "sampling", reason)
            return types.ErrorData(code=REJECTED, message=f"declined: {reason}")
        messages: list[Message] = []
        for message in params.messages:
            content = message.content
            parts = content if isinstance(content, list) else [content]
            if not all(getattr(p, "type", None) == "text" for p in parts):
                reason = "only text sampling messages are answered"
                await self.refuse(asks, "sampling", reason)
                return types.ErrorData(code=REJECTED, message=f"declined: {reason}")
            text = "\n".join(str(p.text) for p in parts)
            messages.append(Message("assistant" if message.role == "assistant" else "user", text))
        size = sum(len(m.content) for m in messages)
        if size > MAX_SAMPLING_CHARS:
            reason = (f"its messages are {size} characters long (at most "
                      f"{MAX_SAMPLING_CHARS})")
            await self.refuse(asks, "sampling", reason)
            return types.ErrorData(code=REJECTED, message=f"declined: {reason}")
        notes = []
        if params.system_prompt:
            notes.append("its systemPrompt was not used (tether sends its own)")
        if params.include_context not in (None, "none"):
            notes.append(f"includeContext {params.include_context!r} was ignored (no context of "
                         "the session is ever sent)")
        if params.tools:
            notes.append("the tools it offered were not offered to the model")
        cap = max(1, min(int(params.max_tokens), server.sampling_max_tokens))
        try:
            if server.sampling == "relay":
                if asks.caller is None:
                    reason = "no MCP client waits for this call to relay the request to"
                    await self.refuse(asks, "sampling", reason)
                    return types.ErrorData(code=REJECTED, message=f"declined: {reason}")
                system = None if params.system_prompt is None else str(params.system_prompt)
                answer = await self._on(asks, asks.relay_sample(server.name, messages, cap,
                                                                system, key))
                return types.CreateMessageResult(
                    role="assistant", model=answer.model, stop_reason="endTurn",
                    content=types.TextContent(type="text",
                                              text=answer.text[:MAX_SAMPLING_CHARS]))
            answer = await self._on(asks, asks.sample(server.name, messages, cap, notes))
        except Refused as refused:
            return types.ErrorData(code=REJECTED, message=f"declined: {refused}")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=answer.text),
            model=answer.model,
            stop_reason="maxTokens" if answer.finish_reason == "length" else "endTurn")


def _json(data: Any) -> str:
    import json

    try:
        return json.dumps(data, ensure_ascii=False, default=str)[:MAX_LOG_CHARS + 1]
    except (TypeError, ValueError):
        return str(data)[:MAX_LOG_CHARS + 1]
