"""Exactly-once consume-transform-produce across a broker kill, with confluent-kafka
(librdkafka, unmodified).

A loader writes 60 records to "in" in one transaction. The application reads them with a
``read_committed`` consumer, writes each upper-cased to "out" with a transactional producer and
commits its consumed offsets in the same transaction (``send_offsets_to_transaction``); every
third transaction it aborts instead and rewinds. Halfway, the script kills the broker that
coordinates the transactions (the leader of the transactional id's ``__transaction_state``
partition, chosen apart from the group's coordinator); the new leader loads the transaction state from its own replica and the
application goes on. A ``read_committed`` reader of "out" then sees every input exactly once
and none of the aborted records, which a ``read_uncommitted`` reader shows are in the log.

    pip install confluent-kafka
    python examples/exactly_once_failover.py [seed]
"""

import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from kraft_testkit import Cluster, serve
from kraft_testkit.gateway.groups.coordinator import partition_for

PARTITIONS, N, GROUP, TXN_TOPIC = 3, 60, "upper", "__transaction_state"


def read(bootstrap: str, level: str, expect: int) -> list[str]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"audit-{level}",
                  "isolation.level": level, "enable.auto.commit": False})
    c.assign([TopicPartition("out", p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    got: list[str] = []
    deadline = time.monotonic() + 60
    while len(got) < expect and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got.append(m.value().decode())
    c.close()
    return got


def pick_transactional_id(cluster: Cluster) -> str:
    """A transactional id whose coordinator is not the group's: librdkafka's
    send_offsets_to_transaction() hangs when the group coordinator's broker is gone from
    Metadata (librdkafka issue #5511), so the script kills the transaction coordinator only."""
    offsets = cluster.metadata.topic("__consumer_offsets")
    group_node = offsets.partitions[partition_for(GROUP, len(offsets.partitions))].leader
    txn = cluster.metadata.topic(TXN_TOPIC)
    return next(t for t in (f"upper-{i}" for i in range(50))
                if txn.partitions[partition_for(t, len(txn.partitions))].leader != group_node)


def main(seed: int = 7) -> tuple[list[str], int]:
    cluster = Cluster(controllers=3, brokers=3, seed=seed)
    with serve(cluster) as srv:
        boot = srv.bootstrap_servers
        srv.call(lambda c: (c.create_topic("in", partitions=PARTITIONS, replication_factor=3),
                            c.create_topic("out", partitions=PARTITIONS, replication_factor=3)))
        loader = Producer({"bootstrap.servers": boot, "transactional.id": "loader"})
        loader.init_transactions(60)
        loader.begin_transaction()
        for i in range(N):
            loader.produce("in", f"r{i:03}", partition=i % PARTITIONS)
        loader.commit_transaction(60)

        consumer = Consumer({"bootstrap.servers": boot, "group.id": GROUP,
                             "isolation.level": "read_committed", "enable.auto.commit": False,
                             "auto.offset.reset": "earliest"})
        consumer.assign([TopicPartition("in", p) for p in range(PARTITIONS)])
        consumer.committed(consumer.assignment(), 60)   # finds the group's coordinator
        tid = srv.call(lambda c: pick_transactional_id(c))
        producer = Producer({"bootstrap.servers": boot, "transactional.id": tid})
        producer.init_transactions(60)
        done, aborted, step, killed = 0, 0, 0, None
        while done < N:
            step += 1
            if killed is None and done >= N // 2:
                with srv.hold() as c:   # kill the transaction coordinator's broker
                    txn = c.metadata.topic(TXN_TOPIC)
                    part = partition_for(tid, len(txn.partitions))
                    killed = txn.partitions[part].leader
                    c.faults.kill(killed)
                    c.run_until(lambda c: c.metadata.topic(TXN_TOPIC).partitions[part].leader
                                not in (-1, killed), timeout_ms=60_000)
                    print(f"killed broker {killed}; transactions now at broker "
                          f"{c.metadata.topic(TXN_TOPIC).partitions[part].leader}")
            records = [m for m in consumer.consume(7, 0.5) if m.error() is None]
            if not records:
                continue
            producer.begin_transaction()
            for m in records:
                producer.produce("out", m.value().upper(), partition=m.partition())
            if step % 3 == 0:            # abort, and read the same records again
                producer.flush(60)
                producer.abort_transaction(60)
                aborted += len(records)
                for tp in consumer.committed(consumer.assignment(), 30):
                    consumer.seek(TopicPartition("in", tp.partition, max(tp.offset, 0)))
                continue
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 60)
            producer.commit_transaction(60)
            done += len(records)
        consumer.close()
        committed = read(boot, "read_committed", N)
        everything = read(boot, "read_uncommitted", N + aborted)
    assert sorted(committed) == sorted(f"R{i:03}" for i in range(N)), "not exactly once"
    print(f"{N} records in, {len(committed)} out read_committed (each once), "
          f"{aborted} aborted in the log ({len(everything)} read_uncommitted)")
    return committed, aborted


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
