"""What ``tether mcp serve MODULE:TOOLS`` names: the tools to serve, and the policy they carry.

Why: ``MODULE:TOOLS`` may name a list of tools, one tool, an object holding tools (an Agent,
with its policy), or a function returning one of these; ``tether mcp serve`` and ``tether
tools`` resolve it the same way, and the server must know whether the holder's policy is to be
checked against the tools (``tether.policy.names``).

Decision: an object's ``policy`` is used only if it can decide (it has ``evaluate``); an Agent
built with ``check_policy_names=False`` keeps that opt-out when served.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether.policy.base import Policy
    from tether.tools.base import Tool


@dataclass(frozen=True, slots=True)
class Served:
    """What ``MODULE:TOOLS`` names: the tools, the policy of the object holding them (if it has
    one), and whether that policy is to be checked against them (an Agent built with
    ``check_policy_names=False`` opted out)."""

    tools: list[Tool]
    policy: Policy | None
    check_policy_names: bool = True


def load_tools(spec: str) -> tuple[list[Tool], Policy | None]:
    """The tools named by ``spec``, and the policy of the object holding them, if it has one.
    Raises RecipeError saying what to fix."""
    served = load_served(spec)
    return served.tools, served.policy


def load_served(spec: str) -> Served:
    """What ``spec`` names (see ``load_tools``). Raises RecipeError saying what to fix."""
    from tether.cli.recipe import RecipeError
    from tether.references import import_object
    from tether.tools.base import Tool
    from tether.tools.registry import ToolRegistry

    value = import_object(spec, "a list of tether tools")
    if callable(value) and not isinstance(value, Tool) and not _holds_tools(value):
        try:
            value = value()
        except TypeError as exc:
            raise RecipeError(f"{spec} is callable but could not be called without arguments "
                              f"({exc}); name the list of tools instead") from None
    policy = getattr(value, "policy", None) if hasattr(value, "tools") else None
    if isinstance(value, Tool):
        found: Iterable[Any] = [value]
    elif hasattr(value, "tools"):
        found = value.tools
    elif _holds_tools(value):
        found = value
    else:
        raise RecipeError(f"{spec} is a {type(value).__name__}; name a list of tether tools "
                          "(functions decorated with @tool) or an object with a 'tools' "
                          "attribute")
    try:
        tools = list(ToolRegistry(found))
    except (TypeError, ValueError) as exc:
        raise RecipeError(f"{spec}: {exc}") from None
    if not tools:
        raise RecipeError(f"{spec} holds no tools; an MCP server without tools would serve "
                          "nothing")
    return Served(tools, policy if callable(getattr(policy, "evaluate", None)) else None,
                  getattr(value, "check_policy_names", True) is not False)


def _holds_tools(value: Any) -> bool:
    return not isinstance(value, str | bytes | dict) and hasattr(value, "__iter__")
