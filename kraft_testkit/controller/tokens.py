"""Delegation tokens: CreateDelegationToken and the periodic sweep of expired tokens.

After released Kafka's ``DelegationTokenControlManager``. Tokens are on only when the cluster has
a secret (``delegation.token.secret.key``); the HMAC a client authenticates with is
HMAC-SHA512(secret, token id). A token lives at most ``max_lifetime_ms`` (the request may ask
for less) and expires ``expiry_time_ms`` after issue unless renewed (renewal is not modelled:
the RPC is not declared). Token ids are random uuids from ``ctx.rng``, so a seed fixes them.
Records need metadata.version 3.6-IV2 or later.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..metadata import versions as V
from ..protocol import messages as M
from ..protocol.error_codes import ErrorCode
from ..protocol.frames import MetadataRecord
from ..protocol.uuid import Uuid
from .result import ControllerContext, ControllerResult, record
from .scram import effective_metadata_version

USER_TYPE = "User"
ANONYMOUS = f"{USER_TYPE}:ANONYMOUS"
SETTINGS_KEY = "delegation_tokens"  # where a controller may put TokenSettings in ctx.extra


@dataclass(frozen=True, slots=True)
class TokenSettings:
    """Kafka's delegation.token.* settings, with its released defaults.

    ``secret_key`` None means tokens are off (Kafka's default): requests answer
    DELEGATION_TOKEN_AUTH_DISABLED. :meth:`seeded` draws a secret from a seeded random source,
    so a simulated cluster gets a stable secret per seed.
    """

    secret_key: str | None = None
    max_lifetime_ms: int = 7 * 24 * 3600 * 1000        # delegation.token.max.lifetime.ms
    expiry_time_ms: int = 24 * 3600 * 1000             # delegation.token.expiry.time.ms
    expiry_check_interval_ms: int = 3600 * 1000        # delegation.token.expiry.check.interval.ms

    def __post_init__(self) -> None:
        for key, value in (("delegation.token.max.lifetime.ms", self.max_lifetime_ms),
                           ("delegation.token.expiry.time.ms", self.expiry_time_ms),
                           ("delegation.token.expiry.check.interval.ms",
                            self.expiry_check_interval_ms)):
            if type(value) is not int or value < 1:
                raise ConfigError(f"{key} must be a positive integer, got {value!r}")
        if self.secret_key is not None and not self.secret_key:
            raise ConfigError("delegation.token.secret.key must be non-empty when set")

    @property
    def enabled(self) -> bool:
        return self.secret_key is not None

    @classmethod
    def seeded(cls, rng: random.Random, **overrides: Any) -> TokenSettings:
        """Settings with a secret drawn from ``rng`` (32 hex digits)."""
        return cls(secret_key=f"{rng.getrandbits(128):032x}", **overrides)


def settings_of(ctx: ControllerContext) -> TokenSettings:
    """The settings a controller put in ``ctx.extra``, else Kafka's defaults (tokens off)."""
    found = ctx.extra.get(SETTINGS_KEY)
    return found if isinstance(found, TokenSettings) else TokenSettings()


def token_hmac(secret_key: str, token_id: str) -> bytes:
    """The token's password: HMAC-SHA512 keyed with the secret's UTF-8 bytes."""
    return hmac.new(secret_key.encode("utf-8"), token_id.encode("utf-8"),
                    hashlib.sha512).digest()


def _split_principal(principal: str) -> tuple[str, str]:
    kind, _, name = principal.partition(":")
    return kind, name


def create_delegation_token(ctx: ControllerContext, request: M.CreateDelegationTokenRequest, *,
                            requester: str = ANONYMOUS, settings: TokenSettings | None = None,
                            version: int = 3
                            ) -> ControllerResult[M.CreateDelegationTokenResponse]:
    """Issue a token owned by the request's owner (v3+) or else by ``requester`` (the
    authenticated principal, ``type:name``). Checks in Kafka's order: tokens enabled,
    metadata.version, renewers are all ``User`` principals. ``version`` is the request's: the
    response names the requester from version 3 on (Kafka's ``prepareResponse``)."""
    settings = settings or settings_of(ctx)
    requester_type, requester_name = _split_principal(requester)
    owner_type, owner_name = requester_type, requester_name
    if request.owner_principal_name:
        owner_type, owner_name = request.owner_principal_type or "", request.owner_principal_name
    response = M.CreateDelegationTokenResponse(principal_type=owner_type,
                                               principal_name=owner_name)
    if version >= 3:
        response = response.replace(token_requester_principal_type=requester_type,
                                    token_requester_principal_name=requester_name)
    secret = settings.secret_key
    if secret is None:
        return ControllerResult.of(response.replace(
            error_code=int(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)))
    if not V.is_delegation_token_supported(effective_metadata_version(ctx.image)):
        return ControllerResult.of(response.replace(error_code=int(ErrorCode.UNSUPPORTED_VERSION)))
    renewers = []
    for renewer in request.renewers:
        if renewer.principal_type != USER_TYPE:
            return ControllerResult.of(response.replace(
                error_code=int(ErrorCode.INVALID_PRINCIPAL_TYPE)))
        renewers.append(f"{renewer.principal_type}:{renewer.principal_name}")

    now = ctx.now_ms
    lifetime = settings.max_lifetime_ms
    if request.max_lifetime_ms > 0:
        lifetime = min(lifetime, request.max_lifetime_ms)
    max_timestamp = now + lifetime
    expiry = min(max_timestamp, now + settings.expiry_time_ms)
    token_id = str(Uuid.random(ctx.rng))
    token = M.DelegationTokenRecord(
        owner=f"{owner_type}:{owner_name}", requester=requester, renewers=renewers,
        issue_timestamp=now, max_timestamp=max_timestamp, expiration_timestamp=expiry,
        token_id=token_id)
    return ControllerResult.of(
        response.replace(error_code=0, issue_timestamp_ms=now, expiry_timestamp_ms=expiry,
                         max_timestamp_ms=max_timestamp, token_id=token_id,
                         hmac=token_hmac(secret, token_id)),
        record(token, 0))


def expire_delegation_tokens(ctx: ControllerContext) -> ControllerResult[tuple[str, ...]]:
    """The sweep Kafka's controller runs every ``expiry_check_interval_ms``: a
    RemoveDelegationTokenRecord for each token whose expiry or max time is before ``now``.
    The response is the removed token ids (in id order)."""
    now = ctx.now_ms
    expired = tuple(sorted(
        token_id for token_id, token in ctx.image.delegation_tokens.tokens.items()
        if token.max_timestamp < now or token.expiration_timestamp < now))
    records: list[MetadataRecord] = [
        record(M.RemoveDelegationTokenRecord(token_id=token_id), 0) for token_id in expired]
    return ControllerResult(tuple(records), expired, True)
