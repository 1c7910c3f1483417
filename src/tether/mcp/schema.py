"""Arguments for an MCP tool are checked against the server's input schema before any call.

Why: the executor's schema gate must hold for MCP tools as it does for ``@tool`` functions — a
malformed call is refused with the offending field named, so the model can fix it, and never
reaches the server. The schema is the server's own JSON Schema, so ``jsonschema`` checks it as
written: extra keys are refused only where the schema says ``additionalProperties: false``.

Decision: the validator is compiled once per tool with an empty ``referencing`` registry, so a
``$ref`` can only point inside the schema and validation never fetches anything over the network.
A schema that is itself invalid makes every call fail with a message blaming the server.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from tether.tools.base import ToolArgumentError


def _path(parts: Iterable[Any]) -> str:
    return ".".join(str(p) for p in parts)


class ArgumentSchema:
    __slots__ = ("_broken", "_validator", "tool")

    def __init__(self, tool: str, schema: Mapping[str, Any]) -> None:
        from jsonschema import SchemaError
        from jsonschema.validators import validator_for
        from referencing import Registry

        self.tool = tool
        self._broken: str | None = None
        cls = validator_for(dict(schema))
        try:
            cls.check_schema(dict(schema))
        except SchemaError as exc:
            self._broken = f"the server's input schema for {tool!r} is invalid ({exc.message})"
        self._validator: Any = cls(dict(schema), registry=Registry())

    @property
    def broken(self) -> str | None:
        """What is wrong with the schema itself, or None (``tether.mcp.fit``)."""
        return self._broken

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``arguments``, or ToolArgumentError naming the first offending field."""
        from jsonschema.exceptions import best_match

        if self._broken is not None:
            raise ToolArgumentError("", f"{self._broken}; the tool cannot be called until the "
                                        "server fixes it")
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError("", "arguments must be a JSON object")
        instance = dict(arguments)
        try:
            error = best_match(self._validator.iter_errors(instance))
        except Exception as exc:  # e.g. a $ref that does not resolve inside the schema
            raise ToolArgumentError("", f"cannot check the arguments: the server's input "
                                        f"schema for {self.tool!r} is unusable ({exc})") from None
        if error is None:
            return instance
        raise ToolArgumentError(self._field(error), error.message)

    @staticmethod
    def _field(error: Any) -> str:
        """The field to blame: for a missing or extra key, that key, under its parent's path."""
        where = list(error.absolute_path)
        instance, schema = error.instance, error.schema
        if error.validator == "required" and isinstance(instance, Mapping):
            missing = [k for k in error.validator_value if k not in instance]
            if missing:
                return _path([*where, missing[0]])
        if error.validator == "additionalProperties" and isinstance(instance, Mapping):
            known = set(schema.get("properties") or {})
            patterns = list(schema.get("patternProperties") or {})
            extra = [k for k in instance
                     if k not in known and not any(re.search(p, k) for p in patterns)]
            if extra:
                return _path([*where, extra[0]])
        return _path(where) or "(arguments)"
