"""Broker re-registration as Kafka 4.x's ClusterControlManager decides it.

* A session is the last contact of (broker id, epoch), fenced or not (4.x's
  BrokerHeartbeatTracker): while it lasts another incarnation gets DUPLICATE_BROKER_REGISTRATION.
* The clean-shutdown proof (PreviousBrokerEpoch == the registered epoch, from
  ``.kafka_cleanshutdown``) lets the next incarnation in at once over a *fenced* registration,
  which is how a controlled shutdown ends; it never displaces a live, unfenced broker.
"""

from __future__ import annotations

import random

import pytest
from cluster_scn_helpers import name, registration

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
def test_after_a_controlled_shutdown_the_proof_lets_the_next_incarnation_in(seed):
    c = Cluster(3, 3, seed=seed)
    c.controlled_shutdown(c.brokers[1])
    old = c.metadata.cluster.broker(1)
    assert old.fenced
    body = registration(c, 1, uuid(seed * 7 + 2), log_dirs=list(old.log_dirs))
    r = c.request(body)                                        # no clean-shutdown proof
    assert name(r.error_code) == "DUPLICATE_BROKER_REGISTRATION"
    r = c.request(body.replace(previous_broker_epoch=old.epoch))
    assert name(r.error_code) == "NONE" and r.broker_epoch > old.epoch


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
