"""Transactions through each client library no one here wrote: a transactional producer
commits and aborts, a ``read_committed`` consumer sees the committed records only (a
``read_uncommitted`` one sees the aborted ones too: they are in the log, skipped by the aborted
transaction lists Fetch carries), a second producer with the same transactional id fences the
first, and an open transaction holds back the last stable offset. State lives in
``__transaction_state`` (Kafka's TransactionLogValue records), markers are control batches in
the partitions' logs."""

from __future__ import annotations

import contextlib

import pytest
from gateway_helpers import RawClient, port_of
from txn_clients import PRODUCERS, Transform, read_all

from kraft_testkit import Cluster, serve
from kraft_testkit.protocol import messages as M
from kraft_testkit.gateway.groups.coordinator import partition_for
from kraft_testkit.gateway.txn import log_state, records
from kraft_testkit.gateway.txn.coordinator import COMPLETE_ABORT, COMPLETE_COMMIT, TXN_TOPIC

TOPIC, PARTITIONS = "out", 3
CLIENTS = ["confluent", "kafka-python", "aiokafka"]
MODULES = {"confluent": "confluent_kafka", "kafka-python": "kafka", "aiokafka": "aiokafka"}



def _txn_values(srv, tid: str) -> list:
    """The TransactionLogValues of ``tid`` in its __transaction_state partition, in order."""
    def read(c):
        t = c.metadata.topic(TXN_TOPIC)
        p = partition_for(tid, len(t.partitions))
        log = srv.data_plane.log(t.partitions[p].leader, t.id, p)
        out = []
        for b in log.batches:
            out.append(records.replay([b.data]).get(tid))
        return [v for v in out if v is not None], len(t.partitions)
    return srv.call(read)


def _markers(srv, topic: str) -> list[tuple[int, int]]:
    """(partition, marker type) of every control batch in ``topic``'s leader logs."""
    def read(c):
        t = c.metadata.topic(topic)
        out = []
        for p, reg in sorted(t.partitions.items()):
            for b in srv.data_plane.log(reg.leader, t.id, p).batches:
                if b.is_control:
                    out.append((p, log_state.marker_type(b.data)))
        return out
    return srv.call(read)


@pytest.mark.parametrize("client", CLIENTS)
def test_commit_abort_and_read_committed(client):
    pytest.importorskip(MODULES[client])
    cluster = Cluster(3, 3, seed=5)
    with serve(cluster) as srv:
        boot = srv.bootstrap_servers
        srv.call(lambda c: c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3))
        p = PRODUCERS[client](boot, "tx-1")
        p.init()
        p.begin()
        for i in range(10):
            p.send(TOPIC, f"c{i}", i % PARTITIONS)
        p.commit()
        p.begin()
        for i in range(5):
            p.send(TOPIC, f"a{i}", i % PARTITIONS)
        p.flush()                      # the aborted records reach the log
        p.abort()
        p.begin()
        for i in range(4):
            p.send(TOPIC, f"d{i}", i % PARTITIONS)
        p.commit()
        p.close()
        committed = sorted([f"c{i}" for i in range(10)] + [f"d{i}" for i in range(4)])
        assert sorted(read_all(client, boot, TOPIC, PARTITIONS, 14)) == committed
        everything = read_all(client, boot, TOPIC, PARTITIONS, 19, committed=False)
        assert sorted(everything) == sorted(committed + [f"a{i}" for i in range(5)])

        values, partitions = _txn_values(srv, "tx-1")
        assert partitions == 50                # transaction.state.log.num.partitions
        states = [v.transaction_status for v in values]
        assert states[-1] == COMPLETE_COMMIT and COMPLETE_ABORT in states
        assert {v.producer_id for v in values} == {values[0].producer_id}
        marks = _markers(srv, TOPIC)
        # one marker per partition per transaction: commit, abort, commit
        assert sorted(marks) == sorted((p, t) for t in (1, 0, 1) for p in range(PARTITIONS))


@pytest.mark.parametrize("client", CLIENTS)
def test_a_second_producer_fences_the_first(client):
    pytest.importorskip(MODULES[client])
    cluster = Cluster(3, 3, seed=6)
    with serve(cluster) as srv:
        boot = srv.bootstrap_servers
        srv.call(lambda c: c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3))
        zombie = PRODUCERS[client](boot, "tx-f")
        zombie.init()
        zombie.begin()
        for i in range(6):
            zombie.send(TOPIC, f"z{i}", i % PARTITIONS)
        zombie.flush()
        fresh = PRODUCERS[client](boot, "tx-f")
        fresh.init()                   # aborts the zombie's open transaction, bumps the epoch
        fresh.begin()
        for i in range(3):
            fresh.send(TOPIC, f"f{i}", i % PARTITIONS)
        fresh.commit()
        with pytest.raises(Exception) as failure:
            zombie.commit()
        assert "fenc" in str(failure.value).lower() or "epoch" in str(failure.value).lower()
        with contextlib.suppress(Exception):  # librdkafka's flush reports the fencing again
            zombie.close()             # its client threads must not outlive the test
        fresh.close()
        assert sorted(read_all(client, boot, TOPIC, PARTITIONS, 3)) == ["f0", "f1", "f2"]
        values, _ = _txn_values(srv, "tx-f")
        epochs = [v.producer_epoch for v in values]
        assert epochs == sorted(epochs) and epochs[-1] >= 2   # fenced once, bumped again
        assert COMPLETE_ABORT in [v.transaction_status for v in values]


def test_an_open_transaction_holds_the_last_stable_offset():
    pytest.importorskip("confluent_kafka")
    import confluent_kafka as ck
    cluster = Cluster(3, 3, seed=7)
    with serve(cluster) as srv:
        boot = srv.bootstrap_servers
        srv.call(lambda c: c.create_topic(TOPIC, partitions=1, replication_factor=3))
        plain = ck.Producer({"bootstrap.servers": boot, "acks": "all"})
        for i in range(3):
            plain.produce(TOPIC, f"p{i}".encode(), partition=0)
        plain.flush(60)
        p = PRODUCERS["confluent"](boot, "tx-lso")
        p.init()
        p.begin()
        for i in range(4):
            p.send(TOPIC, f"o{i}", 0)
        p.flush()

        def offsets(level: str) -> tuple[int, int]:
            c = ck.Consumer({"bootstrap.servers": boot, "group.id": "x", "isolation.level": level})
            low, high = c.get_watermark_offsets(ck.TopicPartition(TOPIC, 0), timeout=60)
            c.close()
            return low, high
        assert offsets("read_uncommitted") == (0, 7)
        assert offsets("read_committed") == (0, 3)   # the open transaction starts at 3
        assert sorted(read_all("confluent", boot, TOPIC, 1, 3)) == ["p0", "p1", "p2"]
        p.commit()
        assert offsets("read_committed") == (0, 8)   # past the commit marker
        assert len(read_all("confluent", boot, TOPIC, 1, 7)) == 7
        p.close()


def _coordinator(boot: str, key: str, key_type: int) -> int:
    """The node FindCoordinator names for ``key`` (creating the internal topic on first use)."""
    client = RawClient(port_of(boot), timeout=60)
    answer = client.request(M.FindCoordinatorRequest(key=key, key_type=key_type), 3)
    client.close()
    assert answer.error_code == 0, answer
    return answer.node_id


@pytest.mark.parametrize("client", CLIENTS)
def test_exactly_once_across_a_broker_kill(client):
    """Consume-transform-produce with every third transaction aborted; halfway the broker of
    the transaction coordinator dies (kafka-python: the third broker, see docs/clients.md's
    client notes); a read_committed reader of the output sees every input exactly once."""
    pytest.importorskip(MODULES[client])
    cluster = Cluster(3, 3, seed=9)
    n, group = 60, "eos"
    with serve(cluster) as srv:
        boot = srv.bootstrap_servers
        srv.call(lambda c: (c.create_topic("in", partitions=PARTITIONS, replication_factor=3),
                            c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)))
        producer = PRODUCERS["confluent" if client == "confluent" else "kafka-python"]
        plain = producer(boot, "loader")   # the input, in one committed transaction
        plain.init()
        plain.begin()
        inputs = [f"v{i:03}" for i in range(n)]
        for i, v in enumerate(inputs):
            plain.send("in", v, i % PARTITIONS)
        plain.commit()
        plain.close()
        # a transactional id coordinated elsewhere than the group (librdkafka #5511)
        group_node = _coordinator(boot, group, 0)
        tid = next(t for t in (f"eos-{i}" for i in range(20))
                   if _coordinator(boot, t, 1) != group_node)
        txn_node = _coordinator(boot, tid, 1)
        victim = txn_node if client != "kafka-python" else \
            next(b for b in cluster.broker_ids if b not in (txn_node, group_node))
        app = Transform(client, boot, tid, group, "in", TOPIC, PARTITIONS)
        done, step, aborted = 0, 0, 0
        killed = False
        while done < n:
            step += 1
            assert step < 200, f"{done} of {n} after {step} steps"
            if not killed and done >= n // 2:
                with srv.hold() as c:
                    c.faults.kill(victim)
                    c.run_until(lambda c: not any(
                        reg.leader in (-1, victim) for name in ("in", TOPIC, TXN_TOPIC)
                        for reg in c.metadata.topic(name).partitions.values()),
                        timeout_ms=60_000)
                killed = True
            if step % 3 == 0:
                aborted += app.step(7, abort=True, suffix="!aborted")
            else:
                done += app.step(7)
        app.close()
        got = read_all(client, boot, TOPIC, PARTITIONS, n)
        assert sorted(got) == inputs                  # every committed record once, no aborted
        everything = read_all(client, boot, TOPIC, PARTITIONS, n + aborted, committed=False)
        assert sum(v.endswith("!aborted") for v in everything) == aborted > 0
        values, _ = _txn_values(srv, tid)
        assert values[-1].transaction_status == COMPLETE_COMMIT
        moved = srv.call(lambda c: c.metadata.topic(TXN_TOPIC).partitions[
            partition_for(tid, 50)].leader)
        assert moved != victim or client == "kafka-python"


def test_the_coordinator_aborts_a_transaction_past_its_timeout():
    pytest.importorskip("confluent_kafka")
    cluster = Cluster(3, 3, seed=12)
    with serve(cluster) as srv:
        boot = srv.bootstrap_servers
        srv.call(lambda c: c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3))
        p = PRODUCERS["confluent"](boot, "tx-slow", **{"transaction.timeout.ms": 10_000})
        p.init()
        p.begin()
        for i in range(6):
            p.send(TOPIC, f"s{i}", i % PARTITIONS)
        p.flush()
        srv.run_for(25_000)              # past the timeout and the coordinator's next check
        assert read_all("confluent", boot, TOPIC, PARTITIONS, 0, timeout_s=5) == []
        assert len(read_all("confluent", boot, TOPIC, PARTITIONS, 6, committed=False)) == 6
        with pytest.raises(Exception):
            p.commit()                   # fenced: the coordinator bumped the epoch
        with contextlib.suppress(Exception):  # librdkafka's flush reports the fencing again
            p.close()
        values, _ = _txn_values(srv, "tx-slow")
        assert values[-1].transaction_status == COMPLETE_ABORT
        assert values[-1].producer_epoch == values[0].producer_epoch + 1
