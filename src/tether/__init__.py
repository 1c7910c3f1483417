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
    from tether.errors import RunError, TetherError, UsageError
    from tether.models.base import Model, ModelError
    from tether.models.pricing import Price
    from tether.models.scripted import FakeModel, ScriptedModel
    from tether.policy.base import Decision, Effect, Policy
    from tether.reasoning.react import ReAct
    from tether.runtime.agent import Agent
    from tether.runtime.budget import Budget, Spend
    from tether.runtime.chokepoint.gateway import Gateway
    from tether.runtime.compaction import Compaction
    from tether.runtime.handle import Handle, Strategy
    from tether.runtime.limits import Limits
    from tether.runtime.planning import ModelPlanner
    from tether.runtime.result import Result, Step, ToolResult, Trajectory
    from tether.runtime.session import Session
    from tether.runtime.stop import StopReason
    from tether.runtime.subagent import AgentAsTool
    from tether.tools.decorator import tool
    from tether.types import Event, Message, ModelRequest, ModelResponse, ToolCall, Usage

_WHERE = {
    "Agent": "tether.runtime.agent",
    "Budget": "tether.runtime.budget",
    "Spend": "tether.runtime.budget",
    "Compaction": "tether.runtime.compaction",
    "Limits": "tether.runtime.limits",
    "ModelPlanner": "tether.runtime.planning",
    "Handle": "tether.runtime.handle",
    "Strategy": "tether.runtime.handle",
    "Result": "tether.runtime.result",
    "Step": "tether.runtime.result",
    "ToolResult": "tether.runtime.result",
    "Trajectory": "tether.runtime.result",
    "Session": "tether.runtime.session",
    "StopReason": "tether.runtime.stop",
    "ReAct": "tether.reasoning.react",
    "AgentAsTool": "tether.runtime.subagent",
    "Gateway": "tether.runtime.chokepoint.gateway",
    "Model": "tether.models.base",
    "ModelError": "tether.models.base",
    "Price": "tether.models.pricing",
    "ScriptedModel": "tether.models.scripted",
    "FakeModel": "tether.models.scripted",
    "Decision": "tether.policy.base",
    "Effect": "tether.policy.base",
    "Policy": "tether.policy.base",
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
}
__all__ = [
    "Agent",
    "AgentAsTool",
    "Budget",
    "Compaction",
    "Decision",
    "Effect",
    "Event",
    "FakeModel",
    "Gateway",
    "Handle",
    "Limits",
    "Message",
    "Model",
    "ModelError",
    "ModelPlanner",
    "ModelRequest",
    "ModelResponse",
    "Policy",
    "Price",
    "ReAct",
    "Result",
    "RunError",
    "ScriptedModel",
    "Session",
    "Spend",
    "Step",
    "StopReason",
    "Strategy",
    "TetherError",
    "ToolCall",
    "ToolResult",
    "Trajectory",
    "Usage",
    "UsageError",
    "tool",
]


__getattr__, __dir__ = exports(__name__, _WHERE, globals())
