"""CreateDelegationToken and the expiry sweep, after Kafka's DelegationTokenControlManager."""

from __future__ import annotations

import hashlib
import hmac
import random

import pytest
from admin_helpers import apply, base_image, context, messages, roundtrip

from kraft_testkit.controller.tokens import (
    SETTINGS_KEY,
    TokenSettings,
    create_delegation_token,
    expire_delegation_tokens,
    token_hmac,
)
from kraft_testkit.errors import ConfigError
from kraft_testkit.metadata import versions
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E
from kraft_testkit.protocol.uuid import Uuid

DAY = 24 * 3600 * 1000
NOW = 5_000_000
SETTINGS = TokenSettings.seeded(random.Random(99))
CDT = M.CreateDelegationTokenRequest


def request(*renewers: tuple[str, str], owner: tuple[str, str] | None = None,
            max_lifetime_ms: int = -1) -> M.CreateDelegationTokenRequest:
    return CDT(owner_principal_type=owner[0] if owner else None,
               owner_principal_name=owner[1] if owner else None,
               renewers=[CDT.CreatableRenewers(principal_type=t, principal_name=n)
                         for t, n in renewers],
               max_lifetime_ms=max_lifetime_ms)


def run(req, *, image=None, now_ms=NOW, seed=7, settings=SETTINGS, **kw):
    ctx = context(image, now_ms=now_ms, seed=seed)
    return ctx.image, create_delegation_token(ctx, req, settings=settings, **kw)


def test_create_issues_a_token_and_replays():
    image, result = run(request(("User", "bob")), requester="User:alice")
    response = result.response
    assert response.error_code == 0
    assert (response.principal_type, response.principal_name) == ("User", "alice")
    assert (response.token_requester_principal_type,
            response.token_requester_principal_name) == ("User", "alice")
    assert (response.issue_timestamp_ms, response.expiry_timestamp_ms,
            response.max_timestamp_ms) == (NOW, NOW + DAY, NOW + 7 * DAY)
    Uuid.parse(response.token_id)  # a Kafka uuid string
    expected = hmac.new(SETTINGS.secret_key.encode(), response.token_id.encode(),
                        hashlib.sha512).digest()
    assert response.hmac == expected == token_hmac(SETTINGS.secret_key, response.token_id)
    assert messages(result) == [M.DelegationTokenRecord(
        owner="User:alice", requester="User:alice", renewers=["User:bob"], issue_timestamp=NOW,
        max_timestamp=NOW + 7 * DAY, expiration_timestamp=NOW + DAY,
        token_id=response.token_id)]
    token = apply(image, result).delegation_tokens.tokens[response.token_id]
    assert (token.owner, token.requester, token.renewers) == ("User:alice", "User:alice",
                                                              ("User:bob",))
    assert roundtrip(response, 3) == response
    for version in range(3):  # before v3 the response does not name the requester
        old = run(request(("User", "bob")), requester="User:alice", version=version)[1].response
        assert old.token_requester_principal_name == "" and roundtrip(old, version) == old
        assert (old.token_id, old.hmac) == (response.token_id, response.hmac)


def test_owner_from_the_request_and_requested_lifetimes():
    _, result = run(request(owner=("User", "carol"), max_lifetime_ms=3600_000),
                    requester="User:admin")
    response = result.response
    assert (response.principal_name, response.token_requester_principal_name) == ("carol",
                                                                                   "admin")
    assert (response.max_timestamp_ms, response.expiry_timestamp_ms) == (NOW + 3600_000,
                                                                         NOW + 3600_000)
    assert messages(result)[0].owner == "User:carol"
    _, longer = run(request(max_lifetime_ms=30 * DAY))
    assert longer.response.max_timestamp_ms == NOW + 7 * DAY  # capped by the cluster setting
    _, empty_owner = run(request(owner=("User", "")))
    assert empty_owner.response.principal_name == "ANONYMOUS"


def test_ids_and_hmacs_are_fixed_by_the_seed():
    ids = [run(request(), seed=s)[1].response.token_id for s in (3, 3, 4)]
    assert ids[0] == ids[1] != ids[2]
    again = TokenSettings.seeded(random.Random(99))
    assert again.secret_key == SETTINGS.secret_key


def test_settings_come_from_the_context_and_default_to_disabled():
    ctx = context(now_ms=NOW)
    disabled = create_delegation_token(ctx, request())
    assert disabled.response.error_code == E.DELEGATION_TOKEN_AUTH_DISABLED
    assert disabled.records == ()
    ctx = context(now_ms=NOW, **{SETTINGS_KEY: SETTINGS})
    assert create_delegation_token(ctx, request()).response.error_code == 0


@pytest.mark.parametrize("kwargs,code", [
    ({"settings": TokenSettings()}, E.DELEGATION_TOKEN_AUTH_DISABLED),
    ({"image": base_image(mv=versions.IBP_3_6_IV2 - 1)}, E.UNSUPPORTED_VERSION),
    ({"image": base_image(mv=None)}, E.UNSUPPORTED_VERSION),
])
def test_refusals(kwargs, code):
    _, result = run(request(), **kwargs)
    assert result.response.error_code == code and result.records == ()
    assert result.response.principal_name == "ANONYMOUS"


def test_renewers_must_be_users():
    _, result = run(request(("User", "bob"), ("Group", "ops")))
    assert result.response.error_code == E.INVALID_PRINCIPAL_TYPE
    assert result.records == ()


def test_disabled_wins_over_bad_renewers_and_version():
    _, result = run(request(("Group", "ops")), image=base_image(mv=versions.IBP_3_6_IV1),
                    settings=TokenSettings())
    assert result.response.error_code == E.DELEGATION_TOKEN_AUTH_DISABLED


@pytest.mark.parametrize("bad", [{"max_lifetime_ms": 0}, {"expiry_time_ms": -5},
                                 {"expiry_check_interval_ms": 1.5}, {"secret_key": ""}])
def test_settings_are_checked(bad):
    with pytest.raises(ConfigError):
        TokenSettings(**bad)


def test_sweep_removes_expired_tokens_only():
    image = base_image()
    ids = []
    for issued in (0, DAY // 2, 2 * DAY):
        result = run(request(), image=image, now_ms=issued, seed=issued + 1)[1]
        ids.append(result.response.token_id)
        image = apply(image, result)
    ctx = context(image, now_ms=DAY + 1)  # the first token expired (expiry = issue + 1 day)
    sweep = expire_delegation_tokens(ctx)
    assert sweep.response == (ids[0],)
    assert messages(sweep) == [M.RemoveDelegationTokenRecord(token_id=ids[0])]
    image = apply(image, sweep)
    assert set(image.delegation_tokens.tokens) == {ids[1], ids[2]}
    exactly = expire_delegation_tokens(context(image, now_ms=DAY // 2 + DAY))
    assert exactly.records == ()  # expiry == now is not yet expired (Kafka compares <)
    late = expire_delegation_tokens(context(image, now_ms=10 * DAY))
    assert set(late.response) == {ids[1], ids[2]}
    assert apply(image, late).delegation_tokens.tokens == {}


def test_sweep_on_an_empty_image():
    sweep = expire_delegation_tokens(context(now_ms=NOW))
    assert sweep.records == () and sweep.response == ()
