"""A KIP-848 consumer group (``group.protocol=consumer``) across a coordinator failover, with
confluent-kafka (librdkafka, unmodified).

Two consumers split a 4-partition topic with the server-side ``uniform`` assignor (sticky: a
member keeps what it has up to its share); a third joins and takes its share while the others
keep consuming what they keep (incremental: no stop-the-world rebalance); they commit; the script kills the broker that coordinates the group
(the leader of its ``__consumer_offsets`` partition); the new leader replays the group's
records (epochs, target and current assignments) and offsets, the members go on, and a consumer
started afterwards resumes exactly at the committed offsets.

    pip install confluent-kafka
    python examples/consumer_protocol_failover.py [seed]
"""

import sys
import threading
import time

from confluent_kafka import Consumer, Producer

from kraft_testkit import Cluster, serve
from kraft_testkit.gateway.groups.coordinator import OFFSETS_TOPIC, partition_for

TOPIC, GROUP = "invoices", "billing-848"


def produce(bootstrap: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i, v in enumerate(values):
        producer.produce(TOPIC, value=v, partition=i % 4)
    assert producer.flush(60) == 0, "undelivered records"


class Member(threading.Thread):
    """A member polling in its own thread; its assignment is read after each poll (the
    consumer protocol's callbacks name only what was added or taken away)."""

    def __init__(self, bootstrap: str, name: str) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                                  "group.protocol": "consumer", "group.remote.assignor": "uniform",
                                  "client.id": name, "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False})
        self.values: list[str] = []
        self.assignment: set[int] = set()
        self.ever_empty_after_start = False
        self.wants_commit, self.committed, self.stop = (threading.Event() for _ in range(3))
        self.start()

    def run(self) -> None:
        c = self.consumer
        c.subscribe([TOPIC])
        while not self.stop.is_set():
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                self.values.append(m.value().decode())
            now = {tp.partition for tp in c.assignment()}
            if self.assignment and not now:
                self.ever_empty_after_start = True
            self.assignment = now
            if self.wants_commit.is_set():
                self.wants_commit.clear()
                for _ in range(100):  # STALE_MEMBER_EPOCH or a coordinator move: retry
                    try:
                        c.commit(asynchronous=False)
                        break
                    except Exception:  # noqa: BLE001 (KafkaException, retriable here)
                        c.poll(0.1)
                self.committed.set()
        c.close()  # leaves the group (member epoch -1)

    def commit(self) -> None:
        self.committed.clear()
        self.wants_commit.set()
        assert self.committed.wait(90), "commit did not finish"


def wait(what, seconds: float = 120) -> None:
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
        c = Member(boot, "c")
        wait(lambda: c.assignment and len(a.assignment) + len(b.assignment) + len(c.assignment)
             == 4 and len(a.assignment | b.assignment | c.assignment) == 4)
        assert not a.ever_empty_after_start and not b.ever_empty_after_start
        print(f"c joined: a {sorted(a.assignment)}, b {sorted(b.assignment)}, "
              f"c {sorted(c.assignment)} (a and b never stopped)")
        for m in (a, b, c):
            m.commit()

        with srv.hold() as cl:  # kill the group's coordinator
            partitions = len(cl.metadata.topic(OFFSETS_TOPIC).partitions)
            coordinator = cl.metadata.topic(OFFSETS_TOPIC).partitions[
                partition_for(GROUP, partitions)].leader
            cl.faults.kill(coordinator)
        print(f"killed broker {coordinator}, the coordinator of group {GROUP!r}")
        produce(boot, [f"second-{i}" for i in range(8)])
        wait(lambda: {f"second-{i}" for i in range(8)} <= set(a.values + b.values + c.values))
        for m in (a, b, c):
            m.commit()
            m.stop.set()
        for m in (a, b, c):
            m.join(60)

        produce(boot, [f"third-{i}" for i in range(4)])
        late = Member(boot, "late")  # starts at the committed offsets
        wait(lambda: len(late.values) >= 4)
        time.sleep(0.5)  # anything it should not have read would show up now
        late.stop.set()
        late.join(60)
        with srv.hold() as cl:
            now = cl.metadata.topic(OFFSETS_TOPIC).partitions[
                partition_for(GROUP, partitions)].leader
        print(f"broker {now} coordinates the group now; the late member read {late.values}")
        return sorted(late.values)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
