"""``@tool``: turn a typed Python function into a governed tool.

Decision: the function's signature is the single source of the schema (built with pydantic, extra
keys forbidden; a plain signature is described and checked without importing it, identically:
``signature.py``), and its docstring is the description; a tool without either is a definition
error at import time, not a surprise at call time. Parameters named ``ctx``/``context``,
``user_id``, ``tenant_id`` and ``session_id`` are injected by the runtime from the session, and
``credentials`` receives a short-lived ScopedToken from the agent's CredentialBroker, and ``caller``
whoever waits for the result (``tether.tools.caller``: progress, logs, sampling, elicitation for
an MCP client); none of them is part of the schema the model sees, so a model cannot spoof them.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, get_type_hints, overload

from tether.errors import UsageError
from tether.tools.base import Risk, ToolArgumentError, ToolContext, ToolMeta, Trust
from tether.tools.caller import Caller
from tether.tools.inline import call_in_place, runs_in_place
from tether.tools.signature import PlainSignature
from tether.tools.threads import Pace, run_on_daemon_thread
from tether.types import ToolSpec

INJECTED = frozenset({"ctx", "context", "user_id", "tenant_id", "session_id", "credentials",
                      "caller"})


class ToolDefinitionError(UsageError, TypeError):
    """A function cannot become a tool as written; the message says what to change."""


class FunctionTool:
    # A tool backed by a typed function (sync or async). No class docstring: ``__doc__`` is a
    # slot holding each tool's own description, and a class docstring would conflict with it.

    __slots__ = ("__doc__", "_fields", "_injected", "_model", "_pace", "_plain", "fn", "inline",
                 "is_async", "meta", "name", "spec")

    def __init__(self, fn: Callable[..., Any], *, name: str | None, meta: ToolMeta,
                 inline: bool = False) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self.meta = meta
        self.is_async = inspect.iscoroutinefunction(fn)
        if inline and self.is_async:
            raise ToolDefinitionError(
                f"tool {self.name!r} is async, so it already runs on the event loop; "
                "inline=True is for sync functions: remove it")
        self.inline = inline  # runs on the caller's thread: no handoff, never abandoned
        self._pace = Pace()  # whether the function's calls are quick (a memo, not run state)
        description = (inspect.getdoc(fn) or "").strip()  # a blank docstring describes nothing
        if not description:
            raise ToolDefinitionError(
                f"tool {self.name!r} has no docstring; write one: it is the description the "
                "model sees"
            )
        self.__doc__ = description
        hints = get_type_hints(fn, include_extras=True)
        fields: dict[str, Any] = {}
        injected: list[str] = []
        for param in inspect.signature(fn).parameters.values():
            if param.kind is param.POSITIONAL_ONLY:  # the runtime passes every argument by name
                raise ToolDefinitionError(
                    f"tool {self.name!r}: parameter {param.name!r} is positional-only; remove "
                    "the '/' so it can be passed by name"
                )
            if param.name in INJECTED:
                if param.name == "caller" and hints.get("caller", Caller) is not Caller:
                    raise ToolDefinitionError(  # once a model-supplied argument of that name
                        f"tool {self.name!r}: parameter 'caller' is injected by tether (the "
                        "tether.tools.caller.Caller waiting for the result), so it cannot be an "
                        "argument the model gives; annotate it as Caller, or rename it")
                injected.append(param.name)
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ToolDefinitionError(
                    f"tool {self.name!r}: *{param.name} is not allowed; declare each argument"
                )
            if param.name not in hints:
                raise ToolDefinitionError(
                    f"tool {self.name!r}: parameter {param.name!r} needs a type annotation"
                )
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (hints[param.name], default)
        self._injected = tuple(injected)
        for what, names in (("parties", meta.parties), ("shapes", meta.shapes or ()),
                            ("selects", meta.selects or ()), ("private_when", meta.private_when)):
            unknown = sorted(set(names) - fields.keys())
            if unknown:
                raise ToolDefinitionError(
                    f"tool {self.name!r}: {what} {unknown} are not arguments of the tool; name "
                    f"some of {sorted(fields)}")
        if "credentials" in injected and not meta.credentials:
            self.meta = dataclasses.replace(meta, credentials=True)
        self._fields = fields
        self._model: Any = None  # the pydantic model, built when first needed
        self._plain = PlainSignature.of(fields)
        if self._plain is not None:
            schema = self._plain.schema
        else:
            schema = self._pydantic().model_json_schema()
            schema.pop("title", None)
            for prop in schema.get("properties", {}).values():
                prop.pop("title", None)
        self.spec = ToolSpec(self.name, description, schema)

    def _pydantic(self) -> Any:
        """The arguments' pydantic model (derived from the signature alone, so building it
        twice in a race is harmless)."""
        if self._model is None:
            from pydantic import ConfigDict, create_model

            self._model = create_model(f"{self.name}_arguments",
                                       __config__=ConfigDict(extra="forbid"), **self._fields)
        return self._model

    def __repr__(self) -> str:
        return f"<tool {self.name}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (outside any session, e.g. in unit tests)."""
        return self.fn(*args, **kwargs)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if self._plain is not None:
            accepted = self._plain.accept(arguments)
            if accepted is not None:
                return accepted
        from pydantic import ValidationError

        try:
            parsed = self._pydantic().model_validate(arguments)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise ToolArgumentError(field, first["msg"]) from None
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        kwargs = dict(arguments)
        for name in self._injected:
            if name in ("ctx", "context"):
                kwargs[name] = context
            else:
                kwargs[name] = getattr(context, name)
        if self.is_async:
            return await self.fn(**kwargs)
        if self.inline:
            return self.fn(**kwargs)
        limit = self.meta.timeout if context.timeout is None else context.timeout
        if runs_in_place(self._pace, limit):  # a loop serving one run: no handoff (inline.py)
            return call_in_place(functools.partial(self.fn, **kwargs), self.name, limit,
                                 self._pace)
        return await run_on_daemon_thread(functools.partial(self.fn, **kwargs),
                                          pace=self._pace, limit=limit)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    tags: Iterable[str] = (),
    risk: Risk = "low",
    side_effect: bool = False,
    egress: bool = False,
    output_trust: Trust = "trusted",
    timeout: float = 30.0,
    idempotent: bool = False,
    owner: str | None = None,
    inline: bool = False,
    parties: Iterable[str] = (),
    intents: Iterable[str] = (),
    trusted_fields: Iterable[str] = (),
    private: Mapping[str, str] | None = None,
    private_when: Mapping[str, Iterable[str]] | None = None,
    shapes: Iterable[str] | None = None,
    selects: Iterable[str] | None = None,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    tags: Iterable[str] = (),
    risk: Risk = "low",
    side_effect: bool = False,
    egress: bool = False,
    output_trust: Trust = "trusted",
    timeout: float = 30.0,
    idempotent: bool = False,
    owner: str | None = None,
    inline: bool = False,
    parties: Iterable[str] = (),
    intents: Iterable[str] = (),
    trusted_fields: Iterable[str] = (),
    private: Mapping[str, str] | None = None,
    private_when: Mapping[str, Iterable[str]] | None = None,
    shapes: Iterable[str] | None = None,
    selects: Iterable[str] | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Declare a tool: ``@tool`` or ``@tool(side_effect=True, tags={"payments"}, ...)``.

    A sync function runs on a daemon worker thread, so that one past its ``timeout`` is
    abandoned. ``inline=True`` runs it on the event loop's own thread instead, as an ``async``
    tool that never awaits would run: no thread handoff (about a third of a step), but it is
    never abandoned — its ``timeout`` does not apply — and every session on the loop waits
    while it runs. For quick functions that cannot hang (pure computation, in-memory lookups).

    The function's signature is the tool's input schema and its docstring the description the
    model reads; a tool without either is a ``ToolDefinitionError`` here. The keyword arguments
    are the facts a policy decides on (``tether.tools.ToolMeta``), declared up front.

    Args:
        fn: The function, when used bare (``@tool``).
        name: The tool's name. Default: the function's.
        tags: Labels a policy can match (``{"payments"}``).
        risk: ``"low"``, ``"medium"``, ``"high"`` or ``"critical"``.
        side_effect: It changes the world (sends, pays, writes): such a call interrupted by a
            crash waits for an operator instead of running again.
        egress: It can send data out of the system.
        output_trust: ``"untrusted"`` when its result holds text a third party wrote (a web
            page, an email): the session is tainted once it is read.
        timeout: Seconds a call may run before its result is a timeout.
        idempotent: Running it twice does what running it once does, so a call a crash
            interrupted may run again on resume unless a person approved it.
        owner: Who answers for the tool, for a policy or an audit.
        inline: Run a sync function on the event loop's thread (see above).
        parties: Arguments that name a party (a recipient, an account, a URL), where a value
            an attacker planted would do harm.
        intents: Words that ask for what the tool does (``"book+hotel"``: both words); a
            request that uses none did not ask for it (``tether.policy.ScopeToRequest``).
        trusted_fields: Keys of an untrusted structured result whose values its third party
            cannot choose (an id the system assigned).
        private: Keys of the result whose values are private, and their kind
            (``{"passport_number": "passport"}``; ``"*"`` for the whole result).
        private_when: The calls whose results ``private`` labels, by argument value
            (``{"channel": ["private"]}``). Default: every call's.
        shapes: Arguments besides the parties that shape the effect (an amount, a body).
            Default None: every argument that is not a party.
        selects: Arguments that choose what a call returns (a query, an id); a result one of
            them got from untrusted text alone is untrusted. Default None: every argument;
            ``()``: none (a confirmation returning what the call it completes returns).

    Returns:
        The tool (a ``FunctionTool``), or, called with keywords only, the decorator making it.
    """
    # handed over as given: ToolMeta refuses a string where a collection belongs
    collections: dict[str, Any] = {"tags": tags, "parties": parties, "intents": intents,
                                   "trusted_fields": trusted_fields, "shapes": shapes,
                                   "selects": selects, "private_when": private_when or {}}
    try:
        meta = ToolMeta(risk=risk, side_effect=side_effect, egress=egress,
                        output_trust=output_trust, timeout=timeout, idempotent=idempotent,
                        owner=owner, private=private or {}, **collections)
    except TypeError as exc:
        raise ToolDefinitionError(str(exc)) from None

    def build(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(f, name=name, meta=meta, inline=inline)

    return build(fn) if fn is not None else build
