"""tether: a governed runtime for AI agents trusted with real tools.

Every model call and tool call passes one chokepoint where it is budgeted, permissioned and
recorded. The names below are the public face; they are imported lazily so ``import tether``
stays fast and pays for pydantic only once a tool is declared.

The public surface: this face, every package face (a folder's ``__init__``) and the modules
listed in docs/reference/surface.md. Every other module is internal (a leading underscore says
so by its name; the rest by this rule) and may move in any release. Every exception class tether
defines is a ``TetherError`` (``tether.errors``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import exports
from tether._version import __version__ as __version__

if TYPE_CHECKING:
    from tether.errors import (
        BadData,
        InvalidArgument,
        MissingExtra,
        MissingFile,
        NotFound,
        RunError,
        RunFailed,
        TetherError,
        TimedOut,
        Unreachable,
        UsageError,
        WrongState,
        WrongType,
    )
    from tether.models.base import Model, ModelError
    from tether.models.pricing import Price
    from tether.models.scripted import FakeModel, ScriptedModel
    from tether.policy.base import Decision, Effect, Policy
    from tether.policy.quotas import Quota
    from tether.reasoning.react import ReAct
    from tether.runtime.accounting.budget import Budget, Spend
    from tether.runtime.accounting.limits import Limits
    from tether.runtime.accounting.stop import StopReason
    from tether.runtime.chokepoint.gateway import Gateway
    from tether.runtime.context.compaction import Compaction
    from tether.runtime.lifecycle.agent import Agent
    from tether.runtime.lifecycle.planning import ModelPlanner
    from tether.runtime.lifecycle.session import Session
    from tether.runtime.lifecycle.subagent import AgentAsTool
    from tether.runtime.record.result import Result, Step, ToolResult, Trajectory
    from tether.runtime.strategy.handle import Handle, Strategy
    from tether.tools.decorator import tool
    from tether.types import Event, Message, ModelRequest, ModelResponse, ToolCall, Usage

_WHERE = {
    "Agent": "tether.runtime.lifecycle.agent",
    "Budget": "tether.runtime.accounting.budget",
    "Spend": "tether.runtime.accounting.budget",
    "Compaction": "tether.runtime.context.compaction",
    "Limits": "tether.runtime.accounting.limits",
    "ModelPlanner": "tether.runtime.lifecycle.planning",
    "Handle": "tether.runtime.strategy.handle",
    "Strategy": "tether.runtime.strategy.handle",
    "Result": "tether.runtime.record.result",
    "Step": "tether.runtime.record.result",
    "ToolResult": "tether.runtime.record.result",
    "Trajectory": "tether.runtime.record.result",
    "Session": "tether.runtime.lifecycle.session",
    "StopReason": "tether.runtime.accounting.stop",
    "ReAct": "tether.reasoning.react",
    "AgentAsTool": "tether.runtime.lifecycle.subagent",
    "Gateway": "tether.runtime.chokepoint.gateway",
    "Model": "tether.models.base",
    "ModelError": "tether.models.base",
    "Price": "tether.models.pricing",
    "ScriptedModel": "tether.models.scripted",
    "FakeModel": "tether.models.scripted",
    "Decision": "tether.policy.base",
    "Effect": "tether.policy.base",
    "Policy": "tether.policy.base",
    "Quota": "tether.policy.quotas",
    "tool": "tether.tools.decorator",
    "Event": "tether.types",
    "Message": "tether.types",
    "ModelRequest": "tether.types",
    "ModelResponse": "tether.types",
    "ToolCall": "tether.types",
    "Usage": "tether.types",
    "TetherError": "tether.errors",
    "UsageError": "tether.errors",
    "RunError": "tether.errors",
    "BadData": "tether.errors",
    "InvalidArgument": "tether.errors",
    "MissingExtra": "tether.errors",
    "MissingFile": "tether.errors",
    "NotFound": "tether.errors",
    "RunFailed": "tether.errors",
    "TimedOut": "tether.errors",
    "Unreachable": "tether.errors",
    "WrongState": "tether.errors",
    "WrongType": "tether.errors",
}
__all__ = [
    "Agent",
    "AgentAsTool",
    "BadData",
    "Budget",
    "Compaction",
    "Decision",
    "Effect",
    "Event",
    "FakeModel",
    "Gateway",
    "Handle",
    "InvalidArgument",
    "Limits",
    "Message",
    "MissingExtra",
    "MissingFile",
    "Model",
    "ModelError",
    "ModelPlanner",
    "ModelRequest",
    "ModelResponse",
    "NotFound",
    "Policy",
    "Price",
    "Quota",
    "ReAct",
    "Result",
    "RunError",
    "RunFailed",
    "ScriptedModel",
    "Session",
    "Spend",
    "Step",
    "StopReason",
    "Strategy",
    "TetherError",
    "TimedOut",
    "ToolCall",
    "ToolResult",
    "Trajectory",
    "Unreachable",
    "Usage",
    "UsageError",
    "WrongState",
    "WrongType",
    "tool",
]


__getattr__, __dir__ = exports(__name__, _WHERE, globals())
