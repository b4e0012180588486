"""SCRAM credentials: AlterUserScramCredentials, after Kafka's ``ScramControlManager``.

The client sends the salted password (it salts and hashes the password itself); the controller
keeps only RFC 5802's StoredKey and ServerKey, as released Kafka's UserScramCredentialRecord
does. A user may be touched once per request: a second deletion or upsertion for the same user
name (whatever the mechanism) answers DUPLICATE_RESOURCE and drops both. SCRAM records need
metadata.version 3.5-IV2 or later.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Any

from ..metadata import versions as V
from ..protocol import messages as M
from ..protocol.error_codes import ErrorCode
from ..protocol.frames import MetadataRecord
from .result import ControllerContext, ControllerResult, record

#: Kafka's ScramMechanism type ids and their hashes
MECHANISMS: dict[int, tuple[str, Callable[..., Any]]] = {
    1: ("SCRAM-SHA-256", hashlib.sha256),
    2: ("SCRAM-SHA-512", hashlib.sha512),
}
MIN_ITERATIONS = 4096   # both mechanisms' minimum (Kafka's internal ScramMechanism)
MAX_ITERATIONS = 16384  # ScramControlManager.MAX_ITERATIONS

ApiError = tuple[int, "str | None"]
_TWICE = (ErrorCode.DUPLICATE_RESOURCE,
          "A user credential cannot be altered twice in the same request")
_NO_SCRAM = (ErrorCode.UNSUPPORTED_VERSION, "The current metadata.version does not support SCRAM")
AUSC = M.AlterUserScramCredentialsResponse


def effective_metadata_version(image: Any) -> int:
    """The image's metadata.version, or Kafka's floor (3.0-IV1) before one is recorded."""
    level = image.metadata_version
    return V.MINIMUM_KRAFT_VERSION if level is None else level


def scram_keys(mechanism: int, salted_password: bytes) -> tuple[bytes, bytes]:
    """RFC 5802: StoredKey = H(HMAC(SaltedPassword, "Client Key")),
    ServerKey = HMAC(SaltedPassword, "Server Key")."""
    digest = MECHANISMS[mechanism][1]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    return digest(client_key).digest(), server_key


def salted_password(mechanism: int, password: str, salt: bytes, iterations: int) -> bytes:
    """What a client sends as SaltedPassword: RFC 5802's Hi(), i.e. PBKDF2 with the mechanism's
    hash (handy for tests and for the admin face)."""
    name = "sha256" if mechanism == 1 else "sha512"
    return hashlib.pbkdf2_hmac(name, password.encode("utf-8"), salt, iterations)


def alter_user_scram_credentials(ctx: ControllerContext,
                                 request: M.AlterUserScramCredentialsRequest
                                 ) -> ControllerResult[M.AlterUserScramCredentialsResponse]:
    """Deletions, then upsertions, checked per user in Kafka's order: duplicates, metadata
    version, name and mechanism, then existence (deletions) or iterations (upsertions)."""
    supported = V.is_scram_supported(effective_metadata_version(ctx.image))
    deletions: dict[str, Any] = {}
    upsertions: dict[str, Any] = {}
    errors: dict[str, ApiError] = {}
    for deletion in request.deletions:
        user = deletion.name
        if user in errors:
            continue
        if deletions.pop(user, None) is not None:
            errors[user] = _TWICE
        elif not supported:
            errors[user] = _NO_SCRAM
        else:
            error = _check_deletion(ctx, deletion)
            if error is None:
                deletions[user] = deletion
            else:
                errors[user] = error
    for upsertion in request.upsertions:
        user = upsertion.name
        if user in errors:
            continue
        if deletions.pop(user, None) is not None or upsertions.pop(user, None) is not None:
            errors[user] = _TWICE
        elif not supported:
            errors[user] = _NO_SCRAM
        else:
            error = _check_upsertion(upsertion)
            if error is None:
                upsertions[user] = upsertion
            else:
                errors[user] = error

    records: list[MetadataRecord] = []
    results = []
    for user, deletion in deletions.items():
        results.append(AUSC.AlterUserScramCredentialsResult(user=user, error_code=0))
        records.append(record(M.RemoveUserScramCredentialRecord(
            name=user, mechanism=deletion.mechanism), 0))
    for user, upsertion in upsertions.items():
        stored_key, server_key = scram_keys(upsertion.mechanism, upsertion.salted_password)
        results.append(AUSC.AlterUserScramCredentialsResult(user=user, error_code=0))
        records.append(record(M.UserScramCredentialRecord(
            name=user, mechanism=upsertion.mechanism, salt=upsertion.salt,
            stored_key=stored_key, server_key=server_key, iterations=upsertion.iterations), 0))
    for user, (code, message) in errors.items():
        results.append(AUSC.AlterUserScramCredentialsResult(
            user=user, error_code=int(code), error_message=message))
    return ControllerResult(tuple(records), AUSC(results=results), True)


def _check_user_and_mechanism(user: str, mechanism: int) -> ApiError | None:
    if not user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISMS:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _check_deletion(ctx: ControllerContext, deletion: Any) -> ApiError | None:
    error = _check_user_and_mechanism(deletion.name, deletion.mechanism)
    if error is not None:
        return error
    if ctx.image.scram.get(deletion.name, deletion.mechanism) is None:
        return (ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist")
    return None


def _check_upsertion(upsertion: Any) -> ApiError | None:
    error = _check_user_and_mechanism(upsertion.name, upsertion.mechanism)
    if error is not None:
        return error
    if upsertion.iterations < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if upsertion.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return None
