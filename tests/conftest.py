"""Shared test helpers: small scripted agents used across the suite."""

from __future__ import annotations

from typing import Any

from tether import ModelResponse, ToolCall


def call(name: str, args: dict[str, Any] | str, id: str = "") -> ModelResponse:
    """A scripted model turn that calls one tool."""
    return ModelResponse(tool_calls=(ToolCall(id, name, args),))


def calls(*pairs: tuple[str, dict[str, Any]]) -> ModelResponse:
    """A scripted model turn that calls several tools."""
    return ModelResponse(tool_calls=tuple(ToolCall("", n, a) for n, a in pairs))
