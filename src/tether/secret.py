"""A string that refuses to be shown.

Decision: a secret travels wrapped, and the wrapper only gives its value to an explicit ``get()``.
Every accidental route to text — ``repr``, ``str``, ``format``, f-strings, logging, assertion
diffs, ``json.dumps``, ``pickle`` — either prints ``Secret('****')`` or raises ``TypeError``.
Pickling is refused rather than masked, because a pickle exists to be read back, and a readable
pickle of a secret is exactly the leak this type prevents. A ``Secret`` is immutable, so a copy
is the same object (as with ``str``). Comparison is constant-time and only against another
``Secret``; the length of the value is not exposed either.

Why on the ground floor (DESIGN.md): a secret is plain data that several floors carry — the
credential broker (governance) issues tokens from it, and an MCP connection's OAuth client
(adapters, below governance) holds its client secret and tokens in it. Kept with the broker it
would make the MCP client import upward; here it imports nothing of tether. Its public name
stays ``tether.credentials.Secret``.
"""

from __future__ import annotations

import hmac
from typing import Any, NoReturn, final

from tether.errors import InvalidArgument, WrongType

MASK = "Secret('****')"


@final
class Secret:
    """Wrap ``value``; read it back only with :meth:`get`."""

    __slots__ = ("_value",)
    _value: str

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise WrongType(f"a Secret wraps a str, got {type(value).__name__}; convert it to "
                            "text before wrapping it")
        if not value:
            raise InvalidArgument("a Secret cannot be empty: an empty secret would match "
                                  "everywhere when output is scrubbed; check where the value came "
                                  "from")
        object.__setattr__(self, "_value", value)

    def get(self) -> str:
        """The secret value. Call it at the last moment, and never log what it returns."""
        return self._value

    def __repr__(self) -> str:
        return MASK

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(MASK, spec)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError("a Secret is immutable; wrap the new value in a new Secret")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("a Secret is immutable")

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Secret:
        return self

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise WrongType("a Secret cannot be pickled: the pickle would hold the secret in readable "
                        "form. Register it with a CredentialBroker and pass ScopedTokens, or "
                        "pickle token.to_dict() when you need the metadata")

    def __reduce__(self) -> NoReturn:
        self.__reduce_ex__(0)

    def __getstate__(self) -> NoReturn:
        self.__reduce_ex__(0)
