"""Broker leases: expiry fences one broker per check, fresh leases on activation."""

from __future__ import annotations

import random

import pytest
from cluster_helpers import SESSION_MS, Harness, types, uid

from kraft_testkit.config import NodeConfig
from kraft_testkit.controller import cluster
from kraft_testkit.metadata import MetadataImage
from kraft_testkit.protocol import messages as M


def test_no_unfenced_broker_no_expiry():
    h = Harness(18)
    assert cluster.next_lease_expiry_ms(h.ctx()) is None
    h.register(1)                      # fenced: nothing to expire
    assert cluster.next_lease_expiry_ms(h.ctx()) is None
    h.advance(10 * SESSION_MS)
    assert h.fence_stale() is None and h.last_records == []


def test_a_lease_ends_one_session_timeout_after_the_last_contact():
    h = Harness(18, now_ms=1000)
    h.start_broker(1)
    assert cluster.next_lease_expiry_ms(h.ctx()) == 1000 + SESSION_MS + 1
    h.advance(4000)
    h.heartbeat(1)
    expiry = 5000 + SESSION_MS + 1
    assert cluster.next_lease_expiry_ms(h.ctx()) == expiry
    h.now_ms = expiry - 1
    assert h.fence_stale() is None
    h.now_ms = expiry
    assert h.fence_stale() == 1
    assert cluster.next_lease_expiry_ms(h.ctx()) is None


@pytest.mark.parametrize("mv, shape", [(4, "FenceBrokerRecord"), (5, "FenceBrokerRecord"),
                                       (6, "BrokerRegistrationChangeRecord"),
                                       (18, "BrokerRegistrationChangeRecord")])
def test_expiry_fences_with_the_shape_of_the_metadata_version(mv, shape):
    h = Harness(mv)
    epoch = h.start_broker(1)
    h.advance(SESSION_MS + 1)
    assert h.fence_stale() == 1
    assert types(h.last_records) == [shape]
    msg = h.last_records[0].message
    if mv >= 6:
        assert msg == M.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=epoch, fenced=1)
    else:
        assert msg == M.FenceBrokerRecord(id=1, epoch=epoch)
    assert h.image.cluster.broker(1).fenced


def test_one_broker_per_check_oldest_contact_first():
    h = Harness(18)
    for b in (4, 2, 3, 1):
        h.start_broker(b)
    for b in (3, 1, 4, 2):        # contact order 3, 1, 4, 2
        h.advance(10)
        h.heartbeat(b)
    h.advance(SESSION_MS + 100)
    fenced = []
    while True:
        assert cluster.next_lease_expiry_ms(h.ctx()) is None or \
            cluster.next_lease_expiry_ms(h.ctx()) <= h.now_ms
        before = h.image.cluster.fenced_broker_ids()
        got = h.fence_stale()
        if got is None:
            break
        assert len(h.image.cluster.fenced_broker_ids()) == len(before) + 1
        assert types(h.last_records) == ["BrokerRegistrationChangeRecord"]
        fenced.append(got)
    assert fenced == [3, 1, 4, 2]


def test_equal_contact_times_fence_the_lowest_id_first():
    h = Harness(18)
    for b in (7, 5, 6):
        h.start_broker(b)
    h.advance(SESSION_MS + 1)
    assert [h.fence_stale() for _ in range(4)] == [5, 6, 7, None]


def test_expiry_moves_leaders_before_fencing():
    h = Harness(18)
    h.start_broker(1)
    h.start_broker(2)
    h.add_topic("t", [[1, 2], [1, 2]])
    h.advance(SESSION_MS // 2)
    h.heartbeat(2)
    h.advance(SESSION_MS // 2 + 2)
    assert h.fence_stale() == 1
    assert types(h.last_records) == ["PartitionChangeRecord", "PartitionChangeRecord",
                                     "BrokerRegistrationChangeRecord"]
    assert [h.image.partition("t", p).leader for p in (0, 1)] == [2, 2]
    assert h.fence_stale() is None


def test_a_lease_expired_broker_comes_back_with_a_heartbeat():
    h = Harness(18)
    epoch = h.start_broker(1)
    h.advance(SESSION_MS + 1)
    h.fence_stale()
    response = h.heartbeat(1)
    assert response.error_code == 0 and not response.is_fenced
    assert h.image.cluster.broker(1).epoch == epoch


def test_a_broker_in_controlled_shutdown_expires_too_and_may_then_go():
    h = Harness(18)
    h.start_broker(1)
    h.start_broker(2)
    h.add_topic("t", [[1, 2]])
    h.heartbeat(1, want_shut_down=True)
    h.advance(SESSION_MS + 1)
    h.heartbeat(2)
    assert h.fence_stale() == 1
    assert h.leases.peek(1).controlled_shutdown_offset == -1
    response = h.heartbeat(1, want_shut_down=True)
    assert response.should_shut_down and response.is_fenced


# ---------------------------------------------------------------- activation


def test_a_new_active_controller_gives_every_broker_a_fresh_lease():
    # Brokers registered and unfenced long ago under another controller...
    old = Harness(18)
    for b in (1, 2, 3):
        old.start_broker(b)
    committed: MetadataImage = old.image
    # ...a standby that replayed them becomes active much later.
    h = Harness(None, activate=False)
    h.image, h.next_offset, h.now_ms = committed, old.next_offset, 60_000
    cluster.on_become_active(h.ctx())
    assert cluster.next_lease_expiry_ms(h.ctx()) == 60_000 + SESSION_MS + 1
    h.advance(SESSION_MS)
    assert h.fence_stale() is None
    h.heartbeat(2)
    h.advance(1)
    assert [h.fence_stale(), h.fence_stale(), h.fence_stale()] == [1, 3, None]
    # fenced brokers registered before activation hold their id for a session as well
    assert h.register(1, uid(42)).error_code == 0   # expired: free


def test_activation_gives_fenced_brokers_no_lease():
    """A fenced broker registered before the failover may be a dead incarnation: its restarted
    process registers at once (Kafka 3.7: fenced brokers have no session)."""
    old = Harness(18)
    old.register(1)                       # fenced broker registered before the failover
    h = Harness(None, activate=False)
    h.image, h.next_offset, h.now_ms = old.image, old.next_offset, 5_000
    cluster.on_become_active(h.ctx())
    assert h.register(1, uid(42)).error_code == 0


def test_activation_lease_blocks_other_incarnations_of_unfenced_brokers():
    old = Harness(18)
    old.start_broker(1)                   # registered and unfenced before the failover
    h = Harness(None, activate=False)
    h.image, h.next_offset, h.now_ms = old.image, old.next_offset, 5_000
    cluster.on_become_active(h.ctx())
    assert h.register(1, uid(42)).error_code == 101   # DUPLICATE_BROKER_REGISTRATION
    h.advance(SESSION_MS + 1)
    assert h.register(1, uid(42)).error_code == 0


def test_session_timeout_comes_from_the_config():
    config = NodeConfig.from_kafka({}, seed_defaults=True)   # the seeds' 18000 ms
    h = Harness(18, config=config)
    h.start_broker(1)
    h.advance(9001)
    assert h.fence_stale() is None
    h.advance(18000 - 9000)
    assert h.fence_stale() == 1


# ---------------------------------------------------------------- seeded schedules


@pytest.mark.parametrize("seed", range(40))
def test_random_schedules_keep_the_lease_invariants(seed):
    """Random heartbeats, pauses and checks: each check fences at most one broker, the one
    silent longest; after checks run dry no unfenced broker is past its lease, and no broker
    whose lease is valid is ever fenced by a check."""
    rng = random.Random(seed)
    h = Harness(18, seed=seed)
    brokers = list(range(1, rng.randint(2, 6)))
    for b in brokers:
        h.start_broker(b)
    last_contact = {b: h.now_ms for b in brokers}
    for _ in range(200):
        action = rng.random()
        if action < 0.5:
            b = rng.choice(brokers)
            response = h.heartbeat(b)
            assert response.error_code == 0 and not response.is_fenced
            last_contact[b] = h.now_ms
        elif action < 0.8:
            h.advance(rng.randint(1, SESSION_MS // 2))
        else:
            unfenced = h.image.cluster.unfenced_broker_ids()
            got = h.fence_stale()
            if got is None:
                assert all(h.now_ms <= last_contact[b] + SESSION_MS for b in unfenced)
            else:
                assert h.now_ms > last_contact[got] + SESSION_MS
                oldest = min((last_contact[b], b) for b in unfenced)
                assert got == oldest[1]
                assert len(h.image.cluster.unfenced_broker_ids()) == len(unfenced) - 1
        expiry = cluster.next_lease_expiry_ms(h.ctx())
        unfenced = h.image.cluster.unfenced_broker_ids()
        if unfenced:
            assert expiry == min(last_contact[b] for b in unfenced) + SESSION_MS + 1
        else:
            assert expiry is None
