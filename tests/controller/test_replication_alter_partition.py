"""AlterPartition: Kafka's validation order and codes, per API version, and accepted changes
replayed into the image."""

from __future__ import annotations

import pytest
from replication_helpers import (
    alter_isr,
    apply,
    broker_epoch,
    cluster,
    create_topic,
    ctx,
    fence,
    shutting_down,
    unregister,
)

from kraft_testkit.controller.replication import alter_partition
from kraft_testkit.metadata import LeaderRecoveryState
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E
from kraft_testkit.protocol.uuid import Uuid


@pytest.fixture
def image():
    """Topic "t": partition 0 on [1, 2, 3] led by 1; brokers 1-4 registered and unfenced."""
    return create_topic(ctx(cluster((1, 2, 3, 4))), "t", -1, -1, assignments={0: [1, 2, 3]})


def send(image, request, version=3, **config):
    return alter_partition(ctx(image, **config), request, version=version)


def only(result):
    (topic,) = result.response.topics
    (partition,) = topic.partitions
    return partition


def test_shrink_accepted_and_replayed(image):
    result = send(image, alter_isr(image, "t", 0, [1, 2]))
    p = only(result)
    assert result.response.error_code == E.NONE and p.error_code == E.NONE
    assert (p.leader_id, p.isr, p.leader_epoch, p.partition_epoch) == (1, (1, 2), 0, 1)
    assert not result.atomic
    after = apply(image, result).topic("t").partitions[0]
    assert (after.leader, after.isr, after.leader_epoch, after.partition_epoch) == \
        (p.leader_id, p.isr, p.leader_epoch, p.partition_epoch)


def test_unchanged_isr_writes_nothing_and_answers_current_state(image):
    result = send(image, alter_isr(image, "t", 0, [1, 2, 3]))
    assert result.records == () and only(result).error_code == E.NONE
    assert only(result).partition_epoch == 0


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_every_version_round_trips(image, version):
    result = send(image, alter_isr(image, "t", 0, [1, 3], version=version), version)
    assert only(result).error_code == E.NONE
    assert apply(image, result).topic("t").partitions[0].isr == (1, 3)
    result.response.encode(version)  # the answer fits the version it answers


def test_stale_broker_epoch_fails_the_whole_request(image):
    request = alter_isr(image, "t", 0, [1, 2]).replace(broker_epoch=broker_epoch(1) + 1)
    result = send(image, request)
    assert result.response.error_code == E.STALE_BROKER_EPOCH
    assert result.response.topics == () and result.records == ()
    unknown = alter_isr(image, "t", 0, [1, 2]).replace(broker_id=42)
    assert send(image, unknown).response.error_code == E.STALE_BROKER_EPOCH


def test_unknown_topic_by_id_and_by_name(image):
    by_id = alter_isr(image, "t", 0, [1, 2])
    T = M.AlterPartitionRequest.TopicData
    ghost = by_id.replace(topics=[T(topic_id=Uuid(b"\3" * 16),
                                    partitions=by_id.topics[0].partitions)])
    assert only(send(image, ghost)).error_code == E.UNKNOWN_TOPIC_ID
    zero = by_id.replace(topics=[T(topic_id=Uuid.ZERO, partitions=by_id.topics[0].partitions)])
    assert only(send(image, zero)).error_code == E.UNKNOWN_TOPIC_ID
    by_name = alter_isr(image, "t", 0, [1, 2], version=1)
    missing = by_name.replace(topics=[T(topic_name="nope",
                                        partitions=by_name.topics[0].partitions)])
    assert only(send(image, missing, version=1)).error_code == E.UNKNOWN_TOPIC_OR_PARTITION


def test_unknown_partition(image):
    request = alter_isr(image, "t", 0, [1, 2])
    data = request.topics[0].partitions[0].replace(partition_index=9)
    request = request.replace(topics=[request.topics[0].replace(partitions=[data])])
    assert only(send(image, request)).error_code == E.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("kw, code", [
    ({"leader_epoch": -1}, E.FENCED_LEADER_EPOCH),
    ({"leader_epoch": 5}, E.NOT_CONTROLLER),
    ({"partition_epoch": 5}, E.NOT_CONTROLLER),
    ({"partition_epoch": -1}, E.INVALID_UPDATE_VERSION),
])
def test_epoch_checks(image, kw, code):
    assert only(send(image, alter_isr(image, "t", 0, [1, 2], **kw))).error_code == code


def test_requester_not_the_leader_is_invalid_request(image):
    request = alter_isr(image, "t", 0, [1, 2], broker_id=2)
    assert only(send(image, request)).error_code == E.INVALID_REQUEST


def test_fenced_leader_epoch_comes_before_leadership(image):
    request = alter_isr(image, "t", 0, [1, 2], broker_id=2, leader_epoch=-1)
    assert only(send(image, request)).error_code == E.FENCED_LEADER_EPOCH


@pytest.mark.parametrize("isr", [[], [1, 4], [1, 1], [2, 3], [1, -1]])
def test_invalid_isr(image, isr):
    """Empty, outside the replicas, duplicated, without the leader, negative."""
    assert only(send(image, alter_isr(image, "t", 0, isr))).error_code == E.INVALID_REQUEST


def test_leader_recovery_state_rules(image):
    recovering = LeaderRecoveryState.RECOVERING
    assert only(send(image, alter_isr(image, "t", 0, [1], leader_recovery_state=recovering))
                ).error_code == E.INVALID_REQUEST  # RECOVERED -> RECOVERING is not allowed
    assert only(send(image, alter_isr(image, "t", 0, [1, 2], leader_recovery_state=recovering))
                ).error_code == E.INVALID_REQUEST
    assert only(send(image, alter_isr(image, "t", 0, [1, 2], leader_recovery_state=7))
                ).error_code == E.INVALID_REQUEST


@pytest.mark.parametrize("version, code", [(1, E.OPERATION_NOT_ATTEMPTED),
                                           (2, E.INELIGIBLE_REPLICA), (3, E.INELIGIBLE_REPLICA)])
def test_ineligible_replicas(image, version, code):
    shrunk = apply(image, send(image, alter_isr(image, "t", 0, [1])))
    for change in (fence, shutting_down, unregister):
        state = shrunk.replay([change(shrunk, 3)])
        request = alter_isr(state, "t", 0, [1, 3], version=version)
        assert only(send(state, request, version)).error_code == code
    # v3: a broker epoch that is not the registration's (a restarted broker)
    if version == 3:
        request = alter_isr(shrunk, "t", 0, [1, 3], broker_epochs={3: broker_epoch(3) - 1})
        assert only(send(shrunk, request)).error_code == E.INELIGIBLE_REPLICA
        request = alter_isr(shrunk, "t", 0, [1, 3], broker_epochs={3: broker_epoch(3)})
        assert only(send(shrunk, request)).error_code == E.NONE


def test_leader_in_controlled_shutdown_cannot_change_isr(image):
    state = image.replay([shutting_down(image, 1)])
    assert only(send(state, alter_isr(state, "t", 0, [1, 2]))).error_code == E.INELIGIBLE_REPLICA


def test_recovering_leader_reports_recovered(image):
    from kraft_testkit.controller.replication import handle_broker_fenced
    state = apply(image, send(image, alter_isr(image, "t", 0, [1])))
    c = ctx(state, **{"unclean.leader.election.enable": "true"})
    state = apply(state, [*handle_broker_fenced(c, 1), fence(state, 1)])
    reg = state.topic("t").partitions[0]
    assert reg.leader_recovery_state == LeaderRecoveryState.RECOVERING and reg.isr == (reg.leader,)
    request = alter_isr(state, "t", 0, [reg.leader])
    p = only(send(state, request))
    assert p.error_code == E.NONE and p.leader_recovery_state == LeaderRecoveryState.RECOVERED
    after = apply(state, send(state, request)).topic("t").partitions[0]
    assert after.leader_recovery_state == LeaderRecoveryState.RECOVERED
    assert after.leader_epoch == reg.leader_epoch


def test_several_partitions_judged_one_by_one(image):
    image = create_topic(ctx(image), "u", -1, -1, assignments={0: [1, 2], 1: [2, 1]})
    AP = M.AlterPartitionRequest
    u = image.topic("u")
    request = AP(broker_id=1, broker_epoch=broker_epoch(1), topics=[AP.TopicData(
        topic_id=u.id, partitions=[
            AP.PartitionData(partition_index=0, leader_epoch=0, partition_epoch=0,
                             new_isr_with_epochs=[AP.BrokerState(broker_id=1)]),
            AP.PartitionData(partition_index=1, leader_epoch=0, partition_epoch=0,
                             new_isr_with_epochs=[AP.BrokerState(broker_id=1)])])])
    result = send(image, request)
    assert [p.error_code for p in result.response.topics[0].partitions] == \
        [E.NONE, E.INVALID_REQUEST]
    assert len(result.records) == 1
