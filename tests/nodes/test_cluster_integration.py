"""Cluster integration: combined mode, metadata views, clean shutdown, rebalance, metrics, retries."""

import pytest

from kraft_testkit.cluster import Cluster


@pytest.mark.parametrize("seed", range(4))
def test_combined_nodes_boot_fail_over_and_fence(seed):
    c = Cluster(3, 4, seed=seed, combined=True)
    assert [h.id for h in c.controllers] == [0, 1, 2]
    assert [h.roles for h in c.nodes] == [("broker", "controller")] * 3 + [("broker",)]
    c.create_topic("t", 4, 3)
    old = c.active_controller
    c.faults.kill(old)
    c.run_until(lambda c: c.active_controller not in (None, old), 10_000)
    # the dead node was a broker too: its lease runs out and it leads nothing
    c.run_until(lambda c: c.broker_state(old).fenced, 20_000)
    assert old.id not in {p.leader for p in c.metadata.topic("t").partitions.values()}
    c.faults.start(old)
    c.run_until(lambda c: not c.broker_state(old).fenced and
                c.broker_state(old).state == "RUNNING", 30_000)


def test_mixed_roles_need_valid_counts():
    from kraft_testkit.errors import ConfigError

    with pytest.raises(ConfigError, match="controllers must be an int >= 1"):
        Cluster(0, 3)
    with pytest.raises(ConfigError, match="storage must be one of memory, tmpdir"):
        Cluster(1, 1, storage="s3")
    with pytest.raises(ConfigError, match="unknown configuration key 'broker.sesion.timeout.ms'"):
        Cluster(1, 1, configs={"broker.sesion.timeout.ms": 1})


def test_admin_request_survives_a_controller_failover_mid_request():
    """The request goes to the active controller, which dies before answering: the admin
    client times out, finds the new active controller and retries (as Kafka's admin does)."""
    c = Cluster(3, 3, seed=11)
    old = c.active_controller
    from kraft_testkit.protocol import messages as M

    c.network.drop(M.CreateTopicsRequest, dst=old.id, count=1)  # lost on the way...
    c.faults.kill(old)                                          # ...and its target dies
    topic = c.create_topic("after-failover", 2, 3)
    assert topic is not None and len(topic.partitions) == 2
    assert c.active_controller != old


def test_not_controller_in_per_topic_errors_is_retried():
    from kraft_testkit.cluster import _not_controller
    from kraft_testkit.protocol import messages as M
    from kraft_testkit.protocol.error_codes import ErrorCode

    R = M.CreateTopicsResponse
    resp = R(topics=[R.CreatableTopicResult(name="t", error_code=ErrorCode.NOT_CONTROLLER)])
    assert _not_controller(resp)
    assert not _not_controller(R(topics=[R.CreatableTopicResult(name="t")]))


def test_broker_keeps_replica_dirs_and_recovery_deletes_strays(tmp_path):
    """Replica dirs (``<topic>-<p>/partition.metadata``) survive a restart; a topic deleted
    while the broker was down is found stray in RECOVERY and its dirs are deleted."""
    c = Cluster(1, 3, seed=4, storage="tmpdir", data_dir=tmp_path)
    c.create_topic("keep", 2, 3)
    c.create_topic("gone", 2, 3)
    c.run_for(500)
    broker_dir = tmp_path / "broker-2"
    assert (broker_dir / "gone-1" / "partition.metadata").read_text().startswith("version: 0")
    c.faults.kill(2)
    c.delete_topic("gone")
    c.faults.start(2)
    c.run_until(lambda c: c.broker_state(2).state == "RUNNING", 30_000)
    c.run_for(100)
    events = [text for _, text in c.broker(2).logic.events]
    assert any("deleted stray replica gone-0 (its topic is gone)" in e for e in events)
    assert not (broker_dir / "gone-0").joinpath("partition.metadata").exists()
    assert (broker_dir / "keep-0" / "partition.metadata").exists()


@pytest.mark.parametrize("seed", range(3))
def test_broker_metadata_view_omits_fenced_brokers_and_controllers(seed):
    c = Cluster(3, 3, seed=seed)
    c.create_topic("t", 2, 3)
    r = c.broker_metadata(0, ["t"])
    assert sorted(b.node_id for b in r.brokers) == [0, 1, 2]   # no controller ids (1000+)
    c.network.isolate(2)
    c.run_until(lambda c: c.broker_state(2).fenced, 20_000)
    c.run_for(500)
    r = c.broker_metadata(0, ["t"])
    assert sorted(b.node_id for b in r.brokers) == [0, 1]
    assert all(2 not in p.isr_nodes and p.leader_id != 2 for p in r.topics[0].partitions)


@pytest.mark.parametrize("seed", range(3))
def test_auto_leader_rebalance_moves_leaders_back_to_preferred_replicas(seed):
    c = Cluster(1, 3, seed=seed, configs={"leader.imbalance.check.interval.seconds": 30})
    c.create_topic("t", 6, 3)
    c.faults.kill(1)
    c.run_until(lambda c: c.broker_state(1).fenced, 20_000)
    c.faults.start(1)
    c.run_until(lambda c: all(set(p.isr) == set(p.replicas)
                              for p in c.metadata.topic("t").partitions.values()), 60_000)
    c.run_for(31_000)  # one check interval later
    parts = c.metadata.topic("t").partitions.values()
    assert all(p.leader == p.replicas[0] for p in parts)


def test_auto_leader_rebalance_can_be_disabled():
    c = Cluster(1, 3, seed=0, configs={"auto.leader.rebalance.enable": "false",
                                       "leader.imbalance.check.interval.seconds": 5})
    c.create_topic("t", 6, 3)
    c.faults.kill(1)
    c.run_until(lambda c: c.broker_state(1).fenced, 20_000)
    c.faults.start(1)
    c.run_for(60_000)
    assert any(p.leader != p.replicas[0] for p in c.metadata.topic("t").partitions.values())


def test_controller_metrics_under_kafka_names():
    c = Cluster(3, 3, seed=3)
    c.create_topic("t", 3, 3)
    c.network.isolate(2)
    c.run_until(lambda c: c.broker_state(2).fenced, 20_000)
    m = c.controller_metrics().to_kafka(c.now_ms)
    assert m["ActiveControllerCount"] == 1
    assert m["FencedBrokerCount"] == 1 and m["ActiveBrokerCount"] == 2
    assert m["MetadataLag"] >= 0 and m["MetadataCommitLatencyMs"] > 0
    assert m["MetadataCommitRatePerSec"] > 0
    assert m["LastCommittedRecordOffset"] <= m["LastAppliedRecordOffset"]
    follower = next(h for h in c.controllers if h != c.active_controller)
    assert c.controller_metrics(follower).to_kafka(c.now_ms)["ActiveControllerCount"] == 0


@pytest.mark.parametrize("seed", range(3))
def test_a_cleanly_stopped_broker_waits_out_its_session_too(seed):
    """KIP-966: a controlled shutdown leaves .kafka_cleanshutdown with the broker epoch; the
    restarted broker sends it as PreviousBrokerEpoch, which marks the old incarnation's
    shutdown clean (for ELR) but lets it in no sooner (Kafka 4.2.1
    ClusterControlManager#registerBroker has no bypass): DUPLICATE_BROKER_REGISTRATION, tried
    again every broker.heartbeat.interval.ms (BrokerLifecycleManager), until the old session
    expired, 9 s after the broker's last heartbeat."""
    import json

    c = Cluster(1, 3, seed=seed)
    old_epoch = c.broker_state(2).epoch
    c.controlled_shutdown(c.brokers[2])
    saved = json.loads(c.sim.process(2).disk.view()[".kafka_cleanshutdown"])
    assert saved == {"version": 0, "brokerEpoch": old_epoch}
    session, interval = c.config.broker_session_timeout_ms, c.config.broker_heartbeat_interval_ms
    c.faults.start(2)
    took = c.run_until(lambda c: c.broker_state(2).state == "RUNNING", 30_000)
    assert session - interval < took <= session + interval + 500
    refused = [t for t, e in c.broker(2).logic.lifecycle._events  # noqa: SLF001
               if "DUPLICATE_BROKER_REGISTRATION" in e]
    assert len(refused) >= session // interval - 1
    assert c.broker_state(2).epoch > old_epoch
    c.run_for(100)
    assert ".kafka_cleanshutdown" not in c.sim.process(2).disk.view()


def test_a_crash_leaves_no_clean_shutdown_file_and_waits_for_the_session():
    c = Cluster(1, 3, seed=1)
    c.faults.kill(2)
    c.faults.start(2)
    assert ".kafka_cleanshutdown" not in c.sim.process(2).disk.view()
    took = c.run_until(lambda c: c.broker_state(2).state == "RUNNING", 60_000)
    assert took > c.config.broker_heartbeat_interval_ms  # refused until the old lease runs out


def test_errors_say_how_to_replay_the_run():
    from kraft_testkit import NoProgress, Quorum

    c = Cluster(1, 1, seed=9, configs={"broker.session.timeout.ms": 12000})
    with pytest.raises(NoProgress) as info:
        c.run_until(lambda c: False, 50)
    assert info.value.replay == ("Cluster(controllers=1, brokers=1, seed=9, "
                                 "configs={'broker.session.timeout.ms': 12000}) and the same steps")
    assert f"replay with {info.value.replay}" in str(info.value)
    q = Quorum(3, seed=4)
    with pytest.raises(NoProgress, match=r"replay with Quorum\(voters=3, observers=0, seed=4\)"):
        q.run_until(lambda q: False, 10)


def test_replica_dirs_follow_the_replicas_after_every_event():
    """``KraftNode._replica_dirs`` skips its work while the broker holds the same replica
    objects: after every event, what it last wrote (``_on_disk``) is what the replicas are,
    through creations, new partitions, a reassignment, a deletion and a restart."""
    c = Cluster(1, 3, seed=2)

    def check() -> None:
        for broker in c.brokers:
            node = c.broker(broker.id)
            if node is None or node.logic is None:
                continue
            now = {f"{r.topic_name}-{r.partition}": r.topic_id
                   for r in node.logic.replicas.replicas.values()}
            assert node._on_disk == now, (c.now_ms, broker.id)

    def run(ms: int) -> None:
        end = c.now_ms + ms
        while c.sim.scheduler.next_at() is not None and c.sim.scheduler.next_at() <= end:
            c.sim.step()
            check()

    c.create_topic("a", 2, 2)
    run(300)
    c.create_partitions("a", 4)
    c.create_topic("b", 1, 1)
    run(300)
    c.reassign("a", 0, [b.id for b in c.brokers][-2:])
    run(3_000)
    c.delete_topic("b")
    run(300)
    c.faults.kill(c.brokers[0].id)
    c.delete_topic("a")
    c.faults.start(c.brokers[0].id)
    run(3_000)
    check()
