"""A mypy plugin (pyproject's ``[tool.mypy] plugins``): ``d.get("key")`` on a payload TypedDict
that has no such key is an error, as ``d["key"]`` is.

Why: the journal's views read event data through the TypedDicts of ``tether.journal.payloads``,
mostly with ``.get`` (a journal written by an older tether may lack a field). mypy checks
``d["key"]`` against the TypedDict but types ``d.get("misspelt")`` as ``object`` without a word,
so a misspelt field would pass; with this plugin it fails the type check
(tests/test_mypy_payloads.py). The return type is mypy's own (its default plugin's callback).
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.errorcodes import TYPEDDICT_ITEM
from mypy.plugin import MethodContext, Plugin
from mypy.plugins.default import typed_dict_get_callback
from mypy.typeops import try_getting_str_literals
from mypy.types import Type, TypedDictType, get_proper_type

# the TypedDicts checked: the payloads (a library's TypedDict may be read for keys it does not
# declare, e.g. an MCP request's ``_meta``)
CHECKED = ("tether.journal.payloads.", "payload_probe.")  # the probe: test_mypy_payloads.py


def _checked_get(ctx: MethodContext) -> Type:
    typed = get_proper_type(ctx.type)
    if isinstance(typed, TypedDictType) and typed.fallback.type.fullname.startswith(CHECKED) \
            and ctx.args and len(ctx.args[0]) == 1:
        keys = try_getting_str_literals(ctx.args[0][0], ctx.arg_types[0][0]) or []
        for key in keys:
            if key not in typed.items:
                ctx.api.fail(f'TypedDict "{typed.fallback.type.name}" has no key "{key}"',
                             ctx.context, code=TYPEDDICT_ITEM)
    return typed_dict_get_callback(ctx)


class _CheckedGet(Plugin):
    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        return _checked_get if fullname == "typing.Mapping.get" else None


def plugin(version: str) -> type[Plugin]:
    return _CheckedGet
