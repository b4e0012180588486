"""Broker leases as Kafka 4.2.1 keeps them: contact times per (id, epoch) in
``BrokerHeartbeatTracker``, a check every session/8 from activation
(``QuorumController#maybeFenceStaleBrokerPeriodNs``) that takes out one expired entry
(``ReplicationControlManager#maybeFenceOneStaleBroker``), fresh leases on activation."""

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
    """BrokerHeartbeatTracker#isExpired: expired once now > contact + timeout; the check that
    notices runs every session/8 = 1125 ms from activation (here at 1000 ms), so the lease
    task's next wake-up is the first check at or after contact + timeout + 1."""
    h = Harness(18, now_ms=1000)
    h.start_broker(1)
    assert SESSION_MS == 9000
    assert cluster.next_lease_expiry_ms(h.ctx()) == 1000 + 9 * 1125   # first check >= 10001
    h.advance(4000)
    h.heartbeat(1)
    expiry = 5000 + SESSION_MS + 1
    assert cluster.next_lease_expiry_ms(h.ctx()) == 1000 + 12 * 1125 >= expiry
    h.now_ms = expiry - 1
    assert h.fence_stale() is None and not h.last_expired
    h.now_ms = expiry                       # a run at this instant (maybeFenceOneStaleBroker)
    assert h.fence_stale() == 1
    assert cluster.next_lease_expiry_ms(h.ctx()) is None    # the entry is gone


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


def _kafka_order(keys):
    """The order ConcurrentHashMap iterates (id, epoch) keys that were put in ``keys`` order
    (< 12 of them: no resize): by bin, the record BrokerIdAndEpoch's hash 31 * id + epoch
    (small values: spread changes nothing) mod 16, each bin in insertion order."""
    return sorted(keys, key=lambda k: ((31 * k[0] + k[1]) & 15, keys.index(k)))


def test_one_broker_per_check_in_the_trackers_order():
    """maybeRemoveExpired takes out the *first* expired entry of the tracker's map, not the
    oldest one: with all four expired, they go in the map's order, one per run."""
    h = Harness(18)
    keys = [(b, h.start_broker(b)) for b in (4, 2, 3, 1)]
    for b in (3, 1, 4, 2):        # contact order 3, 1, 4, 2: no effect on the order
        h.advance(10)
        h.heartbeat(b)
    h.advance(SESSION_MS + 100)
    fenced = []
    while True:
        assert cluster.next_lease_expiry_ms(h.ctx()) is None or \
            cluster.next_lease_expiry_ms(h.ctx()) <= h.now_ms + 1125
        before = h.image.cluster.fenced_broker_ids()
        got = h.fence_stale()
        if got is None:
            assert not h.last_expired
            break
        assert len(h.image.cluster.fenced_broker_ids()) == len(before) + 1
        assert types(h.last_records) == ["BrokerRegistrationChangeRecord"]
        fenced.append(got)
    assert fenced == [b for b, _ in _kafka_order(keys)]
    assert fenced != [3, 1, 4, 2]   # the contact order would be another order


def test_an_already_fenced_broker_is_fenced_again_when_its_session_expires():
    """Kafka 4.2.1 maybeFenceOneStaleBroker: a broker fenced by its own heartbeat (WantFence,
    as a controlled shutdown ends) keeps its contact entry; when it expires a second
    BrokerRegistrationChangeRecord(fenced=1) is written for the fenced broker."""
    h = Harness(18)
    epoch = h.start_broker(1)
    h.heartbeat(1, want_fence=True)
    assert h.image.cluster.broker(1).fenced
    assert h.leases.has_valid_session(h.image.cluster.broker(1), h.now_ms)
    h.advance(SESSION_MS)
    assert h.fence_stale() is None and not h.last_expired
    h.advance(1)
    assert h.fence_stale() == 1
    assert [r.message for r in h.last_records] == [
        M.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=epoch, fenced=1)]
    assert h.fence_stale() is None and not h.last_expired     # once: the entry is gone


def test_entries_of_old_epochs_and_unknown_ids_expire_without_records():
    """trackBrokerHeartbeat records contact before the epoch is checked: a heartbeat with a
    stale epoch (or from an id never registered) leaves an entry; maybeFenceOneStaleBroker
    drops it when it expires and writes nothing ("Removing heartbeat tracker entry ...")."""
    h = Harness(18)
    epoch = h.start_broker(1)
    assert h.heartbeat(1, epoch=epoch - 1).error_code == 77          # STALE_BROKER_EPOCH
    assert h.heartbeat(9, epoch=3).error_code == 77                  # never registered
    assert h.leases.contact_ms(1, epoch - 1) == h.leases.contact_ms(9, 3) == h.now_ms
    h.advance(SESSION_MS + 1)
    runs = [(h.fence_stale(), h.last_expired) for _ in range(4)]
    assert sorted(runs, key=str) == sorted([(1, True), (None, True), (None, True),
                                            (None, False)], key=str)


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
    assert h.fence_stale() is None and not h.last_expired


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
    # ClusterControlManager#activate: contact = activation; checks every 1125 ms from there
    assert cluster.next_lease_expiry_ms(h.ctx()) == 60_000 + 9 * 1125   # first >= 69001
    h.advance(SESSION_MS)
    assert h.fence_stale() is None
    h.heartbeat(2)
    h.advance(1)
    keys = [(b, committed.cluster.broker(b).epoch) for b in (1, 2, 3)]  # put in id order
    expected = [b for b, _ in _kafka_order(keys) if b != 2]
    assert [h.fence_stale(), h.fence_stale(), h.fence_stale()] == [*expected, None]
    assert h.register(1, uid(42)).error_code == 0   # expired: free


def test_activation_gives_fenced_brokers_no_lease():
    """A fenced broker registered before the failover may be a dead incarnation: its restarted
    process registers at once (ClusterControlManager#activate tracks only unfenced brokers)."""
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
    """Random heartbeats, pauses and checks: each check fences at most one broker, the first
    expired one in the tracker's order; no broker whose lease is valid is ever fenced, none
    expired survives a check; the next expiry is the first check after the oldest contact."""
    rng = random.Random(seed)
    h = Harness(18, seed=seed)
    brokers = list(range(1, rng.randint(2, 6)))
    epochs = {b: h.start_broker(b) for b in brokers}
    last_contact = {b: h.now_ms for b in brokers}
    order = [(b, epochs[b]) for b in brokers]   # the tracker's keys, in insertion order
    anchor = 1125          # the next check if none finds anything (activation at 0 + period)
    for _ in range(200):
        action = rng.random()
        if action < 0.5:
            b = rng.choice(brokers)
            response = h.heartbeat(b)
            assert response.error_code == 0 and not response.is_fenced
            last_contact[b] = h.now_ms
            if (b, epochs[b]) not in order:
                order.append((b, epochs[b]))
        elif action < 0.8:
            h.advance(rng.randint(1, SESSION_MS // 2))
        else:
            unfenced = h.image.cluster.unfenced_broker_ids()
            got = h.fence_stale()
            expired = [k for k in _kafka_order(order)
                       if h.now_ms > last_contact[k[0]] + SESSION_MS]
            if got is None:
                assert not expired
            else:
                assert h.now_ms > last_contact[got] + SESSION_MS
                assert (got, epochs[got]) == expired[0]
                order.remove(expired[0])
                anchor = h.now_ms + 10   # PeriodicTask's immediate period after a find
                assert len(h.image.cluster.unfenced_broker_ids()) == len(unfenced) - 1
        expiry = cluster.next_lease_expiry_ms(h.ctx())
        if order:
            oldest = min(last_contact[b] for b, _ in order)
            due = oldest + SESSION_MS + 1
            assert expiry == anchor + max(0, -(-(due - anchor) // 1125)) * 1125
        else:
            assert expiry is None
