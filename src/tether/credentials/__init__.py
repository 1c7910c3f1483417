"""Credentials: tools get short-lived scoped tokens at call time, never raw secrets.

Decision: this is the governance layer's answer to "a tool needs a password". A ``Secret`` wraps
a value so no accidental route (repr, logs, JSON, pickle) can show it; a ``CredentialBroker``
holds one secret or provider per tool and issues a ``ScopedToken`` per call — bound to the
session and tool, short-lived, use-counted, revocable, able to redact its own secret from output.
``VaultKV`` is a provider for HashiCorp Vault's KV v2 engine; hvac is imported only when one is
built. Nothing here imports the runtime: the runtime imports this. ``Secret`` itself lives on the
ground floor (``tether.secret``), where the MCP client's OAuth tokens can use it too.
"""

from __future__ import annotations

from tether.credentials.broker import CredentialBroker, Provider
from tether.credentials.errors import CredentialError
from tether.credentials.token import REDACTED, ScopedToken
from tether.credentials.vault import VaultKV
from tether.secret import Secret

__all__ = ["REDACTED", "CredentialBroker", "CredentialError", "Provider", "ScopedToken", "Secret",
           "VaultKV"]
