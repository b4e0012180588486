"""The group admin APIs (ListGroups, DescribeGroups, OffsetFetch, OffsetDelete, DeleteGroups)
through kafka-python's admin client, and the coordinator's checks through a raw client:
MEMBER_ID_REQUIRED, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, INVALID_SESSION_TIMEOUT."""

from __future__ import annotations

import pytest
from gateway_helpers import RawClient, port_of

from kraft_testkit.gateway.groups.coordinator import (
    OFFSETS_TOPIC,
    java_string_hash,
    partition_for,
)
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E

kafka = pytest.importorskip("kafka")


def test_java_string_hash_matches_java():
    # values String.hashCode() gives in Java
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("billing") == -109829509
    assert java_string_hash("hello world") == 1794106052
    assert partition_for("billing", 50) == 9


@pytest.mark.kraft(brokers=3, seed=13)
def test_admin_lists_describes_and_deletes_a_group(kraft_bootstrap, kraft_cluster):
    boot = kraft_bootstrap.bootstrap_servers
    kraft_bootstrap.call(lambda c: c.create_topic("ledger", partitions=2, replication_factor=3))
    consumer = kafka.KafkaConsumer(bootstrap_servers=boot, group_id="audit",
                                   enable_auto_commit=False)
    tps = [kafka.TopicPartition("ledger", p) for p in range(2)]
    consumer.assign(tps)
    consumer.commit({tps[0]: kafka.OffsetAndMetadata(7, "", -1),
                     tps[1]: kafka.OffsetAndMetadata(3, "", -1)})  # a simple commit
    consumer.close()
    admin = kafka.KafkaAdminClient(bootstrap_servers=boot)
    try:
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed["audit"]["group_state"] == "Empty"
        offsets = admin.list_group_offsets({"audit": None})["audit"]
        assert {tp.partition: om.offset for tp, om in offsets.items()} == {0: 7, 1: 3}
        described = admin.describe_groups(["audit"])["audit"]
        assert described["group_state"] == "Empty" and not described["members"]
        deleted = admin.delete_group_offsets("audit", [tps[1]])
        assert deleted[tps[1]].__name__ == "NoError"
        offsets = admin.list_group_offsets({"audit": None})["audit"]
        assert {tp.partition: om.offset for tp, om in offsets.items()} == {0: 7}
        result = dict(admin.delete_groups(["audit"]))["audit"]
        assert result == "OK", result  # kafka-python names success so here
        assert "audit" not in {g["group_id"] for g in admin.list_groups()}
    finally:
        admin.close()
    with kraft_bootstrap.hold() as c:  # the records are in __consumer_offsets, then tombstones
        topic = c.metadata.topic(OFFSETS_TOPIC)
        p = partition_for("audit", len(topic.partitions))
        leader = topic.partitions[p].leader
        log = kraft_bootstrap.data_plane.log(leader, topic.id, p)
        assert log.log_end_offset == 5  # two commits, two offset tombstones, a group tombstone


@pytest.mark.kraft(brokers=3, seed=17)
def test_the_coordinators_checks(kraft_bootstrap, kraft_cluster):
    client = RawClient(port_of(kraft_bootstrap.bootstrap_servers))
    found = client.request(M.FindCoordinatorRequest(key_type=0, coordinator_keys=("g",)), 4)
    coordinator = found.coordinators[0]
    assert coordinator.error_code == 0
    client.close()
    client = RawClient(coordinator.port)
    J = M.JoinGroupRequest
    meta = b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"

    def join(member_id: str, session_ms: int = 10_000):
        return client.request(J(group_id="g", session_timeout_ms=session_ms,
                                rebalance_timeout_ms=10_000, member_id=member_id,
                                protocol_type="consumer",
                                protocols=(J.JoinGroupRequestProtocol(name="range",
                                                                      metadata=meta),)), 7)

    assert join("", session_ms=10).error_code == E.INVALID_SESSION_TIMEOUT
    first = join("")
    assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id
    assert join("someone-else").error_code == E.UNKNOWN_MEMBER_ID
    joined = join(first.member_id)  # after the initial rebalance delay (virtual time jumps)
    assert joined.error_code == 0 and joined.leader == first.member_id
    assert joined.generation_id == 1 and joined.protocol_name == "range"
    H = M.HeartbeatRequest
    beat = client.request(H(group_id="g", generation_id=5, member_id=first.member_id), 4)
    assert beat.error_code == E.ILLEGAL_GENERATION
    S = M.SyncGroupRequest
    synced = client.request(S(group_id="g", generation_id=1, member_id=first.member_id,
                              protocol_type="consumer", protocol_name="range",
                              assignments=(S.SyncGroupRequestAssignment(
                                  member_id=first.member_id, assignment=b"xyz"),)), 5)
    assert synced.error_code == 0 and synced.assignment == b"xyz"
    beat = client.request(H(group_id="g", generation_id=1, member_id=first.member_id), 4)
    assert beat.error_code == 0
    client.close()
