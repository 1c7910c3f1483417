"""One way to show a URL without its secrets: ``redact_url``.

Why: a URL is how people name a store, a model server, a Vault or an MCP server, and it is also
where they put the credentials to reach it: ``postgresql://app:pw@db/prod``,
``...?password=pw``, ``...?token=...``. Every repr, error message, log line and CLI output that
names a URL goes through this one function, so a password shown by one path and hidden by
another cannot happen.

Decision: mask, don't drop. The reader still sees which server, database and options were used
(``postgresql://app:***@db/prod?sslmode=require&password=***``), which is what an error needs;
only the secret parts are replaced: a password in the user info, a bare user name on schemes
where it is a token (``https://ghp_...@host``), and the value of every query parameter whose
name says it carries a secret (password, sslpassword, token, key, secret, signature...). The
fragment goes (OAuth puts tokens there). A URL that cannot be parsed is shown only by scheme.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

MASK = "***"
# query parameters whose value is a secret, by name (lower-cased): libpq's password and
# sslpassword, and the names HTTP services use for tokens, keys and signatures
_SECRET_PARAM = re.compile(r"pass|token|secret|key|sig|auth|credential", re.IGNORECASE)
# schemes whose user name is an account name worth showing; elsewhere a bare user is a token
_NAMED_USERS = frozenset({"postgres", "postgresql", "mysql", "mariadb", "redis", "rediss",
                          "amqp", "amqps", "mongodb", "sqlite"})


def redact_url(url: str) -> str:
    """``url`` fit for a repr, a message or a log line: every secret part replaced by ``***``."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        scheme = url.split(":", 1)[0] if ":" in url else ""
        return f"{scheme}://<unreadable URL>" if scheme.isalnum() else "<unreadable URL>"
    query = parts.query
    secret_query = bool(query) and any(_SECRET_PARAM.search(name) for name, _ in
                                       parse_qsl(query, keep_blank_values=True))
    if "@" not in parts.netloc and not secret_query and not parts.fragment:
        return url  # nothing to hide: shown exactly as given
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    if port is not None:
        host = f"{host}:{port}"
    if "@" in parts.netloc:
        if parts.password is not None:
            user = f"{parts.username or ''}:{MASK}"
        elif parts.scheme.lower() in _NAMED_USERS:
            user = parts.username or ""
        else:
            user = MASK
        host = f"{user}@{host}"
    if secret_query:
        query = urlencode([(name, MASK if _SECRET_PARAM.search(name) else value)
                           for name, value in parse_qsl(query, keep_blank_values=True)],
                          safe="*", quote_via=quote)
    return urlunsplit((parts.scheme, host, parts.path, query, ""))


def redact_text(text: str, url: str) -> str:
    """``text`` (e.g. a driver's error message) with ``url``, and every secret in it, wherever
    they appear in the text, replaced by their redacted forms."""
    text = text.replace(url, redact_url(url))
    for secret in sorted(_secrets_of(url), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def _secrets_of(url: str) -> set[str]:
    try:
        parts = urlsplit(url)
        found = [parts.password or ""]
        found += [value for name, value in parse_qsl(parts.query, keep_blank_values=True)
                  if _SECRET_PARAM.search(name)]
    except ValueError:
        return set()
    # as written and as decoded; too short a value would blank unrelated text
    return {form for value in found for form in (value, unquote(value)) if len(form) >= 3}
