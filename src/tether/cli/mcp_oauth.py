"""The authorization options of ``tether mcp serve`` and ``tether mcp proxy`` over HTTP.

Why: a server reachable beyond this machine must know who calls it, so over HTTP both commands
can be an OAuth 2.1 resource server: each request's bearer token names the policy's subject.
Decision: without ``--oauth-issuer`` the server binds a loopback address only (anyone who could
reach another address could call the tools); the options become one ``tether.serve.oauth.OAuth``
here, and every error is said on stderr before anything is served. Kept apart from
``tether.cli.mcp`` so that module stays about serving and proxying.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tether.cli.common import error

if TYPE_CHECKING:
    from tether.serve.oauth import OAuth


def oauth_options(parser: argparse.ArgumentParser) -> None:
    auth = parser.add_argument_group(
        "authorization", "HTTP only: an OAuth 2.1 resource server; each request's bearer token "
        "names the policy's subject (its claims replace --client and --role)")
    auth.add_argument("--host", metavar="ADDRESS", default="127.0.0.1",
                      help="the HTTP address to listen on (default 127.0.0.1; any other only "
                      "with --oauth-issuer)")
    auth.add_argument("--oauth-issuer", metavar="URL",
                      help="require bearer tokens (JWTs) from this authorization server "
                      "(its keys found through its metadata)")
    auth.add_argument("--oauth-resource", metavar="URL",
                      help="this server's URL as clients reach it: the tokens' audience "
                      "(default: the URL it serves at)")
    auth.add_argument("--oauth-jwks-url", metavar="URL",
                      help="the issuer's JWKS (default: its metadata's jwks_uri)")
    auth.add_argument("--oauth-scope", metavar="SCOPE", action="append", default=[],
                      help="a scope every token must hold (repeatable; 403 otherwise)")
    auth.add_argument("--oauth-algorithm", metavar="ALG", action="append", default=[],
                      help="an accepted signature algorithm (repeatable; default RS256, ES256, "
                      "EdDSA; never none or HS*)")
    auth.add_argument("--oauth-subject-claim", metavar="NAME", default="sub",
                      help="the claim naming the user (default sub)")
    auth.add_argument("--oauth-roles-claim", metavar="NAME", default="roles",
                      help="the claim listing the roles (default roles; a dotted name such as "
                      "realm_access.roles reaches into an object)")
    auth.add_argument("--oauth-tenant-claim", metavar="NAME",
                      help="the claim naming the tenant; tokens without it are refused "
                      "(default: none read, --tenant applies)")
    auth.add_argument("--oauth-jwks-refresh", metavar="SECONDS", type=float, default=30.0,
                      help="fetch the issuer's keys again for an unknown key id at most this "
                      "often (default 30)")


def oauth_of(args: argparse.Namespace) -> tuple[bool, OAuth | None]:
    """(usable, the authorization the options describe); errors said on stderr."""
    from tether.errors import InvalidArgument
    from tether.serve.jwks import is_loopback
    from tether.serve.oauth import DEFAULT_ALGORITHMS, Claims, OAuth

    if args.oauth_issuer is None:
        if args.host != "127.0.0.1" and not is_loopback(args.host):
            error(f"--host {args.host} needs --oauth-issuer URL (and --oauth-resource, the URL "
                  "clients use): without authorization anyone who reaches that address could "
                  "call the tools")
            return False, None
        return True, None
    if args.transport != "http":
        error("--oauth-issuer applies to --transport http (a stdio client is the process that "
              "spawned this one)")
        return False, None
    try:
        return True, OAuth(
            issuer=args.oauth_issuer, resource=args.oauth_resource, jwks_url=args.oauth_jwks_url,
            algorithms=tuple(args.oauth_algorithm) or DEFAULT_ALGORITHMS,
            scopes=tuple(args.oauth_scope), jwks_min_refresh=args.oauth_jwks_refresh,
            claims=Claims(subject=args.oauth_subject_claim, roles=args.oauth_roles_claim,
                          tenant=args.oauth_tenant_claim))
    except InvalidArgument as exc:
        error(str(exc))
        return False, None
