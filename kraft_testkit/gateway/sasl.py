"""SASL at the front door: PLAIN and SCRAM-SHA-256/512 against the cluster's own credentials.

The credentials are the SCRAM credentials in the committed metadata (``UserScramCredential``
records: salt, iterations, StoredKey, ServerKey; set them with
``cluster.upsert_scram_credential`` or a client's AlterUserScramCredentials). SCRAM runs the
RFC 5802 server exchange over SaslAuthenticate; PLAIN checks the password by salting it with the
user's stored SCRAM salt and comparing the StoredKey (the kit keeps no plain passwords).

As Kafka's SaslServerAuthenticator: SaslHandshake (v1) names the mechanism (an unknown one is
UNSUPPORTED_SASL_MECHANISM with the enabled list); a failed exchange is answered with
SASL_AUTHENTICATION_FAILED and the connection is closed; on a listener that requires SASL any
other request before authentication closes the connection. Server nonces come from the
cluster's seeded RNG tree.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

from kraft_testkit.controller.scram import MECHANISMS, scram_keys
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

from .context import RequestContext

ENABLED = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_BY_NAME = {name: (mech, digest) for mech, (name, digest) in MECHANISMS.items()}
_HS, _AU = M.SaslHandshakeResponse, M.SaslAuthenticateResponse


class AuthFailed(Exception):
    """The exchange failed (internal: becomes SASL_AUTHENTICATION_FAILED)."""


@dataclass
class SaslState:
    mechanism: str
    step: int = 0
    user: str | None = None
    authenticated: bool = False
    first_bare: str = ""
    server_first: str = ""
    nonce: str = ""


def _image(ctx: RequestContext) -> Any:
    machine = ctx.cluster.controller_node(ctx.node)
    return machine.image if ctx.role == "broker" else machine.controller.committed


def handshake(ctx: RequestContext, req: Any) -> Any:
    conn = ctx.connection
    if conn.sasl is not None:
        conn.close_after_write = True
        return _HS(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=ENABLED)
    if req.mechanism not in ENABLED:
        return _HS(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=ENABLED)
    conn.sasl = SaslState(req.mechanism)
    return _HS(error_code=0, mechanisms=ENABLED)


def authenticate(ctx: RequestContext, req: Any) -> Any:
    conn = ctx.connection
    state = conn.sasl
    if state is None or state.authenticated:
        conn.close_after_write = True
        return _AU(error_code=ErrorCode.ILLEGAL_SASL_STATE, auth_bytes=b"",
                   error_message="SaslAuthenticate without a SaslHandshake")
    try:
        if state.mechanism == "PLAIN":
            out = _plain(ctx, state, bytes(req.auth_bytes))
        else:
            out = _scram(ctx, state, bytes(req.auth_bytes))
    except AuthFailed as e:
        conn.close_after_write = True
        ctx.gateway.log_line(f"node {ctx.node}: {state.mechanism} authentication failed: {e}")
        return _AU(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, auth_bytes=b"",
                   error_message=f"Authentication failed: {e}")
    return _AU(error_code=0, auth_bytes=out, session_lifetime_ms=0)


def _plain(ctx: RequestContext, state: SaslState, token: bytes) -> bytes:
    parts = token.split(b"\x00")
    if len(parts) != 3:
        raise AuthFailed("a PLAIN token is authzid NUL user NUL password")
    user, password = parts[1].decode("utf-8", "replace"), parts[2]
    image = _image(ctx)
    for mech in sorted(MECHANISMS):
        cred = image.scram.get(user, mech)
        if cred is None:
            continue
        digest_name = "sha256" if mech == 1 else "sha512"
        salted = hashlib.pbkdf2_hmac(digest_name, password, cred.salt, cred.iterations)
        if hmac.compare_digest(scram_keys(mech, salted)[0], cred.stored_key):
            state.user, state.authenticated = user, True
            return b""
    raise AuthFailed(f"invalid credentials for user {user!r}")


def _attrs(message: str) -> dict[str, str]:
    out = {}
    for part in message.split(","):
        if "=" in part:
            key, value = part.split("=", 1)
            out[key] = value
    return out


def _scram(ctx: RequestContext, state: SaslState, token: bytes) -> bytes:
    mech, digest = _BY_NAME[state.mechanism]
    text = token.decode("utf-8", "replace")
    if state.step == 0:
        if not text.startswith(("n,", "y,")) or text.count(",") < 3:
            raise AuthFailed("malformed client-first message")
        gs2_end = text.index(",", text.index(",") + 1) + 1
        state.first_bare = text[gs2_end:]
        attrs = _attrs(state.first_bare)
        user, client_nonce = attrs.get("n"), attrs.get("r")
        if not user or not client_nonce:
            raise AuthFailed("client-first message without user or nonce")
        user = user.replace("=2C", ",").replace("=3D", "=")
        cred = _image(ctx).scram.get(user, mech)
        if cred is None:
            raise AuthFailed(f"no {state.mechanism} credential for user {user!r}")
        state.user = user
        state.nonce = client_nonce + ctx.gateway.sasl_nonce()
        state.server_first = (f"r={state.nonce},s={base64.b64encode(cred.salt).decode()},"
                              f"i={cred.iterations}")
        state.step = 1
        return state.server_first.encode()
    if state.step == 1:
        attrs = _attrs(text)
        if attrs.get("r") != state.nonce or "p=" not in text:
            raise AuthFailed("client-final message with a wrong nonce or no proof")
        without_proof = text[:text.rindex(",p=")]
        auth_message = f"{state.first_bare},{state.server_first},{without_proof}".encode()
        cred = _image(ctx).scram.get(state.user, mech)
        if cred is None:
            raise AuthFailed(f"the credential of {state.user!r} went away")
        signature = hmac.new(cred.stored_key, auth_message, digest).digest()
        proof = base64.b64decode(attrs["p"])
        if len(proof) != len(signature):
            raise AuthFailed("a client proof of the wrong length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(digest(client_key).digest(), cred.stored_key):
            raise AuthFailed(f"invalid credentials for user {state.user!r}")
        state.authenticated = True
        state.step = 2
        server_signature = hmac.new(cred.server_key, auth_message, digest).digest()
        return b"v=" + base64.b64encode(server_signature)
    raise AuthFailed("the exchange is already complete")


def describe_user_scram_credentials(ctx: RequestContext, req: Any) -> Any:
    """DescribeUserScramCredentials (50) from the node's metadata, as Kafka's brokers answer it:
    every user with a credential when no user is named; RESOURCE_NOT_FOUND for a named user
    without one, DUPLICATE_RESOURCE for a user named twice."""
    R = M.DescribeUserScramCredentialsResponse
    by_user: dict[str, list] = {}
    for (user, mech), cred in sorted(_image(ctx).scram.credentials.items()):
        by_user.setdefault(user, []).append(R.CredentialInfo(mechanism=mech,
                                                             iterations=cred.iterations))
    names = [u.name for u in req.users] if req.users else sorted(by_user)
    results = []
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            results.append(R.DescribeUserScramCredentialsResult(
                user=name, error_code=ErrorCode.DUPLICATE_RESOURCE,
                error_message="Cannot describe SCRAM credentials for the same user twice"))
        elif name not in by_user:
            results.append(R.DescribeUserScramCredentialsResult(
                user=name, error_code=ErrorCode.RESOURCE_NOT_FOUND,
                error_message="Attempt to describe a user credential that does not exist"))
        else:
            results.append(R.DescribeUserScramCredentialsResult(
                user=name, error_code=0, credential_infos=tuple(by_user[name])))
    return R(throttle_time_ms=0, error_code=0, results=tuple(results))


def create_delegation_token(ctx: RequestContext, req: Any) -> Any:
    """CreateDelegationToken (38) as Kafka's brokers take it: only over an authenticated SASL
    connection (else DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, answered by the broker); forwarded to
    the controller with the SASL user as owner when the request names none."""
    from .forwarding import forward

    state = ctx.connection.sasl if ctx.connection is not None else None
    if state is None or not state.authenticated:
        return M.CreateDelegationTokenResponse(
            error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, principal_type="",
            principal_name="")
    if not req.owner_principal_name:
        req = req.replace(owner_principal_type="User", owner_principal_name=state.user)
    return forward(ctx, req)
