"""What runs is what was decided: a foreign tool's arguments, from the decision to its body.

Why: under another framework, tether's door is one layer of the framework's stack, and between
the door and the tool's body the framework may still hold the call: middleware placed after
tether's, the tool's own schema validation (which may normalise — strip, upper-case, coerce),
wrappers. Anything there that changed the arguments after the policy decided them would run a
call nobody decided, while the journal recorded the allowed one.

Decision: two seams, one rule — the decided arguments are what runs, or the call is refused.
(1) The door decides on the arguments as the tool will read them: a ``ForeignTool`` validates
with the framework's own reading of its arguments (its ``reader``), so the policy sees the
normalised values and a bad argument is the chokepoint's usual schema refusal. (2) Where the
framework still stands between the door and the body, the adapter wraps the tool's own body
and calls ``arrived`` there with what reached it: any difference from the decided arguments (a
key added, dropped or changed; values compared in their JSON form) refuses the call before the
body runs, and a body reached without a decision (a tool invoked outside the door) is
refused too. The door's run of the call records that refusal (it wins
over whatever a layer made of the exception), so the journal says what happened: nothing ran.
The refusal names the fields, never their values (a masked value stays masked).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

from tether.journal.chain import canonical_json
from tether.runtime.record.state import call_signature
from tether.tools.base import Tool, ToolContext, ToolFailure, ToolMeta
from tether.types import ToolSpec

Body = Callable[[dict[str, Any]], Awaitable[Any]]
Reader = Callable[[Mapping[str, Any]], dict[str, Any]]
# a foreign tool's declared facts when nothing declares them: the cautious reading — it may
# have side effects and reach outside, and what it returns was written by someone else
FOREIGN_META = ToolMeta(tags=frozenset({"foreign"}), risk="medium", side_effect=True,
                        egress=True, output_trust="untrusted")


@dataclass(slots=True)
class Decided:
    """One call's decided arguments while its body may run; ``refused`` is set by ``arrived``
    when what reached the body was not them."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    body: Body
    refused: str | None = None
    context: ToolContext | None = None  # what the call's session lends a sub-run


# the call being run by the door in this context (set around one call's body)
_DECIDED: ContextVar[Decided | None] = ContextVar("tether_decided", default=None)


class ArgumentsChanged(ToolFailure):
    """Raised at the last seam: the arguments that reached a tool's body are not the ones
    tether decided (or no decision covers the call); the body did not run."""


def jsonable(value: Any) -> Any:
    """``value`` as JSON data, as a policy and the journal see arguments."""
    return to_jsonable_python(value, fallback=str)


def reading(tool: Tool | None, arguments: Mapping[str, Any] | str) -> Any:
    """``arguments`` as ``tool`` reads them (its ``validate``), in JSON form; None when it
    cannot read them (no such tool, not a JSON object, invalid)."""
    if tool is None or isinstance(arguments, str):
        return None
    try:
        return jsonable(tool.validate(arguments))
    except Exception:
        return None


def identity(tool: Tool | None, arguments: Mapping[str, Any] | str, name: str = "") -> str:
    """A framework call's identity as its tool reads its arguments: the same call whether the
    framework hands it over as the model wrote it or already validated (normalised), so a call
    resent either way — also after a resume in another process — is known as the same one."""
    read = reading(tool, arguments)
    if tool is not None and read is not None:
        return call_signature(tool.name, read)
    return call_signature(tool.name if tool is not None else name,
                          arguments if isinstance(arguments, str) else jsonable(dict(arguments)))


def arrived(name: str, received: Mapping[str, Any], visible: Collection[str]) -> None:
    """Check, just before ``name``'s body runs, that ``received`` — the arguments the body is
    about to get, of which ``visible`` are the ones the model can give (injected ones are the
    framework's) — are the decided ones. ArgumentsChanged when they are not; the door then
    journals the call as refused."""
    decided = _DECIDED.get()
    if decided is None or decided.name != name:
        raise ArgumentsChanged(f"Error: {name!r} was invoked without a tether decision for "
                               "this call (outside tether's door); it was not run.")
    got = {k: jsonable(v) for k, v in received.items() if k in visible}
    want = jsonable(decided.arguments)
    if canonical_json(got) != canonical_json(want):
        changed = sorted(k for k in set(got) | set(want)
                         if canonical_json(got.get(k)) != canonical_json(want.get(k))
                         or (k in got) != (k in want))
        decided.refused = (
            f"Error: the arguments of {name!r} were changed after tether decided them "
            f"(fields {changed}: by a layer between tether and the tool, or by the tool's own "
            "validation reading them differently a second time); it was not run. Decided "
            "arguments are what runs: put tether's layer inside any layer that changes "
            "arguments, or make the tool's validation give back what it is given.")
        raise ArgumentsChanged(decided.refused)


class ForeignTool:
    """A framework's tool as tether sees it: name, schema and declared metadata. Its body is
    the framework's own call, handed to the door with each call (so it runs with the
    framework's context); ``reader`` is the framework's own reading of its arguments (its
    schema's validation, in JSON form), so the decision covers what the body will get."""

    __slots__ = ("meta", "name", "reader", "spec")

    def __init__(self, spec: ToolSpec, meta: ToolMeta = FOREIGN_META,
                 reader: Reader | None = None) -> None:
        self.name, self.spec, self.meta, self.reader = spec.name, spec, meta, reader

    def __repr__(self) -> str:
        return f"<foreign tool {self.name}>"

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return self.reader(arguments) if self.reader is not None else dict(arguments)

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        held = _DECIDED.get()
        if held is None or held.call_id != context.call_id:
            raise ToolFailure(f"Error: {self.name!r} can only run through its framework's call")
        held.name, held.arguments, held.context = self.name, arguments, context
        result = await held.body(arguments)
        if held.refused is not None:  # refused at the last seam, whatever a layer made of it
            raise ArgumentsChanged(held.refused)
        return result


def running_call(session_id: str) -> ToolContext | None:
    """The context of the call of session ``session_id`` whose body runs here, if one does."""
    held = _DECIDED.get()
    context = held.context if held is not None else None
    return context if context is not None and context.session_id == session_id else None


def deciding(call_id: str, body: Body) -> Any:
    """Hand ``body`` to the door for the call ``call_id`` (a token for ``done``)."""
    return _DECIDED.set(Decided(call_id, "", {}, body))


def done(token: Any) -> None:
    _DECIDED.reset(token)
