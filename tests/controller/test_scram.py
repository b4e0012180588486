"""AlterUserScramCredentials against Kafka's ScramControlManager."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from admin_helpers import (
    SHA256,
    SHA512,
    alter_scram,
    apply,
    base_image,
    context,
    delete_credential,
    messages,
    roundtrip,
    upsert,
)

from kraft_testkit.controller.scram import alter_user_scram_credentials, salted_password, scram_keys
from kraft_testkit.metadata import versions
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E


def run(deletions=(), upsertions=(), image=None):
    ctx = context(image)
    return ctx.image, alter_user_scram_credentials(ctx, alter_scram(deletions, upsertions))


def outcome(result) -> dict[str, int]:
    return {r.user: r.error_code for r in result.response.results}


def test_keys_reproduce_the_rfc_7677_exchange():
    """RFC 7677's SCRAM-SHA-256 example: the keys we store must verify its client proof and
    produce its server signature."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    salted = salted_password(SHA256, "pencil", salt, 4096)
    stored, server = scram_keys(SHA256, salted)
    nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    auth = (f"n=user,r=rOprNGfwEbeRWgbNEkqO,r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
            f"c=biws,r={nonce}").encode()
    signature = hmac.new(server, auth, hashlib.sha256).digest()
    assert base64.b64encode(signature) == b"6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_signature = hmac.new(stored, auth, hashlib.sha256).digest()
    client_key = bytes(p ^ c for p, c in zip(proof, client_signature))
    assert hashlib.sha256(client_key).digest() == stored  # what a server checks
    assert len(scram_keys(SHA512, salted_password(SHA512, "pencil", salt, 4096))[0]) == 64


def test_upsert_then_delete_and_replay():
    salted = salted_password(SHA512, "secret", b"NaCl", 8192)
    image, result = run(upsertions=[upsert("alice", SHA256), upsert("bob", SHA512, 8192,
                                                                   b"NaCl", salted)])
    assert outcome(result) == {"alice": 0, "bob": 0}
    stored, server = scram_keys(SHA512, salted)
    assert messages(result)[1] == M.UserScramCredentialRecord(
        name="bob", mechanism=SHA512, salt=b"NaCl", stored_key=stored, server_key=server,
        iterations=8192)
    image = apply(image, result)
    credential = image.scram.get("bob", SHA512)
    assert (credential.salt, credential.stored_key, credential.server_key,
            credential.iterations) == (b"NaCl", stored, server, 8192)
    assert image.scram.get("alice", SHA256) is not None

    _, removal = run(deletions=[delete_credential("alice", SHA256)], image=image)
    assert outcome(removal) == {"alice": 0}
    assert messages(removal) == [M.RemoveUserScramCredentialRecord(name="alice",
                                                                   mechanism=SHA256)]
    after = apply(image, removal)
    assert after.scram.get("alice", SHA256) is None and after.scram.get("bob", SHA512)


def test_upsert_replaces_a_credential():
    image = apply(*run(upsertions=[upsert("alice", iterations=4096)]))
    _, result = run(upsertions=[upsert("alice", iterations=5000, salt=b"new")], image=image)
    after = apply(image, result)
    assert (after.scram.get("alice", SHA256).iterations,
            after.scram.get("alice", SHA256).salt) == (5000, b"new")


@pytest.mark.parametrize("deletions,upsertions,code,message", [
    ([], [upsert("", SHA256)], E.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
    ([], [upsert("a", 0)], E.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    ([], [upsert("a", 3)], E.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    ([], [upsert("a", iterations=4095)], E.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
    ([], [upsert("a", iterations=16385)], E.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
    ([delete_credential("a", 7)], [], E.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    ([delete_credential("")], [], E.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
    ([delete_credential("a")], [], E.RESOURCE_NOT_FOUND, "does not exist"),
])
def test_invalid_alterations(deletions, upsertions, code, message):
    _, result = run(deletions, upsertions)
    [answer] = result.response.results
    assert answer.error_code == code and message in answer.error_message
    assert result.records == ()


def test_iteration_bounds_are_inclusive():
    _, result = run(upsertions=[upsert("low", iterations=4096),
                                upsert("high", SHA512, iterations=16384)])
    assert outcome(result) == {"low": 0, "high": 0}


def test_a_user_may_be_touched_once_per_request():
    image = apply(*run(upsertions=[upsert("alice", SHA256), upsert("alice2", SHA512)]))
    _, result = run(deletions=[delete_credential("alice", SHA256),
                               delete_credential("alice2", SHA512),
                               delete_credential("alice2", SHA512)],
                    upsertions=[upsert("alice", SHA512), upsert("carol"), upsert("carol", SHA512),
                                upsert("carol"), upsert("dave")],
                    image=image)
    assert outcome(result) == {"alice": E.DUPLICATE_RESOURCE, "alice2": E.DUPLICATE_RESOURCE,
                               "carol": E.DUPLICATE_RESOURCE, "dave": 0}
    assert [m.name for m in messages(result)] == ["dave"]  # the duplicates write nothing
    assert [r.user for r in result.response.results] == ["dave", "alice2", "alice", "carol"]


def test_first_error_for_a_user_stands():
    _, result = run(deletions=[delete_credential("ghost"), delete_credential("ghost")])
    assert outcome(result) == {"ghost": E.RESOURCE_NOT_FOUND}


@pytest.mark.parametrize("mv", [None, versions.IBP_3_5_IV2 - 1])
def test_metadata_version_before_3_5_iv2_refuses(mv):
    _, result = run(deletions=[delete_credential("a")], upsertions=[upsert("b"), upsert("")],
                    image=base_image(mv=mv))
    assert outcome(result) == {"a": E.UNSUPPORTED_VERSION, "b": E.UNSUPPORTED_VERSION,
                               "": E.UNSUPPORTED_VERSION}
    assert result.records == ()


def test_response_encodes():
    _, result = run(deletions=[delete_credential("x")], upsertions=[upsert("y")])
    assert roundtrip(result.response, 0) == result.response
