"""BrokerHeartbeat: unfencing, fencing on request, controlled shutdown, record shapes by MV."""

from __future__ import annotations

import pytest
from cluster_helpers import Harness, heartbeat, types

from kraft_testkit.controller import cluster
from kraft_testkit.controller.heartbeats import BrokerControlState
from kraft_testkit.controller.result import record
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

PRE_3_3_IV2 = [4, 5]          # Fence/UnfenceBrokerRecord
FROM_3_3_IV2 = [6, 7, 13, 18, 19]


def _send(h: Harness, request: M.BrokerHeartbeatRequest) -> M.BrokerHeartbeatResponse:
    return h.run(cluster.process_broker_heartbeat(h.ctx(), request))


# ---------------------------------------------------------------- errors


def test_heartbeat_before_registration_is_stale_broker_epoch():
    h = Harness(18)
    response = _send(h, heartbeat(1, 5, 10))
    assert response.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert (response.is_fenced, response.is_caught_up, response.should_shut_down) == \
        (True, False, False)
    assert h.last_records == []


def test_heartbeat_with_another_epoch_is_stale_broker_epoch():
    h = Harness(18)
    epoch = h.register(1).broker_epoch
    for wrong in (epoch - 1, epoch + 1, -1):
        response = _send(h, heartbeat(1, wrong, h.end_offset))
        assert response.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert h.image.cluster.broker(1).fenced and h.last_records == []


def test_stale_heartbeats_do_not_renew_the_lease():
    h = Harness(18)
    epoch = h.start_broker(1)
    for _ in range(5):
        h.advance(3000)
        _send(h, heartbeat(1, epoch + 100, h.end_offset))
    assert h.fence_stale() == 1


# ---------------------------------------------------------------- unfencing


@pytest.mark.parametrize("mv", PRE_3_3_IV2 + FROM_3_3_IV2)
def test_unfence_waits_for_want_fence_false_and_the_registration_offset(mv):
    h = Harness(mv)
    epoch = h.register(1).broker_epoch
    h.register(2)  # more records after broker 1's registration

    response = h.heartbeat(1, offset=h.end_offset, want_fence=True)   # still recovering
    assert response.error_code == 0
    assert (response.is_fenced, response.is_caught_up) == (True, True)
    assert h.last_records == []

    response = h.heartbeat(1, offset=epoch - 1)                       # not caught up
    assert (response.is_fenced, response.is_caught_up) == (True, False)
    assert h.last_records == []

    response = h.heartbeat(1, offset=epoch)                           # replayed its record
    assert (response.is_fenced, response.is_caught_up, response.should_shut_down) == \
        (False, True, False)
    (rec,) = h.last_records
    if mv >= 6:
        assert rec.message == M.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=epoch,
                                                               fenced=-1)
    else:
        assert rec.message == M.UnfenceBrokerRecord(id=1, epoch=epoch)
    assert rec.version == 0
    assert h.image.cluster.unfenced_broker_ids() == (1,)

    response = h.heartbeat(1)                                         # nothing more to do
    assert not response.is_fenced and h.last_records == []


def test_unfencing_elects_leaders_for_leaderless_partitions():
    h = Harness(18)
    h.start_broker(1)
    h.start_broker(2)
    h.add_topic("t", [[1, 2]])
    h.heartbeat(1, want_fence=True)           # 1 fenced: partition moves to 2
    h.heartbeat(2, want_fence=True)           # 2 fenced: partition is leaderless
    assert h.image.partition("t", 0).leader == -1
    h.heartbeat(2)
    assert types(h.last_records) == ["BrokerRegistrationChangeRecord", "PartitionChangeRecord"]
    assert h.image.partition("t", 0).leader == 2


# ---------------------------------------------------------------- fencing on request


@pytest.mark.parametrize("mv", PRE_3_3_IV2 + FROM_3_3_IV2)
def test_want_fence_on_an_unfenced_broker_fences_it(mv):
    h = Harness(mv)
    epoch = h.start_broker(1)
    response = h.heartbeat(1, want_fence=True)
    assert response.is_fenced and not response.should_shut_down
    (rec,) = h.last_records
    if mv >= 6:
        assert rec.message == M.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=epoch,
                                                               fenced=1)
    else:
        assert rec.message == M.FenceBrokerRecord(id=1, epoch=epoch)
    assert h.image.cluster.broker(1).fenced


def test_fencing_moves_leadership_before_the_fence_record():
    h = Harness(18)
    h.start_broker(1)
    h.start_broker(2)
    h.add_topic("t", [[1, 2], [2, 1]])
    h.heartbeat(1, want_fence=True)
    assert types(h.last_records) == ["PartitionChangeRecord", "PartitionChangeRecord",
                                     "BrokerRegistrationChangeRecord"]
    for p in (0, 1):
        part = h.image.partition("t", p)
        assert part.leader == 2 and part.isr == (2,)


# ---------------------------------------------------------------- controlled shutdown


@pytest.mark.parametrize("mv", [6, 7, 18])
def test_controlled_shutdown_moves_leaders_then_allows_shutdown(mv):
    h = Harness(mv)
    epoch = h.start_broker(1)
    h.start_broker(2)
    h.start_broker(3)
    h.add_topic("t", [[1, 2, 3], [2, 1, 3]])

    response = h.heartbeat(1, want_shut_down=True)
    assert (response.is_fenced, response.should_shut_down) == (False, False)
    marker = M.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=epoch,
                                              in_controlled_shutdown=1)
    if mv >= 7:
        assert h.last_records[0].message == marker and h.last_records[0].version == 1
        assert types(h.last_records)[1:] == ["PartitionChangeRecord"] * 2
        assert h.image.cluster.broker(1).in_controlled_shutdown
    else:  # 3.3-IV2 cannot record it: the shutdown lives in the leases' soft state only
        assert types(h.last_records) == ["PartitionChangeRecord"] * 2
        assert not h.image.cluster.broker(1).in_controlled_shutdown
    shutdown_end = h.end_offset
    assert h.leases.peek(1).controlled_shutdown_offset == shutdown_end
    assert h.image.partition("t", 0).leader == 2
    assert all(1 not in h.image.partition("t", p).isr for p in (0, 1))

    # Other brokers have not replayed the shutdown records yet: not yet.
    response = h.heartbeat(1, want_shut_down=True)
    assert not response.should_shut_down and h.last_records == []
    h.heartbeat(2, offset=shutdown_end)
    response = h.heartbeat(1, want_shut_down=True)
    assert not response.should_shut_down
    h.heartbeat(3, offset=shutdown_end - 1)
    assert not h.heartbeat(1, want_shut_down=True).should_shut_down

    h.heartbeat(3, offset=shutdown_end)
    response = h.heartbeat(1, want_shut_down=True)
    assert (response.is_fenced, response.should_shut_down) == (True, True)
    assert types(h.last_records) == ["BrokerRegistrationChangeRecord"]
    assert h.last_records[0].message.fenced == 1
    assert h.image.cluster.broker(1).fenced
    assert h.leases.peek(1).controlled_shutdown_offset == -1


def test_a_broker_that_leads_nothing_shuts_down_at_once():
    h = Harness(18)
    h.start_broker(1)
    h.start_broker(2)
    h.add_topic("t", [[2, 1]])   # 1 is a follower only
    response = h.heartbeat(1, want_shut_down=True)
    assert (response.is_fenced, response.should_shut_down) == (True, True)
    assert types(h.last_records) == ["PartitionChangeRecord", "BrokerRegistrationChangeRecord"]
    assert h.image.partition("t", 0).isr == (2,)


def test_a_fenced_broker_that_wants_to_shut_down_may_go():
    h = Harness(18)
    h.register(1)
    response = h.heartbeat(1, want_shut_down=True)
    assert (response.is_fenced, response.should_shut_down) == (True, True)
    # Kafka writes the (redundant) fencing of SHUTDOWN_NOW all the same
    assert types(h.last_records) == ["BrokerRegistrationChangeRecord"]


def test_want_fence_and_want_shut_down_on_an_unfenced_broker_shut_down_now():
    h = Harness(18)
    h.start_broker(1)
    h.add_topic("t", [[1]])
    response = h.heartbeat(1, want_fence=True, want_shut_down=True)
    assert (response.is_fenced, response.should_shut_down) == (True, True)


def test_no_shutdown_while_the_broker_still_leads():
    """Leaders that cannot move keep the broker in controlled shutdown (ShouldShutDown stays
    false); its last-replica partition became leaderless, so here it can go."""
    h = Harness(18)
    h.start_broker(1)
    h.start_broker(2)
    h.add_topic("solo", [[1]])
    response = h.heartbeat(1, want_shut_down=True)
    assert not response.should_shut_down
    assert h.image.partition("solo", 0).leader == -1   # nobody else can lead it
    h.heartbeat(2)
    assert h.heartbeat(1, want_shut_down=True).should_shut_down


def test_leaderships_gained_during_shutdown_block_it():
    h = Harness(18)
    h.start_broker(1)
    h.start_broker(2)
    h.add_topic("t", [[1, 2]])
    h.heartbeat(1, want_shut_down=True)
    h.heartbeat(2)
    # Something made broker 1 leader again (say, a reassignment): it may not go yet.
    topic_id = h.image.topic("t").id
    h.append([record(M.PartitionChangeRecord(partition_id=0, topic_id=topic_id,
                                                     leader=1), 0)])
    h.heartbeat(2)
    assert not h.heartbeat(1, want_shut_down=True).should_shut_down
    assert h.leases.current_state(h.image.cluster.broker(1)) is \
        BrokerControlState.CONTROLLED_SHUTDOWN


def test_controlled_shutdown_after_a_failover():
    """The new active controller has no soft state: a marked broker that still leads is put
    through controlled shutdown again (no second marker); one that leads nothing goes at once."""
    h = Harness(18)
    for b in (1, 2, 3):
        h.start_broker(b)
    h.add_topic("t", [[1, 2]])
    h.heartbeat(1, want_shut_down=True)
    assert h.image.cluster.broker(1).in_controlled_shutdown
    h.add_topic("late", [[3, 1]], leaders=[1])   # gained a leadership meanwhile
    cluster.on_become_active(h.ctx())
    response = h.heartbeat(1, want_shut_down=True)
    assert (response.is_fenced, response.should_shut_down) == (False, False)
    assert types(h.last_records) == ["PartitionChangeRecord"]
    assert h.image.partition("late", 0).leader == 3
    h.heartbeat(2)
    h.heartbeat(3)
    response = h.heartbeat(1, want_shut_down=True)
    assert (response.is_fenced, response.should_shut_down) == (True, True)

    h2 = Harness(18)
    h2.start_broker(1)
    h2.start_broker(2)
    h2.add_topic("t", [[1, 2]])
    h2.heartbeat(1, want_shut_down=True)
    cluster.on_become_active(h2.ctx())
    response = h2.heartbeat(1, want_shut_down=True)
    assert (response.is_fenced, response.should_shut_down) == (True, True)
    assert types(h2.last_records) == ["BrokerRegistrationChangeRecord"]


def test_heartbeat_result_is_not_atomic_and_reports_caught_up():
    h = Harness(18)
    epoch = h.register(1).broker_epoch
    result = cluster.process_broker_heartbeat(h.ctx(), heartbeat(1, epoch, epoch))
    assert result.atomic is False
    assert result.response.is_caught_up and not result.response.is_fenced
