"""Real Kafka clients against the in-process cluster, with faults scripted around them.

confluent-kafka's AdminClient, Producer and Consumer (librdkafka, unmodified) talk to a 3 + 3
cluster on 127.0.0.1 while the script kills the active controller and then a partition leader;
no acknowledged record is lost, and what the clients see is what ``cluster.metadata`` says.

    pip install confluent-kafka
    python examples/admin_client_failover.py [seed]
"""

import sys

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kraft_testkit import Cluster, serve


def produce(bootstrap: str, values: list[str]) -> list[int]:
    offsets: list[int] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": False, "retry.backoff.ms": 50})
    for v in values:
        producer.produce("payments", value=v, partition=0,
                         on_delivery=lambda err, msg: offsets.append(msg.offset()))
    assert producer.flush(60) == 0, "undelivered records"
    return offsets


def consume(bootstrap: str, count: int) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "example",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("payments", 0, 0)])
    values: list[str] = []
    while len(values) < count:
        msg = consumer.poll(5)
        assert msg is not None and msg.error() is None, msg and msg.error()
        values.append(msg.value().decode())
    consumer.close()
    return values


def main(seed: int) -> list[str]:
    cluster = Cluster(controllers=3, brokers=3, seed=seed)
    with serve(cluster) as srv:                     # stepping: time moves when requests need it
        bootstrap = srv.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("payments", 1, 3)])["payments"].result(60)
        print(f"t={cluster.now_ms} ms: created payments at {bootstrap}")
        produce(bootstrap, [f"before-{i}" for i in range(5)])

        with srv.hold() as c:                       # the clients wait while the test acts
            old = c.active_controller
            c.faults.kill(old)
            c.run_until(lambda c: c.active_controller not in (None, old), timeout_ms=10_000)
            print(f"t={c.now_ms} ms: killed controller {old.id}; "
                  f"{c.active_controller.id} is active")
        admin.create_topics([NewTopic("audit", 3, 3)])["audit"].result(60)

        with srv.hold() as c:
            leader = c.metadata.topic("payments").partitions[0].leader
            c.faults.kill(leader)
            c.run_until(lambda c: all(
                (b := c.broker(n)) is None or
                b.image.topic("payments").partitions[0].leader not in (-1, leader)
                for n in c.broker_ids), timeout_ms=30_000)
            new_leader = c.metadata.topic("payments").partitions[0].leader
            print(f"t={c.now_ms} ms: killed broker {leader}; broker {new_leader} leads payments-0")
        offsets = produce(bootstrap, [f"after-{i}" for i in range(5)])
        values = consume(bootstrap, 10)
        seen = admin.list_topics(timeout=60).topics["payments"].partitions[0].leader
        print(f"t={cluster.now_ms} ms: produced at offsets {offsets}; read back {len(values)} "
              f"records; the clients see leader {seen}, the metadata says {new_leader}")
    return values


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
