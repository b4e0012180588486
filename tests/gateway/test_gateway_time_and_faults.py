"""Time and faults at the front door: stepping is deterministic, pacing follows the wall
clock, a killed node closes its sockets, an isolated or cut-off node goes silent."""

from __future__ import annotations

import time

import pytest
from gateway_helpers import RawClient, metadata, one_record_batch, port_of

from kraft_testkit import Cluster, serve
from kraft_testkit.gateway import GatewayError
from kraft_testkit.protocol import messages as M


def _create(client: RawClient, name: str) -> None:
    R = M.CreateTopicsRequest
    answer = client.request(R(topics=(R.CreatableTopic(
        name=name, num_partitions=2, replication_factor=3),), timeout_ms=10_000), 7)
    assert answer.topics[0].error_code == 0


def _produce(client: RawClient, topic: str, partition: int, value: bytes):
    P = M.ProduceRequest
    batch = one_record_batch(value)
    return client.request(P(acks=-1, timeout_ms=10_000, topic_data=(P.TopicProduceData(
        name=topic, partition_data=(P.PartitionProduceData(index=partition, records=batch),)),)),
        9)


def _scenario(seed: int) -> tuple[str, list]:
    cluster = Cluster(3, 3, seed=seed)
    answers = []
    with serve(cluster) as srv:
        c = RawClient(port_of(srv.bootstrap_servers))
        _create(c, "steps")
        for i in range(3):
            leader = srv.call(lambda c: c.metadata.topic("steps").partitions[i % 2].leader)
            to_leader = RawClient(srv.address(leader)[1])
            r = _produce(to_leader, "steps", i % 2, f"v{i}".encode()).responses[0]
            answers.append((r.partition_responses[0].error_code,
                            r.partition_responses[0].base_offset))
            to_leader.close()
        c.close()
    return cluster.trace.digest(), answers


def test_stepping_is_deterministic_for_the_same_requests():
    first, second = _scenario(11), _scenario(11)
    assert first == second
    assert first[1] == [(0, 0), (0, 0), (0, 1)]


def test_paced_time_follows_the_wall_clock(kraft_cluster):
    with serve(kraft_cluster, speed=20.0) as srv:
        wall = time.monotonic()
        start = srv.call(lambda c: c.now_ms)
        # virtual time moves with nobody asking (2 s of it is 0.1 s of wall time at 20x): wait
        # on that, bounded generously for a loaded machine, rather than sleeping a guess
        srv.wait_until(lambda c: c.now_ms - start >= 2_000, timeout_s=120)
        moved = srv.call(lambda c: c.now_ms) - start
        wall = time.monotonic() - wall
    # never ahead of the wall clock times the speed (behind it only while the loop waits for a
    # core, as on a loaded machine)
    assert 2_000 <= moved <= wall * 20_000


def test_paced_time_lets_a_lease_expire_while_clients_wait(kraft_cluster):
    with serve(kraft_cluster, speed=20.0) as srv:
        victim = kraft_cluster.brokers[2]
        srv.call(lambda c: c.faults.kill(victim))
        # the controller fences it, then broker 0 (which the client asks) replays that
        srv.wait_until(lambda c: c.broker(0).image.cluster.broker(victim.id).fenced,
                       timeout_s=120)  # 0.5 s idle; a bound for a loaded machine
        client = RawClient(port_of(srv.bootstrap_servers))
        assert victim.id not in [b.node_id for b in metadata(client).brokers]
        client.close()


def test_a_killed_node_closes_its_sockets_until_restarted(kraft_bootstrap, kraft_cluster):
    victim = kraft_cluster.brokers[1]
    port = kraft_bootstrap.address(victim)[1]
    client = RawClient(port, timeout=60)  # the gateway's loop closes it at its next turn
    assert metadata(client).brokers
    kraft_bootstrap.call(lambda c: c.faults.kill(victim))
    assert client.closed_by_peer()
    client.close()
    again = RawClient(port, timeout=60)
    assert again.closed_by_peer()  # new connections too
    again.close()
    kraft_bootstrap.call(lambda c: c.faults.start(victim))
    kraft_bootstrap.run_until(lambda c: c.broker_state(victim).state == "RUNNING", 30_000)
    back = RawClient(port, timeout=60)
    assert metadata(back).brokers
    back.close()


@pytest.mark.parametrize("how", ["isolate", "cut_clients", "pause"])
def test_an_unreachable_node_is_silent_until_healed(how, kraft_bootstrap, kraft_cluster):
    victim = kraft_cluster.brokers[0]
    client = RawClient(kraft_bootstrap.address(victim)[1], timeout=0.3)
    if how == "isolate":
        cut = kraft_bootstrap.call(lambda c: c.network.isolate(victim))
        heal = lambda: kraft_bootstrap.call(lambda c: c.network.heal(cut))
    elif how == "cut_clients":
        cut = kraft_bootstrap.cut_clients(victim)
        heal = lambda: kraft_bootstrap.heal_clients(cut)
    else:
        kraft_bootstrap.call(lambda c: c.faults.pause(victim))
        heal = lambda: kraft_bootstrap.call(lambda c: c.faults.resume(victim))
    with pytest.raises(TimeoutError):
        metadata(client)
    heal()
    client.sock.settimeout(60)
    answer = client.read_response(3, 12)  # the held request is answered once healed
    client.close()
    assert answer.cluster_id == kraft_cluster.cluster_id


def test_bad_speed_is_a_typed_error(kraft_cluster):
    with pytest.raises(GatewayError, match="speed"):
        serve(kraft_cluster, speed=0)


def test_controller_listeners_answer_as_kafka_controllers(kraft_bootstrap, kraft_cluster):
    """bootstrap.controllers clients: DescribeCluster lists controllers; a non-active controller
    answers NOT_CONTROLLER; the active one commits."""
    from kraft_testkit.protocol.error_codes import ErrorCode

    active = kraft_cluster.active_controller
    other = next(c for c in kraft_cluster.controllers if c != active)
    to_other = RawClient(kraft_bootstrap.address(other)[1])
    d = to_other.request(M.DescribeClusterRequest(endpoint_type=2), 1)
    assert d.error_code == 0 and d.controller_id == active.id
    assert sorted(b.broker_id for b in d.brokers) == kraft_cluster.controller_ids
    assert to_other.request(M.DescribeClusterRequest(endpoint_type=1), 1).error_code == \
        ErrorCode.MISMATCHED_ENDPOINT_TYPE
    R = M.CreateTopicsRequest
    body = R(topics=(R.CreatableTopic(name="direct", num_partitions=1, replication_factor=3),),
             timeout_ms=10_000)
    assert to_other.request(body, 7).topics[0].error_code == ErrorCode.NOT_CONTROLLER
    to_active = RawClient(kraft_bootstrap.address(active)[1])
    assert to_active.request(body, 7).topics[0].error_code == 0
    to_other.close(), to_active.close()
    assert kraft_cluster.metadata.topic("direct") is not None
