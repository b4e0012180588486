"""The KIP-848 consumer group protocol over raw ConsumerGroupHeartbeat requests: the
reconciliation order (a partition is revoked by its owner before its new owner gets it), the
errors of Kafka 4.2.1's GroupMetadataManager, static members, the session timeout on virtual
time, member-epoch checks of OffsetCommit/OffsetFetch, ConsumerGroupDescribe, ListGroups and
DescribeGroups of a consumer group, and the group after its coordinator's broker dies."""

from __future__ import annotations

import pytest
from gateway_helpers import RawClient, port_of

from kraft_testkit import Cluster, serve
from kraft_testkit.gateway.groups.coordinator import OFFSETS_TOPIC, partition_for
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E

H = M.ConsumerGroupHeartbeatRequest
GROUP, TOPIC = "raw-group", "events"


def _coordinator_client(srv) -> RawClient:
    client = RawClient(port_of(srv.bootstrap_servers))
    for _ in range(50):
        found = client.request(M.FindCoordinatorRequest(key_type=0, coordinator_keys=(GROUP,)), 4)
        if found.coordinators[0].error_code == 0:
            break
    client.close()
    assert found.coordinators[0].error_code == 0
    return RawClient(found.coordinators[0].port)


def _hb(client, member, epoch, owned=None, *, join=False, version=1, **kw):
    fields = dict(group_id=GROUP, member_id=member, member_epoch=epoch)
    if join:
        fields.update(rebalance_timeout_ms=30_000, subscribed_topic_names=(TOPIC,),
                      topic_partitions=())
    elif owned is not None:
        fields["topic_partitions"] = owned
    fields.update(kw)
    return client.request(H(**fields), version)


def _parts(answer) -> set[int]:
    assert answer.assignment is not None
    return {p for tp in answer.assignment.topic_partitions for p in tp.partitions}


def _owned(topic_id, parts):
    return (H.TopicPartitions(topic_id=topic_id, partitions=tuple(sorted(parts))),)


@pytest.fixture
def served():
    cluster = Cluster(3, 3, seed=17)
    with serve(cluster) as srv:
        srv.call(lambda c: c.create_topic(TOPIC, partitions=4, replication_factor=3))
        topic_id = srv.call(lambda c: c.metadata.topic(TOPIC).id)
        yield srv, topic_id


def test_a_partition_is_revoked_before_it_is_given_to_its_new_owner(served):
    srv, tid = served
    c = _coordinator_client(srv)
    a = _hb(c, "member-a", 0, join=True)
    assert (a.error_code, a.member_epoch, a.heartbeat_interval_ms) == (0, 1, 5000)
    assert _parts(a) == {0, 1, 2, 3}
    b = _hb(c, "member-b", 0, join=True)          # the group epoch moves to 2
    assert (b.error_code, b.member_epoch) == (0, 2)
    assert _parts(b) == set()                     # its target is still owned by a
    described = c.request(M.ConsumerGroupDescribeRequest(group_ids=(GROUP,)), 1).groups[0]
    assert (described.group_state, described.group_epoch, described.assignment_epoch) == \
        ("Reconciling", 2, 2)
    members = {m.member_id: m for m in described.members}
    target_b = {p for tp in members["member-b"].target_assignment.topic_partitions
                for p in tp.partitions}
    assert len(target_b) == 2 and members["member-b"].member_type == 1
    keep = {0, 1, 2, 3} - target_b

    a = _hb(c, "member-a", 1, _owned(tid, {0, 1, 2, 3}))
    assert (a.error_code, a.member_epoch) == (0, 1)   # revoking: the epoch waits
    assert _parts(a) == keep
    b = _hb(c, "member-b", 2, _owned(tid, set()))
    assert b.error_code == 0 and b.member_epoch == 2 and b.assignment is None  # still held
    a = _hb(c, "member-a", 1, _owned(tid, keep))      # a let them go
    assert (a.error_code, a.member_epoch) == (0, 2)
    b = _hb(c, "member-b", 2, _owned(tid, set()))
    assert _parts(b) == target_b                      # only now
    described = c.request(M.ConsumerGroupDescribeRequest(group_ids=(GROUP,)), 1).groups[0]
    assert described.group_state == "Stable" and described.assignor_name == "uniform"
    c.close()


def test_errors_static_members_and_the_session_timeout(served):
    srv, tid = served
    c = _coordinator_client(srv)
    assert _hb(c, "x", 3).error_code == E.GROUP_ID_NOT_FOUND
    assert _hb(c, "", 0, join=True).error_code == E.INVALID_REQUEST     # v1: the client's id
    assert _hb(c, "x", 0, subscribed_topic_names=(TOPIC,), topic_partitions=()).error_code == \
        E.INVALID_REQUEST                                               # no rebalance timeout
    assert _hb(c, "x", 0, join=True, server_assignor="sticky").error_code == \
        E.UNSUPPORTED_ASSIGNOR
    assert _hb(c, "x", -3).error_code == E.INVALID_REQUEST
    s = _hb(c, "static-1", 0, join=True, instance_id="i1", server_assignor="range")
    assert (s.error_code, s.member_epoch, _parts(s)) == (0, 1, {0, 1, 2, 3})
    assert _hb(c, "static-1", 7, _owned(tid, _parts(s))).error_code == E.FENCED_MEMBER_EPOCH
    assert _hb(c, "nobody", 1).error_code == E.UNKNOWN_MEMBER_ID
    other = _hb(c, "static-2", 0, join=True, instance_id="i1")
    assert other.error_code == E.UNRELEASED_INSTANCE_ID
    left = _hb(c, "static-1", -2, instance_id="i1")
    assert (left.error_code, left.member_epoch) == (0, -2)
    back = _hb(c, "static-2", 0, join=True, instance_id="i1")   # takes the instance's place
    assert back.error_code == 0 and _parts(back) == {0, 1, 2, 3}

    # offsets: a member commits at its epoch (v9+), fetches with it
    C = M.OffsetCommitRequest

    def commit(epoch, version=9, member="static-2"):
        return c.request(C(group_id=GROUP, generation_id_or_member_epoch=epoch, member_id=member,
                           topics=(C.OffsetCommitRequestTopic(name=TOPIC, partitions=(
                               C.OffsetCommitRequestPartition(partition_index=0,
                                                              committed_offset=5),)),)),
                         version).topics[0].partitions[0].error_code
    assert commit(back.member_epoch + 1) == E.STALE_MEMBER_EPOCH
    assert commit(back.member_epoch, version=8) == E.UNSUPPORTED_VERSION
    assert commit(back.member_epoch, member="ghost") == E.UNKNOWN_MEMBER_ID
    assert commit(back.member_epoch) == E.NONE
    F = M.OffsetFetchRequest

    def fetch(member, epoch):
        return c.request(F(groups=(F.OffsetFetchRequestGroup(
            group_id=GROUP, member_id=member, member_epoch=epoch, topics=None),)), 9).groups[0]
    assert fetch("static-2", back.member_epoch + 3).error_code == E.STALE_MEMBER_EPOCH
    got = fetch("static-2", back.member_epoch)
    assert got.error_code == 0 and got.topics[0].partitions[0].committed_offset == 5

    listed = c.request(M.ListGroupsRequest(types_filter=("consumer",)), 5).groups
    assert [(g.group_id, g.group_type, g.protocol_type) for g in listed] == \
        [(GROUP, "consumer", "consumer")]
    assert c.request(M.ListGroupsRequest(types_filter=("classic",)), 5).groups == ()
    described = c.request(M.DescribeGroupsRequest(groups=(GROUP,)), 6).groups[0]
    assert described.error_code == E.GROUP_ID_NOT_FOUND
    assert described.error_message == f"Group {GROUP} is not a classic group."

    srv.run_for(46_000)   # group.consumer.session.timeout.ms passes without a heartbeat
    assert _hb(c, "static-2", back.member_epoch, _owned(tid, {0, 1, 2, 3}),
               instance_id="i1").error_code == E.UNKNOWN_MEMBER_ID
    none = next(f"none-{i}" for i in range(1000)  # another group of the same partition
                if partition_for(f"none-{i}", 50) == partition_for(GROUP, 50))
    described = c.request(M.ConsumerGroupDescribeRequest(group_ids=(GROUP, none)), 0).groups
    assert described[0].group_state == "Empty" and described[0].members == ()
    assert described[1].error_code == E.GROUP_ID_NOT_FOUND
    c.close()


def test_the_group_goes_on_after_its_coordinators_broker_dies(served):
    srv, tid = served
    c = _coordinator_client(srv)
    a = _hb(c, "member-a", 0, join=True)
    b = _hb(c, "member-b", 0, join=True)
    a = _hb(c, "member-a", 1, _owned(tid, {0, 1, 2, 3}))
    keep = _parts(a)
    a = _hb(c, "member-a", 1, _owned(tid, keep))
    b = _hb(c, "member-b", 2, _owned(tid, set()))
    mine_b = _parts(b)
    assert (a.member_epoch, b.member_epoch) == (2, 2) and keep | mine_b == {0, 1, 2, 3}
    c.close()
    with srv.hold() as cl:
        topic = cl.metadata.topic(OFFSETS_TOPIC)
        dead = topic.partitions[partition_for(GROUP, 50)].leader
        cl.faults.kill(dead)
    for _ in range(100):
        c = _coordinator_client(srv)
        answer = _hb(c, "member-a", 2, _owned(tid, keep))
        if answer.error_code == 0:
            break
        c.close()
        srv.run_for(1_000)
    assert (answer.error_code, answer.member_epoch) == (0, 2)
    assert answer.assignment is None               # nothing changed for a
    described = c.request(M.ConsumerGroupDescribeRequest(group_ids=(GROUP,)), 1).groups[0]
    assert (described.group_epoch, described.assignment_epoch, described.group_state) == \
        (2, 2, "Stable")
    assert {m.member_id: m.member_epoch for m in described.members} == \
        {"member-a": 2, "member-b": 2}
    with srv.hold() as cl:
        assert cl.metadata.topic(OFFSETS_TOPIC).partitions[partition_for(GROUP, 50)].leader \
            != dead
    left = _hb(c, "member-b", -1)
    assert (left.error_code, left.member_epoch) == (0, -1)
    a = _hb(c, "member-a", 2, _owned(tid, keep))   # the group epoch moved: all to a
    assert a.member_epoch == 3 and _parts(a) == {0, 1, 2, 3}
    c.close()


def test_classic_apis_meet_a_consumer_group(served):
    """JoinGroup for a consumer group's id (INCONSISTENT_GROUP_PROTOCOL: the kit routes no
    classic member into it), OffsetDelete of a subscribed topic (GROUP_SUBSCRIBED_TO_TOPIC),
    DeleteGroups (NON_EMPTY_GROUP, then the group's records tombstoned)."""
    srv, tid = served
    c = _coordinator_client(srv)
    a = _hb(c, "member-a", 0, join=True)
    J = M.JoinGroupRequest
    joined = c.request(J(group_id=GROUP, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                         member_id="", protocol_type="consumer", protocols=(
                             J.JoinGroupRequestProtocol(name="range", metadata=b""),)), 7)
    assert joined.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    D = M.OffsetDeleteRequest
    deleted = c.request(D(group_id=GROUP, topics=(D.OffsetDeleteRequestTopic(
        name=TOPIC, partitions=(D.OffsetDeleteRequestPartition(partition_index=0),)),)), 0)
    assert deleted.topics[0].partitions[0].error_code == E.GROUP_SUBSCRIBED_TO_TOPIC
    gone = c.request(M.DeleteGroupsRequest(groups_names=(GROUP,)), 2).results[0]
    assert gone.error_code == E.NON_EMPTY_GROUP
    assert _hb(c, "member-a", -1).error_code == 0
    gone = c.request(M.DeleteGroupsRequest(groups_names=(GROUP,)), 2).results[0]
    assert gone.error_code == 0
    described = c.request(M.ConsumerGroupDescribeRequest(group_ids=(GROUP,)), 1).groups[0]
    assert described.error_code == E.GROUP_ID_NOT_FOUND
    assert a.member_epoch == 1 and _hb(c, "member-a", 1).error_code == E.GROUP_ID_NOT_FOUND
    c.close()


def test_a_consumer_group_takes_over_an_empty_classic_groups_offsets(served):
    """An id with only offsets (a simple commit: an empty classic group) becomes a consumer
    group on the first heartbeat (Kafka's getOrMaybeCreateConsumerGroup); the offsets stay."""
    srv, tid = served
    c = _coordinator_client(srv)
    C = M.OffsetCommitRequest
    simple = c.request(C(group_id=GROUP, generation_id_or_member_epoch=-1, member_id="",
                         topics=(C.OffsetCommitRequestTopic(name=TOPIC, partitions=(
                             C.OffsetCommitRequestPartition(partition_index=1,
                                                            committed_offset=7),)),)), 9)
    assert simple.topics[0].partitions[0].error_code == 0
    listed = c.request(M.ListGroupsRequest(), 5).groups
    assert [(g.group_id, g.group_type) for g in listed] == [(GROUP, "classic")]
    a = _hb(c, "member-a", 0, join=True)
    assert a.error_code == 0 and a.member_epoch == 1
    listed = c.request(M.ListGroupsRequest(), 5).groups
    assert [(g.group_id, g.group_type, g.group_state) for g in listed] == \
        [(GROUP, "consumer", "Stable")]
    F = M.OffsetFetchRequest
    got = c.request(F(groups=(F.OffsetFetchRequestGroup(
        group_id=GROUP, member_id="member-a", member_epoch=1, topics=None),)), 9).groups[0]
    assert [(p.partition_index, p.committed_offset) for t in got.topics
            for p in t.partitions] == [(1, 7)]
    c.close()
