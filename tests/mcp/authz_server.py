"""A small OAuth 2.1 authorization server for the resource-server tests (tests/test_serve_oauth*).

Run: ``python authz_server.py PORT`` (127.0.0.1 only), in a process of its own. It serves:

- ``/.well-known/oauth-authorization-server`` (RFC 8414 metadata: issuer, jwks_uri,
  token_endpoint) and ``/jwks`` (its public keys: an RSA, a P-256 and an Ed25519 key);
- ``POST /token``: the client_credentials grant (``client_id`` and ``client_secret`` in the
  form), with RFC 8707's ``resource`` as the token's ``aud`` and ``scope`` as its scopes. The
  clients are ``TETHER_AUTHZ_CLIENTS`` (JSON: client_id -> {secret, sub, tenant, roles, scopes});
  a token's claims are ``iss sub aud exp iat nbf scope client_id tenant roles``. Test knobs, in
  the same form: ``alg`` (RS256, ES256, EdDSA), ``ttl`` (seconds; negative: already expired),
  ``nbf_in`` (seconds until valid), ``issuer`` (a different ``iss``, signed with the real key);
- ``POST /_rotate``: a new RSA key with a new ``kid`` replaces the old one (in the JWKS too);
- ``GET /_counts``: how many times the JWKS and the metadata were fetched.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

PORT = int(sys.argv[1])
BASE = f"http://127.0.0.1:{PORT}"
CLIENTS: dict[str, dict[str, Any]] = json.loads(os.environ.get("TETHER_AUTHZ_CLIENTS", "{}"))
counts = {"jwks": 0, "metadata": 0, "token": 0}


class Keys:
    def __init__(self) -> None:
        self.generation = 1
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.ed = ed25519.Ed25519PrivateKey.generate()

    def signing(self, alg: str) -> tuple[Any, str]:
        if alg == "RS256":
            return self.rsa, f"rsa-{self.generation}"
        if alg == "ES256":
            return self.ec, "ec-1"
        if alg == "EdDSA":
            return self.ed, "ed-1"
        raise ValueError(alg)

    def jwks(self) -> dict[str, Any]:
        keys = []
        for public, algorithm, kid, alg in (
                (self.rsa.public_key(), RSAAlgorithm, f"rsa-{self.generation}", "RS256"),
                (self.ec.public_key(), ECAlgorithm, "ec-1", "ES256"),
                (self.ed.public_key(), OKPAlgorithm, "ed-1", "EdDSA")):
            jwk = algorithm.to_jwk(public, as_dict=True)
            keys.append({**jwk, "kid": kid, "use": "sig", "alg": alg})
        return {"keys": keys}

    def rotate(self) -> None:
        self.generation += 1
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)


KEYS = Keys()


async def metadata(request: Request) -> Response:
    counts["metadata"] += 1
    return JSONResponse({"issuer": BASE, "jwks_uri": f"{BASE}/jwks",
                         "token_endpoint": f"{BASE}/token",
                         # the SDK's client reads RFC 8414's required fields; no user flow here
                         "authorization_endpoint": f"{BASE}/authorize",
                         "response_types_supported": ["code"],
                         "grant_types_supported": ["client_credentials"],
                         "token_endpoint_auth_methods_supported": ["client_secret_post"]})


async def jwks(request: Request) -> Response:
    counts["jwks"] += 1
    return JSONResponse(KEYS.jwks())


async def token(request: Request) -> Response:
    counts["token"] += 1
    form = await request.form()
    client = CLIENTS.get(str(form.get("client_id")))
    if form.get("grant_type") != "client_credentials":
        return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
    if client is None or form.get("client_secret") != client["secret"]:
        return JSONResponse({"error": "invalid_client"}, status_code=401)
    resource = form.get("resource")
    if not resource:
        return JSONResponse({"error": "invalid_target"}, status_code=400)
    asked = str(form.get("scope") or " ".join(client.get("scopes", []))).split()
    if not set(asked) <= set(client.get("scopes", [])):
        return JSONResponse({"error": "invalid_scope"}, status_code=400)
    now = int(time.time())
    ttl = int(str(form.get("ttl") or 300))
    claims: dict[str, Any] = {
        "iss": str(form.get("issuer") or BASE), "sub": client["sub"], "aud": str(resource),
        "iat": now, "nbf": now + int(str(form.get("nbf_in") or 0)), "exp": now + ttl,
        "scope": " ".join(asked), "client_id": form.get("client_id")}
    if client.get("tenant") is not None:
        claims["tenant"] = client["tenant"]
    if client.get("roles") is not None:
        claims["roles"] = client["roles"]
    alg = str(form.get("alg") or "RS256")
    key, kid = KEYS.signing(alg)
    signed = jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})
    return JSONResponse({"access_token": signed, "token_type": "Bearer", "expires_in": ttl,
                        "scope": " ".join(asked)})


async def rotate(request: Request) -> Response:
    KEYS.rotate()
    return JSONResponse({"kid": f"rsa-{KEYS.generation}"})


async def get_counts(request: Request) -> Response:
    return JSONResponse(counts)


app = Starlette(routes=[
    Route("/.well-known/oauth-authorization-server", metadata),
    Route("/jwks", jwks),
    Route("/token", token, methods=["POST"]),
    Route("/_rotate", rotate, methods=["POST"]),
    Route("/_counts", get_counts),
])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
