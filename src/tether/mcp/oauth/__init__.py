"""OAuth for MCP servers behind an authorization server: which flow, and where the tokens live.

Why: an MCP server on streamable HTTP may answer ``401`` and point, through its protected
resource metadata, at an OAuth authorization server. The ``mcp`` SDK implements the client side
of the protocol's authorization spec (discovery, resource and issuer checks, PKCE, dynamic
registration, client-id metadata documents, scope step-up, refresh); tether does not redo any of
it. This module is the small part tether owns:

- the **configuration**, frozen data given as ``MCPServer.http(..., auth=...)``:
  ``AuthorizationCode`` (PKCE; pre-registered client, dynamic registration, or a client-id
  metadata document URL), ``ClientCredentials`` (``client_secret_basic`` or
  ``client_secret_post``) and ``PrivateKeyJWT``; client secrets and keys are ``Secret``;
- the **token store** (``TokenStore``), the SDK's ``TokenStorage`` kept in memory, per process,
  with every access token, refresh token and client secret wrapped in a ``Secret`` — so no
  repr, log line, journal entry, span or prompt can show one; nothing is written to disk;
- the **user agent seam** of the code flow: ``authorize(url) -> redirect URL``; the default,
  ``loopback_authorize``, prints the URL (and opens a browser when it can) and waits for the
  redirect on a listener bound to 127.0.0.1;
- the **errors**: every failure of the flow becomes an ``MCPConnectionError`` that says what
  happened (refused token, resource or issuer mismatch, a server that wants authorization when
  none is configured, ...) and what to do, and never quotes a token or a secret.

Imports the SDK only when a connection is opened (``httpx_auth``).
"""

from tether.mcp.oauth.flows import (
    FLOWS,
    AuthorizationCode,
    ClientCredentials,
    OAuth,
    PrivateKeyJWT,
    TokenStore,
)
from tether.mcp.oauth.guard import httpx_auth
from tether.mcp.oauth.user_agent import code_from, free_loopback_redirect, loopback_authorize

__all__ = ["FLOWS", "AuthorizationCode", "ClientCredentials", "OAuth", "PrivateKeyJWT",
           "TokenStore", "code_from", "free_loopback_redirect", "httpx_auth",
           "loopback_authorize"]
