"""KIP-858: OfflineLogDirs in a heartbeat, as Kafka's handleDirectoriesOffline answers it.

Broker 1 has two log directories; partition 0 lives in the first, partition 1 in the second.
When a heartbeat reports the first offline, broker 1 leaves partition 0's ISR and leadership
(and only partition 0's), and a BrokerRegistrationChangeRecord v2 lists the directory that
stays online. Reporting it again changes nothing.
"""

from __future__ import annotations

from cluster_helpers import Harness, uid

from kraft_testkit.controller import cluster
from kraft_testkit.controller.result import record
from kraft_testkit.protocol import messages as M

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
