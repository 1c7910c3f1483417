"""The set of tools one agent may call, resolved by name.

Decision: names are unique (a duplicate is a definition error, never a silent override) and the
registry is immutable once built, so an Agent recipe shared across sessions cannot be altered by
one of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from types import MappingProxyType

from tether.errors import InvalidArgument, WrongType
from tether.tools.base import Tool
from tether.types import ToolSpec


class ToolRegistry:
    """An agent's tools by name, immutable once built; a duplicate name is a
    ``ToolDefinitionError``."""
    __slots__ = ("_specs", "_tools")

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        table: dict[str, Tool] = {}
        for t in tools:
            if isinstance(t, type) or not isinstance(t, Tool):  # a tool class is not a tool
                raise WrongType(
                    f"{t!r} is not a tool; decorate a typed function with @tool or implement "
                    "tether.tools.Tool (and pass an instance, not the class)"
                )
            if t.name in table:
                raise InvalidArgument(f"two tools are named {t.name!r}; tool names must be unique")
            table[t.name] = t
        self._tools = MappingProxyType(table)
        self._specs = tuple(t.spec for t in table.values())

    def get(self, name: str) -> Tool | None:
        """The tool named ``name``, or None."""
        return self._tools.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        """The tools' names, in order."""
        return tuple(self._tools)

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """What the model is shown of each tool: name, description, input schema."""
        return self._specs

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)
