"""A tool's asks answered by MCP's multi-round-trip (SEP-2322) on a 2026-07-28 request.

Why: a 2026-07-28 request has no back-channel, so a tool that asks its client's model
(sampling) or user (elicitation) cannot wait for the answer on the same request. The server
answers ``InputRequiredResult`` instead — the input requests and a sealed ``requestState`` —
and the client calls again carrying the answers. The tool runs again from the start on each
round; its asks that the request answers return those answers.

Decisions:

- The asks of one run are numbered in order (``elicitation-1``, ``sampling-2``, … or the key a
  tool gives, ``Caller.elicit(..., key=...)``), so a tool that asks the same things in the same
  order on each run finds its earlier answers. The first ask no answer exists for records its
  input request and raises ``InputNeeded`` (a ``CallerCannot``) into the tool; further asks of
  the same run (a tool gathering several at once) are recorded too, so one round can carry
  them all.
- What a client answers is untrusted input, checked when the tool asks for it by the same
  functions the back-channel's answers pass (``ClientCaller``): a sampling answer must be a
  ``CreateMessageResult`` (its text is what the tool gets), an elicitation answer an
  ``ElicitResult`` whose accepted content matches the requested schema. An answer of the wrong
  kind or shape fails the ask (``CallerCannot``), never reaching the tool. Answers to keys the
  tool did not ask are ignored, as the spec says.
- ``requestState`` carries the answers so far (each checked when it was first used). It is
  sealed and bound by the SDK's ``RequestStateBoundary`` (AES-GCM; the tool's name, its
  arguments' digest, the client key as principal, the server's name as audience, a ttl): a
  tampered, expired or foreign state is answered -32602 before any handler runs, so it never
  reaches a tool or the gateway. The key is made per process (random, as the SDK's
  ``RequestStateSecurity.ephemeral``) unless ``TETHER_MCP_STATE_KEY`` is set when the server
  starts (read once, never logged or journaled; at least 32 bytes): replicas behind one
  address share it, so a client's next round may land on another replica.
- Bounds: ``MAX_ROUNDS`` rounds a call, ``MAX_ANSWERS`` answers carried, ``MAX_STATE_CHARS``
  of state. Past them the ask fails (a plain ``CallerCannot``), and so does the call unless
  the tool does without.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

import mcp_types as types
from pydantic import ValidationError

from tether.errors import InvalidArgument
from tether.tools.caller import CallerCannot, Elicited, InputNeeded

STATE_KEY_ENV = "TETHER_MCP_STATE_KEY"
MAX_ROUNDS = 8  # rounds of one call (the client's calls carrying a requestState)
MAX_ANSWERS = 32  # answers one requestState carries
MAX_STATE_CHARS = 64_000  # the unsealed state's JSON
STATE_VERSION = 1


def invalid_state() -> Exception:
    """The -32602 a request whose ``requestState`` is not this server's gets (the SDK's own
    words, so a client cannot tell which check refused it)."""
    from mcp.shared.exceptions import MCPError

    return MCPError(code=types.INVALID_PARAMS, message="Invalid or expired requestState",
                    data={"reason": "invalid_request_state"})


def state_security(principal: Callable[[Any], str | None],
                   key: str | bytes | None = None) -> Any:
    """The ``RequestStateSecurity`` of a server starting now, binding each state to
    ``principal(ctx)`` (the server's client key): ``key``, else ``TETHER_MCP_STATE_KEY``'s
    (shared by replicas), else a key only this process holds."""
    from mcp.server.request_state import RequestStateSecurity

    secret = key or os.environ.get(STATE_KEY_ENV) or os.urandom(32)
    try:
        return RequestStateSecurity(keys=[secret], bind_principal=principal)
    except ValueError as exc:  # the SDK's message names the key's length, never the key
        raise InvalidArgument(f"{STATE_KEY_ENV} cannot seal requestState: {exc}") from None


class Rounds:
    """The asks of one run of a tool on a 2026-07-28 request, and the answers it carries."""

    __slots__ = ("_answered", "_given", "_used", "count", "pending", "round")

    def __init__(self, answered: Mapping[str, Any], given: Mapping[str, Any],
                 round_: int) -> None:
        self._answered = dict(answered)  # earlier rounds' answers, checked: key -> value
        self._given = dict(given)  # this round's input_responses (unchecked)
        self._used: dict[str, Any] = {}  # the answers this run used, checked
        self.count = 0
        self.round = round_
        self.pending: dict[str, types.InputRequest] = {}

    @classmethod
    def of(cls, params: types.CallToolRequestParams) -> Rounds:
        """The rounds of a request: its (already unsealed) ``requestState`` and its answers.
        A state the SDK's boundary passed is this server's own; still, one that is not what
        this module writes is refused (-32602)."""
        answered: dict[str, Any] = {}
        round_ = 1
        if params.request_state is not None:
            state: Any = None
            try:
                state = json.loads(params.request_state)
                answered = dict(state["answers"])
                round_ = int(state["round"]) + 1
            except (ValueError, TypeError, KeyError, AttributeError):
                state = None
            if not isinstance(state, dict) or state.get("v") != STATE_VERSION:
                raise invalid_state()  # the JSON-RPC error the SDK's boundary answers
        given = {k: v.model_dump(by_alias=True, mode="json", exclude_none=True)
                 for k, v in (params.input_responses or {}).items()}
        return cls(answered, given, round_)

    def key(self, kind: str, given: str | None) -> str:
        """The key of the run's next ask (numbered in order; a tool's own key if it gave one)."""
        self.count += 1
        if given is None:
            return f"{kind}-{self.count}"
        return str(given)[:100]

    def answer(self, key: str, kind: str) -> Any:
        """The raw answer to ask ``key`` of ``kind`` (an earlier round's, else this round's),
        or None when there is none yet."""
        if key in self._answered:
            entry = self._answered[key]
            if not isinstance(entry, Mapping) or entry.get("kind") != kind:
                raise CallerCannot(f"the answer carried for {key!r} is not a {kind} answer")
            return entry.get("answer")
        return self._given.get(key)

    def use(self, key: str, kind: str, answer: Any) -> None:
        """Remember a checked answer, carried in the next round's state."""
        self._used[key] = {"kind": kind, "answer": answer}

    def ask(self, key: str, request: types.InputRequest) -> CallerCannot:
        """Record ``request`` for the client and the error the tool gets; a plain
        ``CallerCannot`` past the bounds."""
        if self.round >= MAX_ROUNDS:
            return CallerCannot(
                f"the tool asked its MCP client for input in {MAX_ROUNDS} rounds of this call "
                "(at most that many); the call cannot ask again")
        if len({**self._answered, **self._used}) + len(self.pending) >= MAX_ANSWERS:
            return CallerCannot(f"the tool asked its MCP client more than {MAX_ANSWERS} things "
                                "in one call; it cannot ask again")
        if len(self.state()) > MAX_STATE_CHARS:
            return CallerCannot(f"the answers of this call exceed {MAX_STATE_CHARS} characters; "
                                "it cannot ask again")
        self.pending[key] = request
        return InputNeeded(f"the tool asked its MCP client for input ({key!r}); the client is "
                           "answered with InputRequiredResult and calls again with the answer, "
                           "and the tool runs again")

    def state(self) -> str:
        """The next round's state (sealed by the boundary on the way out)."""
        answers = {**self._answered, **self._used}
        return json.dumps({"v": STATE_VERSION, "round": self.round, "answers": answers},
                          separators=(",", ":"), sort_keys=True)


def parsed(model: type[Any], raw: Any, key: str) -> Any:
    """``raw`` as ``model`` (an MCP result type), or CallerCannot naming what is wrong."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "/".join(map(str, first.get("loc", ()))) or "(the answer)"
        raise CallerCannot(f"the MCP client's answer to {key!r} is not a "
                           f"{model.__name__} ({where}: {first.get('msg')})") from None


def sampled_text(result: types.CreateMessageResult) -> str:
    """What a tool gets of a client's sampling answer (either era): its text blocks."""
    content = result.content
    blocks = content if isinstance(content, list) else [content]
    return "\n".join(str(b.text) for b in blocks if isinstance(b, types.TextContent))


def elicited(answer: types.ElicitResult, schema: Mapping[str, Any]) -> Elicited:
    """What a tool gets of a client's elicitation answer (either era): the action, and for an
    accepted form its content checked against the requested schema (``tether.mcp.requests.
    checker``: the schema's fields only, valid); CallerCannot when it does not match."""
    from tether.mcp.requests import checker

    if answer.action != "accept":
        return Elicited(answer.action)
    try:
        content = checker(schema)(answer.content or {})
    except ValueError as exc:
        raise CallerCannot(f"the MCP client's answer does not match the requested schema: "
                           f"{exc}") from None
    return Elicited("accept", content)


def sample_in_rounds(rounds: Rounds, prompt: str, max_tokens: int,
                     system_prompt: str | None, key: str | None) -> str:
    """A sampling ask on a 2026-07-28 request: its answer if the request carries one, else
    ``InputNeeded`` (the request recorded)."""
    name = rounds.key("sampling", key)
    raw = rounds.answer(name, "sampling")
    if raw is None:
        raise rounds.ask(name, types.CreateMessageRequest(params=types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(text=prompt))],
            max_tokens=max_tokens, system_prompt=system_prompt)))
    result = parsed(types.CreateMessageResult, raw, name)
    text = sampled_text(result)
    rounds.use(name, "sampling", result.model_dump(by_alias=True, mode="json",
                                                    exclude_none=True))
    return text


def elicit_in_rounds(rounds: Rounds, message: str, schema: Mapping[str, Any],
                     key: str | None) -> Elicited:
    """An elicitation ask on a 2026-07-28 request: its answer if the request carries one, else
    ``InputNeeded`` (the request recorded)."""
    name = rounds.key("elicitation", key)
    raw = rounds.answer(name, "elicitation")
    if raw is None:
        raise rounds.ask(name, types.ElicitRequest(params=types.ElicitRequestFormParams(
            message=message, requested_schema=dict(schema))))
    result = parsed(types.ElicitResult, raw, name)
    answer = elicited(result, schema)
    rounds.use(name, "elicitation", result.model_dump(by_alias=True, mode="json",
                                                      exclude_none=True))
    return answer
