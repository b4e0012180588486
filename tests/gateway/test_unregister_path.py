"""UnregisterBroker is an admin API, as in Kafka (``KafkaApis.handleUnregisterBrokerRequest``):
an admin client sends it to any broker, which forwards it; it never travels on a broker's own
lifecycle channel (heartbeats, registration), so a slow heartbeat connection does not hold it
up, and the broker being removed may be down."""

from __future__ import annotations

import pytest
from gateway_helpers import RawClient

from kraft_testkit.broker.channel import CONTROLLER_CHANNEL, channel_of
from kraft_testkit.protocol import messages as M
from kraft_testkit.raft import rpc


def _is_heartbeat(msg: object) -> bool:
    return isinstance(getattr(msg, "body", None), M.BrokerHeartbeatRequest)


def test_unregister_is_not_lifecycle_traffic():
    assert channel_of(rpc.request(1, M.UnregisterBrokerRequest(broker_id=0))) is None
    assert channel_of(rpc.request(1, M.BrokerHeartbeatRequest(
        broker_id=0, broker_epoch=1, current_metadata_offset=0, want_fence=False,
        want_shut_down=False))) == CONTROLLER_CHANNEL


@pytest.mark.kraft(brokers=3, seed=13)
def test_a_forwarded_unregister_does_not_wait_behind_the_forwarders_heartbeats(
        kraft_bootstrap, kraft_cluster):
    victim, forwarder = kraft_cluster.broker_ids[0], kraft_cluster.broker_ids[1]
    with kraft_bootstrap.hold() as c:
        c.faults.kill(victim)                       # the broker to remove is down
        c.run_until(lambda c: c.broker_state(victim).fenced, 30_000)
        # the forwarder's heartbeat connection turns slow: one heartbeat takes 6 s, and on
        # that FIFO connection whatever follows it waits too
        c.sim.network.delay(6_000, _is_heartbeat, src=forwarder, count=1)
        c.run_for(2_100)                            # the slow heartbeat is on its way
        before = c.now_ms
    client = RawClient(kraft_bootstrap.address(forwarder)[1])
    answer = client.request(M.UnregisterBrokerRequest(broker_id=victim), 0)
    took = kraft_bootstrap.call(lambda c: c.now_ms) - before
    client.close()
    assert answer.error_code == 0
    assert kraft_cluster.metadata.cluster.broker(victim) is None
    assert took < 1_000, f"the forwarded UnregisterBroker took {took} virtual ms"


def test_the_facade_unregisters_a_down_broker_from_the_admin_client(kraft_cluster):
    victim = kraft_cluster.broker_ids[0]
    kraft_cluster.faults.kill(victim)
    kraft_cluster.run_until(lambda c: c.broker_state(victim).fenced, 30_000)
    kraft_cluster.unregister_broker(victim)
    assert kraft_cluster.metadata.cluster.broker(victim) is None
    sends = [(src, dst) for _, kind, src, dst, what in kraft_cluster.trace.events()
             if kind == "send" and "UnregisterBrokerRequest" in what]
    assert sends == [(-1, kraft_cluster.active_controller.id)]  # the admin client, not a broker
