"""What a PostgreSQL store URL says beyond libpq: tether's ``schema`` and ``ride_through``.

Why apart from ``store.postgres``: reading the URL is done before anything connects, and is
tested on its own; libpq must never see a parameter it does not know.

Decision: each setting may be named once — in the URL or as an argument, not both differently
— and is taken out of the URL handed to libpq; a schema named by libpq's own
``options=-csearch_path=NAME`` counts as naming it.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from tether.store.base import StoreError
from tether.store.postgres_outage import DEFAULT_RIDE_THROUGH


def ride_through_in_url(url: str, given: float | None) -> tuple[str, float]:
    """The URL without tether's ``ride_through`` parameter, and the bound in seconds: the one
    given, else the URL's, else ``DEFAULT_RIDE_THROUGH``."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    named = [value for name, value in pairs if name == "ride_through"]
    if not named:
        return url, DEFAULT_RIDE_THROUGH if given is None else given
    try:
        bound = float(named[-1].removesuffix("s"))
    except ValueError:
        raise StoreError(f"ride_through={named[-1]!r} in the store URL must be a number of "
                         "seconds, e.g. ?ride_through=30") from None
    if given is not None and given != bound:
        raise StoreError(f"the URL sets ride_through={bound:g} and ride_through={given:g} was "
                         "given; set it once")
    kept = urlencode([(n, v) for n, v in pairs if n != "ride_through"], quote_via=quote)
    return urlunsplit(parts._replace(query=kept)), bound


_SEARCH_PATH = re.compile(r"-c\s*search_path\s*=\s*([^\s,]+)")


def schema_in_url(url: str) -> tuple[str, str | None]:
    """The URL to hand libpq (without tether's own ``schema`` parameter) and the schema the URL
    names, if any: ``?schema=NAME`` or ``?options=-csearch_path%3DNAME``."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    named = [value for name, value in pairs if name == "schema"]
    for name, value in pairs:
        found = _SEARCH_PATH.search(value) if name == "options" else None
        if found:
            named.append(found.group(1))
    if len(set(named)) > 1:
        raise StoreError(f"the URL names more than one schema ({', '.join(sorted(set(named)))});"
                         " name one")
    if not any(name == "schema" for name, _ in pairs):
        return url, named[0] if named else None
    kept = urlencode([(n, v) for n, v in pairs if n != "schema"], quote_via=quote)
    return urlunsplit(parts._replace(query=kept)), named[0]
