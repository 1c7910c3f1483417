"""A 2026-07-28 server's ``InputRequiredResult``: answered, then the call retried (SEP-2322).

Why: in MCP 2026-07-28 a server that needs something of the client during a tool call (a form
for the user, a sampling call, the roots) no longer sends a request on a back-channel; it answers
the call with ``resultType: "input_required"``, ``inputRequests`` (``{key: {method, params}}``)
and an opaque ``requestState``, and the client calls again with ``inputResponses`` (one per key)
and the ``requestState`` echoed. tether answers those requests exactly as it answers a 2025
server's back-channel requests (``tether.mcp.requests``): the same code path, with its checks
(forms only, flat, no secret-looking field, text-only sampling, the size caps, ``MAX_ASKS``), its
configuration (``MCPServer.elicitation`` / ``sampling``: declined by default, ``"relay"`` to the
MCP client waiting on a proxied call, an answerer, the session's model) and its journal events.
Here the attribution is exact — the result belongs to the call that received it — where the
2025 back-channel has to guess which call in flight a request belongs to.

Decisions:

- Everything in the result is untrusted. The SDK parses its shape (a method tether does not
  know, params that do not parse, a ``requestState`` that is not a string are a validation
  error, read by ``malformed`` into a clear ``MCPError``); tether bounds the rest: at most
  ``MAX_INPUT_REQUESTS`` requests a round, keys of at most ``MAX_KEY_CHARS``, a ``requestState``
  of at most ``MAX_STATE_CHARS``, at most ``MAX_ROUNDS`` rounds a call. Past any bound the call
  fails closed, and nothing of that round is answered.
- An answer is a response; a refusal that has no response fails the call. A declined
  elicitation is an answer (``action: "decline"``), sent back like an accepted one. Sampling and
  ``roots/list`` have no way to say no inside ``inputResponses`` (the schema has no error arm),
  so a declined sampling request fails the call with an ``MCPError`` that says why — what the
  SDK's own driver does with a callback's ``ErrorData`` — and so does ``roots/list``: tether
  declares no roots capability and exposes no roots, so a server must not ask; it is refused,
  journaled ``roots.refused``, and the call fails.
- The retry goes through the SDK's public ``ClientSession.call_tool(..., input_responses=,
  request_state=, allow_input_required=True)``: a new request (a new JSON-RPC id), the
  ``requestState`` passed through as the string the SDK read (never parsed, never changed), and
  none at all when the server sent none. The loop is tether's, not the SDK's private driver
  (``mcp.client._input_required``, used only by ``mcp.Client``, which tether does not use): it
  answers through ``tether.mcp.requests`` with the call's own session, one request at a time (a
  call's asks are serialised by its session anyway), keeps tether's bounds and says what went
  wrong in tether's words. Like that driver, a round with a ``requestState`` but no requests
  ("still working") is retried after a short pause that grows to ``STATE_ONLY_PAUSE_MAX``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from tether.mcp.eras import cut
from tether.mcp.errors import MCPError
from tether.mcp.requests import ServerRequests
from tether.tools.asking import CallAsking
from tether.tools.caller import InputNeeded

MAX_ROUNDS = 10  # answered rounds of one call (the SDK's and the TypeScript SDK's default)
MAX_INPUT_REQUESTS = 16  # requests in one round; twice MAX_ASKS of one kind is already refused
MAX_KEY_CHARS = 200  # an input request's key (it is sent back)
MAX_STATE_CHARS = 64 * 1024  # a requestState: opaque, but echoed on every retry
STATE_ONLY_PAUSE = 0.05  # seconds before retrying a round with a requestState and no requests
STATE_ONLY_PAUSE_MAX = 0.25

ARMS = {"elicitation/create": "ElicitRequest", "sampling/createMessage": "CreateMessageRequest",
        "roots/list": "ListRootsRequest"}  # the SDK's model of each method's request
Retry = Callable[[dict[str, Any] | None, str | None], Awaitable[Any]]


def malformed(exc: Any, server: str, tool: str) -> str | None:
    """What a tools/call result that claimed ``input_required`` but did not parse (the SDK's
    ``ValidationError`` ``exc``) did wrong, or None when it was not such a result."""
    errors = [e for e in exc.errors() if len(e.get("loc") or ()) > 1 and "InputRequiredResult"
              in str(e["loc"][0])]  # (a result-level error: no telling what it meant to be)
    if not errors or any(tuple(e["loc"][1:]) == ("resultType",) for e in errors):
        return None  # it did not say input_required: an ordinary result that did not parse
    what = "it is malformed"
    first = errors[0]
    loc = list(first["loc"][1:])
    if loc[:1] == ["requestState"]:
        what = f"its requestState is not a string ({cut(first.get('input'))})"
    elif loc[:1] == ["inputRequests"] and len(loc) >= 2:
        key = loc[1]
        of_key = [e for e in errors if list(e["loc"][1:3]) == ["inputRequests", key]]
        named = [e.get("input") for e in of_key if e["loc"][-1] == "method"]
        method = named[0] if named and isinstance(named[0], str) else None
        arm = ARMS.get(method or "")
        if arm is None:
            asked = cut(repr(method)) if method else "(none)"
            what = (f"input request {cut(repr(key))} asks for method {asked}, which is none of "
                    "elicitation/create, sampling/createMessage, roots/list")
        else:
            params = [e for e in of_key if len(e["loc"]) > 4 and e["loc"][3] == arm
                      and e["loc"][-1] != "method"]
            params.sort(key=lambda e: "URL" in str(e["loc"]))  # a form's problems first
            where = (".".join(str(p) for p in params[0]["loc"][4:] if "Params" not in str(p))
                     if params else "params")
            said = params[0].get("msg", "invalid") if params else "invalid"
            what = (f"input request {cut(repr(key))} ({method}) has params that do not parse "
                    f"({cut(where)}: {cut(said)})")
    elif loc[:1] == ["inputRequests"]:
        what = f"its inputRequests is not an object ({cut(first.get('msg', 'invalid'))})"
    return _failed(server, tool, f"answered with an InputRequiredResult tether cannot read: "
                                 f"{what}")


def _failed(server: str, tool: str, what: str) -> str:
    return (f"MCP server {server!r} {what}; the call of {tool!r} did not complete (it asked for "
            "input first, so it should not have acted yet). Check the server, or ask its "
            "maintainers")


def _bounded(server: str, tool: str, result: Any) -> None:
    """Fail the call closed when ``result`` asks more than tether answers in one round."""
    requests = result.input_requests or {}
    if len(requests) > MAX_INPUT_REQUESTS:
        raise MCPError(_failed(server, tool, f"asked for {len(requests)} inputs in one round "
                                             f"(tether answers at most {MAX_INPUT_REQUESTS})"))
    long = [k for k in requests if len(k) > MAX_KEY_CHARS]
    if long:
        raise MCPError(_failed(server, tool, f"keyed an input request with {len(long[0])} "
                                             f"characters (at most {MAX_KEY_CHARS})"))
    state = result.request_state
    if state is not None and len(state) > MAX_STATE_CHARS:
        raise MCPError(_failed(server, tool, f"sent a requestState of {len(state)} characters "
                                             f"(tether echoes at most {MAX_STATE_CHARS})"))


class InputRounds:
    """The rounds of one call of tool ``tool``: its session's ``asks`` (None for a call made
    outside a session: its elicitations are declined and its sampling refused, unrecorded)."""

    __slots__ = ("asks", "requests", "tool")

    def __init__(self, requests: ServerRequests, tool: str, asks: Any) -> None:
        self.requests = requests
        self.tool = tool
        self.asks: CallAsking | None = asks if isinstance(asks, CallAsking) else None

    @property
    def server(self) -> str:
        return self.requests.server.name

    async def drive(self, result: Any, retry: Retry) -> Any:
        """Answer ``result`` (an ``InputRequiredResult``) and retry with ``retry(responses,
        request_state)`` until the server answers the call; that answer."""
        from mcp_types import InputRequiredResult

        pause = STATE_ONLY_PAUSE
        rounds = 0
        while isinstance(result, InputRequiredResult):
            rounds += 1
            if rounds > MAX_ROUNDS:
                raise MCPError(_failed(self.server, self.tool, f"still asked for input after "
                                       f"{MAX_ROUNDS} rounds (tether answers at most "
                                       f"{MAX_ROUNDS} a call)"))
            _bounded(self.server, self.tool, result)
            responses: dict[str, Any] | None = None
            if result.input_requests:
                pause = STATE_ONLY_PAUSE
                responses = await self.answers(result.input_requests)
            else:  # "still working": the same state back, after a pause
                await asyncio.sleep(pause)
                pause = min(2 * pause, STATE_ONLY_PAUSE_MAX)
            result = await retry(responses, result.request_state)
        return result

    async def answers(self, requests: dict[str, Any]) -> dict[str, Any]:
        """The responses to one round's ``requests``. When they were relayed to a 2026-07-28
        client, which answers on its own next round, every one of them is relayed first, so
        that round carries them all; then the first InputNeeded ends the call, unanswered."""
        responses: dict[str, Any] = {}
        needed: InputNeeded | None = None
        for key, request in requests.items():
            try:
                responses[key] = await self.answer(key, request)
            except InputNeeded as exc:
                needed = needed or exc
        if needed is not None:
            raise needed
        return responses

    async def answer(self, key: str, request: Any) -> Any:
        """The response to one input request, or MCPError when it has none (a refusal)."""
        from mcp_types import CreateMessageRequest, ElicitRequest, ElicitResult, ErrorData

        asks = self.asks
        if isinstance(request, ElicitRequest):
            if asks is None:  # nobody to ask, and no journal to say so in
                return ElicitResult(action="decline")
            return await self.requests.elicit(asks, request.params, key)
        if isinstance(request, CreateMessageRequest):
            answer = (ErrorData(code=-1, message="declined: the call was made outside a "
                                "session, which has no model to sample with")
                      if asks is None else await self.requests.sample(asks, request.params, key))
            if isinstance(answer, ErrorData):
                raise MCPError(_failed(self.server, self.tool, f"asked for a sampling call "
                                       f"(input {cut(repr(key))}), which tether did not make: "
                                       f"{cut(answer.message)}. A 2026 sampling request "
                                       "cannot be declined without failing the call; configure "
                                       "MCPServer(sampling=...) to answer it"))
            return answer
        reason = ("roots/list: tether exposes no roots (it declares no roots capability, so "
                  "a server must not ask for them)")
        if asks is not None:
            await self.requests.refuse(asks, "roots", reason)
        raise MCPError(_failed(self.server, self.tool, f"asked for {reason} (input "
                                                       f"{cut(repr(key))})"))
