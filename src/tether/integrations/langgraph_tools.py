"""LangChain tools that run only with the arguments tether decided.

Why: under LangGraph, tether's door is an agent middleware, and between it and a tool's body
stand whatever middleware is placed after it and ToolNode's run of the tool, which validates
the arguments again with the tool's schema (and a validator may normalise them: strip,
upper-case, coerce). Either could hand the body arguments no decision covered while the
journal recorded the allowed ones.

Decision: the door decides on the arguments as the tool's own schema reads them (``reader``),
and the tools a ``LangGraphRun`` hands out are copies whose body — the function a
``StructuredTool`` wraps, or a ``BaseTool``'s own ``_run``/``_arun`` — first checks
(``tether.integrations.decided.arrived``) that what reached it is what was decided: anything
else is refused there, before the body runs, and so is a call that never passed the door (the
tools given to an agent without tether's middleware run nothing). The check reads the
arguments by the body's own signature and compares only those the model can give; arguments
the framework injects (state, store, config, callbacks) are the framework's.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Collection, Mapping
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel

from tether.integrations.decided import Reader, arrived, jsonable


def reader(tool: BaseTool) -> Reader | None:
    """LangChain's reading of ``tool``'s arguments, as ToolNode's run of it validates them (the
    keys given, each as its schema reads it, in JSON form); None for a JSON-schema tool."""
    if isinstance(tool.args_schema, dict):
        return None
    schema, shown = tool.get_input_schema(), tool.tool_call_schema
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        return None  # a pydantic v1 schema: its body's check alone holds the line
    if isinstance(shown, type) and issubclass(shown, BaseModel) and \
            set(shown.model_fields) != set(schema.model_fields):
        schema = shown  # injected arguments are the framework's, given only when it runs
    read_by: type[BaseModel] = schema

    def read(arguments: Mapping[str, Any]) -> dict[str, Any]:
        model = read_by.model_validate(dict(arguments))
        return {k: jsonable(getattr(model, k)) for k in arguments if k in read_by.model_fields}

    return read


def guarded(tool: BaseTool, visible: Collection[str]) -> BaseTool:
    """A copy of ``tool`` whose body runs only with the decided arguments (``visible``: the
    arguments the model can give)."""
    name = tool.name
    if isinstance(tool, StructuredTool):
        return tool.model_copy(update={
            "func": _checked(name, tool.func, visible) if tool.func else None,
            "coroutine": _checked(name, tool.coroutine, visible) if tool.coroutine else None})
    kind = type(tool)
    body: dict[str, Any] = {"__module__": kind.__module__,
                            "_run": _checked(name, kind._run, visible, method=True)}
    if kind._arun is not BaseTool._arun:  # its own async body (the default calls _run)
        body["_arun"] = _checked(name, kind._arun, visible, method=True)
    copy = tool.model_copy()
    object.__setattr__(copy, "__class__", type(kind.__name__, (kind,), body))
    return copy


def _checked(name: str, function: Callable[..., Any], visible: Collection[str], *,
             method: bool = False) -> Callable[..., Any]:
    """``function`` behind the check; it keeps its signature (LangChain reads it to know what
    to inject)."""
    signature = inspect.signature(function)

    def received(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        try:
            bound = signature.bind_partial(*args, **kwargs).arguments
        except TypeError:
            bound = dict(kwargs)
        out: dict[str, Any] = {}
        for key, value in bound.items():
            kind = signature.parameters[key].kind if key in signature.parameters else None
            if kind is inspect.Parameter.VAR_KEYWORD:
                out.update(value)
            elif not (method and key == next(iter(signature.parameters))):
                out[key] = value
        return out

    if inspect.iscoroutinefunction(function):
        @functools.wraps(function)
        async def acheck(*args: Any, **kwargs: Any) -> Any:
            arrived(name, received(args, kwargs), visible)
            return await function(*args, **kwargs)
        return acheck

    @functools.wraps(function)
    def check(*args: Any, **kwargs: Any) -> Any:
        arrived(name, received(args, kwargs), visible)
        return function(*args, **kwargs)
    return check
