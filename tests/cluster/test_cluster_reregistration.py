"""Broker re-registration as Kafka 4.x's ClusterControlManager decides it.

* A session is the last contact of (broker id, epoch), fenced or not (4.x's
  BrokerHeartbeatTracker): while it lasts another incarnation gets DUPLICATE_BROKER_REGISTRATION.
* There is no bypass (Kafka 4.2.1 ``ClusterControlManager#registerBroker``): the clean-shutdown
  proof (PreviousBrokerEpoch == the registered epoch, from ``.kafka_cleanshutdown``) only decides
  clean vs unclean shutdown for ELR; after a controlled shutdown the next incarnation waits out
  the old session too (9-10 s after the last heartbeat), and never displaces a live broker.
* When a cleanly stopped (already fenced) broker's session expires, the lease check writes a
  second fence record (``ReplicationControlManager#maybeFenceOneStaleBroker``).
"""

from __future__ import annotations

import random

import pytest
from cluster_scn_helpers import (FENCE_CHECK_MS, SESSION_MS, controller_contact_ms,
                                 fence_records, log_records, name, registration)

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol.uuid import Uuid


def uuid(seed: int) -> Uuid:
    return Uuid.random(random.Random(seed))


@pytest.mark.parametrize("seed", range(3))
def test_previous_broker_epoch_never_displaces_a_live_unfenced_broker(seed):
    c = Cluster(3, 3, seed=seed)
    live = c.metadata.cluster.broker(0)
    assert not live.fenced
    body = registration(c, 0, uuid(seed * 7 + 1), log_dirs=list(live.log_dirs))
    body = body.replace(previous_broker_epoch=live.epoch)     # claims a clean shutdown
    r = c.request(body)
    assert name(r.error_code) == "DUPLICATE_BROKER_REGISTRATION"
    assert c.metadata.cluster.broker(0) == live
    c.run_for(5_000)
    assert c.broker_state(0).state == "RUNNING" and not c.broker_state(0).fenced


@pytest.mark.parametrize("seed", range(3))
def test_after_a_controlled_shutdown_the_next_incarnation_waits_out_the_session(seed):
    """The broker's last heartbeat (the one answered ShouldShutDown) starts its session's last
    stretch: with or without the proof the next incarnation gets DUPLICATE_BROKER_REGISTRATION
    until contact + 9000 ms has passed (isExpired), then registers."""
    c = Cluster(3, 3, seed=seed)
    c.controlled_shutdown(c.brokers[1])
    old = c.metadata.cluster.broker(1)
    assert old.fenced
    contact = controller_contact_ms(c, 1)
    assert contact is not None and contact <= c.now_ms   # the fenced broker keeps its entry
    body = registration(c, 1, uuid(seed * 7 + 2), log_dirs=list(old.log_dirs))
    proof = body.replace(previous_broker_epoch=old.epoch)
    for attempt in (body, proof):
        assert name(c.request(attempt).error_code) == "DUPLICATE_BROKER_REGISTRATION"
    c.run_for(contact + SESSION_MS - 100 - c.now_ms)
    assert name(c.request(proof).error_code) == "DUPLICATE_BROKER_REGISTRATION"
    c.run_for(contact + SESSION_MS + 1 - c.now_ms)
    r = c.request(proof)
    assert name(r.error_code) == "NONE" and r.broker_epoch > old.epoch


@pytest.mark.parametrize("seed", range(3))
def test_a_cleanly_stopped_brokers_session_expiry_fences_it_again(seed, tmp_path):
    """maybeFenceOneStaleBroker fences whatever registered incarnation's session expired, even
    one already fenced: after a controlled shutdown the log holds a second
    BrokerRegistrationChangeRecord(fenced=1) of the same epoch, written by the first check
    after the session ran out (9-10.125 s after the last heartbeat)."""
    c = Cluster(3, 3, seed=seed)
    c.controlled_shutdown(c.brokers[1])
    epoch = c.metadata.cluster.broker(1).epoch
    contact = controller_contact_ms(c, 1)
    c.run_until(lambda c: controller_contact_ms(c, 1) is None, 2 * SESSION_MS)
    checked = c.now_ms
    assert contact + SESSION_MS < checked <= contact + SESSION_MS + FENCE_CHECK_MS
    c.run_for(1_000)
    fences = [f for f in fence_records(log_records(c, tmp_path / "log"), 1)
              if f.msg.broker_epoch == epoch]
    assert len(fences) == 2
    assert c.broker_state(1).fenced


@pytest.mark.parametrize("seed", range(2))
def test_a_crashed_broker_waits_for_its_session_to_run_out(seed):
    c = Cluster(3, 3, seed=seed)
    killed_at = c.now_ms
    c.faults.kill(c.brokers[2])
    c.faults.start(c.brokers[2])
    c.run_until(lambda c: c.broker_state(2).registered and c.metadata.cluster.broker(2).epoch
                > 0 and c.broker_state(2).state == "RUNNING", 30_000)
    # the old session (9 s from its last heartbeat, at most 2 s before the kill) ran out first
    assert c.now_ms - killed_at >= 9_000 - 2_000
