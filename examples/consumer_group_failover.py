"""A consumer group across a coordinator failover, with confluent-kafka (librdkafka, unmodified).

Two consumers in group "billing" split a 4-partition topic, read and commit; the script kills
the broker that coordinates the group (the leader of the group's ``__consumer_offsets``
partition) with no time run; the new leader loads the group and its offsets from its own copy
of that partition, the members go on, and a consumer started afterwards resumes exactly at the
committed offsets: it reads only what came after.

    pip install confluent-kafka
    python examples/consumer_group_failover.py [seed]
"""

import sys
import threading
import time

from confluent_kafka import Consumer, Producer

from kraft_testkit import Cluster, serve
from kraft_testkit.gateway.groups.coordinator import OFFSETS_TOPIC, partition_for

TOPIC, GROUP = "invoices", "billing"


def produce(bootstrap: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i, v in enumerate(values):
        producer.produce(TOPIC, value=v, partition=i % 4)
    assert producer.flush(60) == 0, "undelivered records"


class Member(threading.Thread):
    """A group member polling in its own thread; ``commit`` asks it to commit what it read."""

    def __init__(self, bootstrap: str, name: str) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                                  "client.id": name, "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False, "heartbeat.interval.ms": 500,
                                  "topic.metadata.refresh.interval.ms": 1000})
        self.values: list[str] = []
        self.assignment: set[int] = set()
        self.wants_commit, self.committed, self.stop = (threading.Event() for _ in range(3))
        self.start()

    def run(self) -> None:
        c = self.consumer
        c.subscribe([TOPIC], on_assign=lambda _, ps: self.assignment.update(p.partition for p in ps),
                    on_revoke=lambda _, ps: self.assignment.clear())
        while not self.stop.is_set():
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                self.values.append(m.value().decode())
            if self.wants_commit.is_set():
                self.wants_commit.clear()
                for _ in range(50):  # a commit caught in the coordinator's move is retried
                    try:
                        c.commit(asynchronous=False)
                        break
                    except Exception:  # noqa: BLE001 (KafkaException, retriable here)
                        time.sleep(0.2)
                self.committed.set()
        c.close()  # leaves the group

    def commit(self) -> None:
        self.committed.clear()
        self.wants_commit.set()
        assert self.committed.wait(60), "commit did not finish"


def wait(what, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def main(seed: int = 7) -> list[str]:
    cluster = Cluster(controllers=3, brokers=3, seed=seed)
    with serve(cluster) as srv:
        boot = srv.bootstrap_servers
        srv.call(lambda c: c.create_topic(TOPIC, partitions=4, replication_factor=3))
        produce(boot, [f"first-{i}" for i in range(20)])
        a, b = Member(boot, "a"), Member(boot, "b")
        wait(lambda: a.assignment and b.assignment and len(a.assignment | b.assignment) == 4
             and {f"first-{i}" for i in range(20)} <= set(a.values + b.values))
        print(f"a has partitions {sorted(a.assignment)}, b has {sorted(b.assignment)}")
        a.commit(), b.commit()

        with srv.hold() as c:  # kill the group's coordinator
            partitions = len(c.metadata.topic(OFFSETS_TOPIC).partitions)
            coordinator = c.metadata.topic(OFFSETS_TOPIC).partitions[
                partition_for(GROUP, partitions)].leader
            c.faults.kill(coordinator)
        print(f"killed broker {coordinator}, the coordinator of group {GROUP!r}")
        produce(boot, [f"second-{i}" for i in range(8)])
        wait(lambda: {f"second-{i}" for i in range(8)} <= set(a.values + b.values))
        a.commit(), b.commit()
        a.stop.set(), b.stop.set()
        a.join(120), b.join(120)  # bounds for a loaded machine; each ends when it left

        produce(boot, [f"third-{i}" for i in range(4)])
        late = Member(boot, "late")  # starts at the committed offsets
        wait(lambda: len(late.values) >= 4)
        time.sleep(0.5)  # anything it should not have read would show up now
        late.stop.set()
        late.join(120)
        with srv.hold() as c:
            now = c.metadata.topic(OFFSETS_TOPIC).partitions[
                partition_for(GROUP, partitions)].leader
        print(f"broker {now} coordinates the group now; the late member read {late.values}")
        return sorted(late.values)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
