"""KIP-858: OfflineLogDirs in a heartbeat (Kafka's handleDirectoriesOffline) and
AssignReplicasToDirs (Kafka's handleAssignReplicasToDirs).

Broker 1 has two log directories; partition 0 lives in the first, partition 1 in the second.
When a heartbeat reports the first offline, broker 1 leaves partition 0's ISR and leadership
(and only partition 0's), and a BrokerRegistrationChangeRecord v2 lists the directory that
stays online. Reporting it again changes nothing.
"""

from __future__ import annotations

from cluster_helpers import Harness, uid

from kraft_testkit.controller import cluster
from kraft_testkit.controller.log_dirs import assign_replicas_to_dirs
from kraft_testkit.controller.result import record
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

D1A, D1B = uid(11), uid(12)


def setup() -> tuple[Harness, dict]:
    h = Harness(17)                       # 3.7-IV2: directories are tracked
    h.start_broker(1, log_dirs=[D1A, D1B])
    h.start_broker(2)
    h.start_broker(3)
    dirs = {b: h.image.cluster.brokers[b].log_dirs[0] for b in (2, 3)}
    topic_id = uid(77)
    h.append([record(M.TopicRecord(name="t", topic_id=topic_id), 0)] + [
        record(M.PartitionRecord(partition_id=p, topic_id=topic_id, replicas=(1, 2, 3),
                                 isr=(1, 2, 3), leader=1, leader_epoch=0, partition_epoch=0,
                                 directories=(d, dirs[2], dirs[3])), 1)
        for p, d in ((0, D1A), (1, D1B))])
    return h, dirs


def beat(h: Harness, offline) -> M.BrokerHeartbeatResponse:
    reg = h.image.cluster.brokers[1]
    return h.run(cluster.process_broker_heartbeat(h.ctx(), M.BrokerHeartbeatRequest(
        broker_id=1, broker_epoch=reg.epoch, current_metadata_offset=h.end_offset,
        want_fence=False, want_shut_down=False, offline_log_dirs=tuple(offline))))


def test_an_offline_directory_moves_its_partitions_off_the_broker():
    h, _ = setup()
    response = beat(h, [D1A])
    assert response.error_code == 0 and not response.is_fenced
    change, reg_change = h.last_records
    assert change.message.partition_id == 0
    assert (change.message.leader, change.message.isr) == (2, (2, 3))
    assert reg_change.version == 2 and reg_change.message.log_dirs == (D1B,)
    t = h.image.topic("t")
    assert (t.partitions[0].leader, t.partitions[0].isr) == (2, (2, 3))
    assert (t.partitions[1].leader, t.partitions[1].isr) == (1, (1, 2, 3))
    assert h.image.cluster.brokers[1].log_dirs == (D1B,)
    beat(h, [D1A])                        # already offline: nothing new
    assert h.last_records == []


def test_unknown_or_no_offline_directories_change_nothing():
    h, _ = setup()
    beat(h, [uid(99)])
    assert h.last_records == []
    beat(h, [])
    assert h.last_records == []


def test_before_3_7_iv2_offline_directories_are_ignored():
    h = Harness(16)
    h.start_broker(1)
    reg = h.image.cluster.brokers[1]
    h.run(cluster.process_broker_heartbeat(h.ctx(), M.BrokerHeartbeatRequest(
        broker_id=1, broker_epoch=reg.epoch, current_metadata_offset=h.end_offset,
        offline_log_dirs=(uid(5),))))
    assert h.last_records == []


# ---------------------------------------------------------------- AssignReplicasToDirs

R = M.AssignReplicasToDirsRequest


def assign(h: Harness, directory, partitions, *, topic_id=None, epoch=None, broker=1):
    topic_id = topic_id or h.image.topic("t").id
    reg = h.image.cluster.brokers[broker]
    request = R(broker_id=broker, broker_epoch=reg.epoch if epoch is None else epoch,
                directories=(R.DirectoryData(id=directory, topics=(R.TopicData(
                    topic_id=topic_id, partitions=tuple(R.PartitionData(
                        partition_index=p) for p in partitions)),)),))
    return h.run(assign_replicas_to_dirs(h.ctx(), request))


def codes(response):
    return [(p.partition_index, p.error_code) for d in response.directories for t in d.topics
            for p in t.partitions]


def test_assigning_a_replica_to_an_online_directory_records_it():
    h, _ = setup()
    response = assign(h, D1B, [0])            # partition 0 was in D1A
    assert response.error_code == 0 and codes(response) == [(0, 0)]
    (rec,) = h.last_records
    assert rec.message.directories[0] == D1B and rec.message.isr is None
    assert h.image.topic("t").partitions[0].directories[0] == D1B
    assign(h, D1B, [0])                       # already there: no record
    assert h.last_records == []


def test_a_replica_assigned_to_an_offline_directory_leaves_isr_and_leadership():
    h, _ = setup()
    gone = uid(13)                            # not among broker 1's online directories
    response = assign(h, gone, [1])
    assert codes(response) == [(1, 0)]
    dirs, leave = h.last_records
    assert dirs.message.directories[0] == gone
    assert (leave.message.leader, leave.message.isr) == (2, (2, 3))
    p1 = h.image.topic("t").partitions[1]
    assert (p1.leader, p1.isr, p1.directories[0]) == (2, (2, 3), gone)


def test_assign_errors_per_partition_and_for_the_request():
    h, _ = setup()
    assert codes(assign(h, D1A, [7])) == [(7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert codes(assign(h, D1A, [0], topic_id=uid(999))) == [(0, ErrorCode.UNKNOWN_TOPIC_ID)]
    h.append([record(M.TopicRecord(name="u", topic_id=uid(78)), 0), record(M.PartitionRecord(
        partition_id=0, topic_id=uid(78), replicas=(2, 3), isr=(2, 3), leader=2, leader_epoch=0,
        partition_epoch=0, directories=(uid(1), uid(1))), 1)])
    assert codes(assign(h, D1A, [0], topic_id=uid(78))) == [(0, ErrorCode.NOT_LEADER_OR_FOLLOWER)]
    assert assign(h, D1A, [0], epoch=12345).error_code == ErrorCode.STALE_BROKER_EPOCH
    old = Harness(16)
    old.start_broker(1)
    old.append([record(M.TopicRecord(name="t", topic_id=uid(77)), 0)])
    assert assign(old, D1A, [0], topic_id=uid(77)).error_code == ErrorCode.UNSUPPORTED_VERSION
