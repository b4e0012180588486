"""SASL PLAIN and SCRAM against the cluster's own SCRAM credentials, with librdkafka and
kafka-python as the clients."""

from __future__ import annotations

import time

import pytest
from gateway_helpers import RawClient, port_of

from kraft_testkit.protocol import messages as M

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic


@pytest.fixture
def users(kraft_bootstrap):
    with kraft_bootstrap.hold() as c:
        c.upsert_scram_credential("alice", "alice-secret", mechanism="SCRAM-SHA-256")
        c.upsert_scram_credential("bob", "bob-secret", mechanism="SCRAM-SHA-512")
        c.run_for(1_000)  # the brokers replay the credentials
    return kraft_bootstrap


def _admin(srv, mechanism: str, user: str, password: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": srv.bootstrap_servers,
                        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
                        "sasl.username": user, "sasl.password": password})


@pytest.mark.kraft_gateway(sasl=True)
@pytest.mark.parametrize(("mechanism", "user", "password"), [
    ("SCRAM-SHA-256", "alice", "alice-secret"),
    ("SCRAM-SHA-512", "bob", "bob-secret"),
    ("PLAIN", "alice", "alice-secret"),
])
def test_librdkafka_authenticates(users, kraft_cluster, mechanism, user, password):
    admin = _admin(users, mechanism, user, password)
    admin.create_topics([NewTopic(f"by-{user}", 1, 3)])[f"by-{user}"].result(60)
    assert kraft_cluster.metadata.topic(f"by-{user}") is not None


@pytest.mark.kraft_gateway(sasl=True)
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_a_wrong_password_fails_and_closes(users, mechanism):
    admin = _admin(users, mechanism, "alice", "wrong")
    with pytest.raises(ck.KafkaException):  # the failed login, or no answer in 3 s
        admin.list_topics(timeout=3)
    # the client may give up before its login reaches a loaded gateway: wait for the refusal
    deadline = time.monotonic() + 60
    while not any("authentication failed" in line for line in users.lines):
        assert time.monotonic() < deadline, users.lines
        time.sleep(0.02)


def test_kafka_python_scram(users, kraft_cluster):
    pytest.importorskip("kafka")
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=users.bootstrap_servers,
                             security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice",
                             sasl_plain_password="alice-secret")
    assert admin.describe_cluster()["cluster_id"] == kraft_cluster.cluster_id
    admin.close()


@pytest.mark.kraft_gateway(sasl=True)
def test_a_sasl_listener_refuses_requests_before_authentication(users):
    raw = RawClient(port_of(users.bootstrap_servers))
    raw.request(M.ApiVersionsRequest(), 0)  # allowed before authenticating
    raw.correlation += 1
    from kraft_testkit.protocol import rpc

    raw.send_bytes(rpc.encode_request(M.MetadataRequest(topics=None), 12, raw.correlation))
    assert raw.closed_by_peer()


def test_unknown_mechanism_lists_the_enabled_ones(users):
    raw = RawClient(port_of(users.bootstrap_servers))
    answer = raw.request(M.SaslHandshakeRequest(mechanism="GSSAPI"), 1)
    assert answer.error_code == 33  # UNSUPPORTED_SASL_MECHANISM
    assert list(answer.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    raw.close()


def test_scram_credentials_through_confluents_admin(kraft_bootstrap, kraft_cluster):
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": kraft_bootstrap.bootstrap_servers})
    upsert = UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"carol-secret",
        b"carol-salt")
    admin.alter_user_scram_credentials([upsert])["carol"].result(60)
    assert kraft_cluster.metadata.scram.get("carol", 1).iterations == 8192
    described = admin.describe_user_scram_credentials(["carol"])["carol"].result(60)
    infos = described.scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in infos] == [(ScramMechanism.SCRAM_SHA_256, 8192)]
    sasl_admin = _admin(kraft_bootstrap, "SCRAM-SHA-256", "carol", "carol-secret")
    assert kraft_cluster.cluster_id == sasl_admin.describe_cluster().result(60).cluster_id


def test_delegation_tokens_need_an_authenticated_connection(users):
    from kraft_testkit.protocol.error_codes import ErrorCode

    R = M.CreateDelegationTokenRequest
    plain = RawClient(port_of(users.bootstrap_servers))
    answer = plain.request(R(renewers=(), max_lifetime_ms=-1), 3)
    assert answer.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    plain.close()
    authed = RawClient(port_of(users.bootstrap_servers))
    assert authed.request(M.SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
    ok = authed.request(M.SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"), 2)
    assert ok.error_code == 0
    answer = authed.request(R(renewers=(), max_lifetime_ms=-1), 3)
    # forwarded with alice as owner; the kit's controllers keep tokens off unless configured
    assert answer.error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert (answer.principal_type, answer.principal_name) == ("User", "alice")
    authed.close()
