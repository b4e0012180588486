"""A transactional producer and a consume-transform-produce application per client library,
driven by the transaction tests with plain method calls (aiokafka's coroutines run on a loop of
their own)."""

from __future__ import annotations

import asyncio
import time
from typing import Any


class Txn:
    """A transactional producer: ``init()``, ``begin()``, ``send(topic, value, partition)``,
    ``flush()``, ``commit()``, ``abort()``, ``close()``."""

    def __init__(self, bootstrap: str, transactional_id: str) -> None:
        self.bootstrap, self.tid = bootstrap, transactional_id


class ConfluentTxn(Txn):
    def __init__(self, bootstrap: str, transactional_id: str, **conf: Any) -> None:
        super().__init__(bootstrap, transactional_id)
        import confluent_kafka as ck
        self.p = ck.Producer({"bootstrap.servers": bootstrap, 
                              "transactional.id": transactional_id, **conf})

    def init(self) -> None:
        self.p.init_transactions(60)

    def begin(self) -> None:
        self.p.begin_transaction()

    def send(self, topic: str, value: str, partition: int) -> None:
        self.p.produce(topic, value.encode(), partition=partition)

    def flush(self) -> None:
        assert self.p.flush(60) == 0

    def commit(self) -> None:
        self.p.commit_transaction(60)

    def abort(self) -> None:
        self.p.abort_transaction(60)

    def close(self) -> None:
        self.p.flush(60)


class KafkaPythonTxn(Txn):
    def __init__(self, bootstrap: str, transactional_id: str, **conf: Any) -> None:
        super().__init__(bootstrap, transactional_id)
        import kafka
        self.p = kafka.KafkaProducer(bootstrap_servers=bootstrap,
                                     transactional_id=transactional_id, **conf)

    def init(self) -> None:
        self.p.init_transactions()

    def begin(self) -> None:
        self.p.begin_transaction()

    def send(self, topic: str, value: str, partition: int) -> None:
        self.p.send(topic, value.encode(), partition=partition)

    def flush(self) -> None:
        self.p.flush(60)

    def commit(self) -> None:
        self.p.commit_transaction()

    def abort(self) -> None:
        self.p.abort_transaction()

    def close(self) -> None:
        self.p.close(10)


class AiokafkaTxn(Txn):
    def __init__(self, bootstrap: str, transactional_id: str, **conf: Any) -> None:
        super().__init__(bootstrap, transactional_id)
        import aiokafka
        self.loop = asyncio.new_event_loop()

        async def make() -> Any:   # aiokafka wants its loop running when it is made
            return aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap,
                                             transactional_id=transactional_id,
                                             enable_idempotence=True, **conf)
        self.p = self.run(make())
        self.futures: list[Any] = []

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def init(self) -> None:
        self.run(self.p.start())

    def begin(self) -> None:
        self.run(self.p.begin_transaction())

    def send(self, topic: str, value: str, partition: int) -> None:
        self.futures.append(self.run(self.p.send(topic, value.encode(), partition=partition)))

    def flush(self) -> None:
        for f in self.futures:
            self.run(f)
        self.futures.clear()

    def commit(self) -> None:
        self.flush()
        self.run(self.p.commit_transaction())

    def abort(self) -> None:
        self.run(self.p.abort_transaction())
        self.futures.clear()

    def close(self) -> None:
        self.run(self.p.stop())
        self.loop.close()


PRODUCERS = {"confluent": ConfluentTxn, "kafka-python": KafkaPythonTxn,
             "aiokafka": AiokafkaTxn}


def read_all(client: str, bootstrap: str, topic: str, partitions: int, expect: int,
             committed: bool = True, timeout_s: float = 60) -> list[str]:
    """Every record of ``topic`` a ``read_committed`` (or ``read_uncommitted``) consumer of
    ``client`` gets from the start, once it has ``expect`` of them (or the time is up; a
    little longer, so a record too many would show)."""
    level = "read_committed" if committed else "read_uncommitted"
    got: list[str] = []
    deadline = time.monotonic() + timeout_s
    settle: list[float] = []

    def done() -> bool:
        now = time.monotonic()
        if len(got) >= expect and not settle:
            settle.append(now + 1.0)
        return now > deadline or (bool(settle) and now > settle[0])
    if client == "confluent":
        import confluent_kafka as ck
        c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{level}",
                         "isolation.level": level, "enable.auto.commit": False})
        c.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(partitions)])
        while not done():
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m.value().decode())
        c.close()
    elif client == "kafka-python":
        import kafka
        c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=level,
                                auto_offset_reset="earliest", enable_auto_commit=False)
        c.assign([kafka.TopicPartition(topic, p) for p in range(partitions)])
        c.seek_to_beginning()
        while not done():
            for records in c.poll(timeout_ms=200).values():
                got += [r.value.decode() for r in records]
        c.close()
    else:
        import aiokafka

        async def main() -> None:
            c = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=level,
                                          auto_offset_reset="earliest",
                                          enable_auto_commit=False)
            await c.start()
            c.assign([aiokafka.TopicPartition(topic, p) for p in range(partitions)])
            await c.seek_to_beginning()
            while not done():
                for records in (await c.getmany(timeout_ms=200)).values():
                    got.extend(r.value.decode() for r in records)
            await c.stop()
        asyncio.run(main())
    return got


class Transform:
    """A consume-transform-produce application: a ``read_committed`` consumer of ``source``
    (partitions assigned, positions from the group's committed offsets) and a transactional
    producer to ``sink``. ``step(n, abort)`` reads up to ``n`` records, writes each as
    ``value + suffix`` to the same partition of ``sink`` and commits the consumed offsets in
    the same transaction; with ``abort`` it aborts instead and rewinds to the committed
    offsets (as an application does after an abortable error). Returns how many it read."""

    def __init__(self, client: str, bootstrap: str, tid: str, group: str, source: str,
                 sink: str, partitions: int) -> None:
        self.client, self.group, self.source, self.sink = client, group, source, sink
        self.partitions = partitions
        self.txn = PRODUCERS[client](bootstrap, tid)
        self.txn.init()
        if client == "confluent":
            import confluent_kafka as ck
            self.ck = ck
            self.c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                  "isolation.level": "read_committed",
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
            self.c.assign([ck.TopicPartition(source, p) for p in range(partitions)])
        elif client == "kafka-python":
            import kafka
            self.kafka = kafka
            self.c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                         isolation_level="read_committed",
                                         enable_auto_commit=False,
                                         auto_offset_reset="earliest")
            self.c.assign([kafka.TopicPartition(source, p) for p in range(partitions)])
        else:
            import aiokafka
            self.aiokafka = aiokafka

            async def make() -> Any:
                c = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                              isolation_level="read_committed",
                                              enable_auto_commit=False,
                                              auto_offset_reset="earliest")
                await c.start()
                c.assign([aiokafka.TopicPartition(source, p) for p in range(partitions)])
                return c
            self.c = self.txn.run(make())

    def _read(self, n: int) -> list[tuple[int, str]]:
        if self.client == "confluent":
            msgs = self.c.consume(n, 0.5)
            return [(m.partition(), m.value().decode()) for m in msgs if m.error() is None]
        if self.client == "kafka-python":
            got = self.c.poll(timeout_ms=500, max_records=n)
            return [(r.partition, r.value.decode()) for rs in got.values() for r in rs]
        got = self.txn.run(self.c.getmany(timeout_ms=500, max_records=n))
        return [(r.partition, r.value.decode()) for rs in got.values() for r in rs]

    def _positions(self) -> dict[int, int]:
        if self.client == "confluent":
            return {tp.partition: tp.offset for tp in self.c.position(self.c.assignment())
                    if tp.offset >= 0}
        if self.client == "kafka-python":
            return {tp.partition: self.c.position(tp) for tp in self.c.assignment()}
        return {tp.partition: self.txn.run(self.c.position(tp)) for tp in self.c.assignment()}

    def _send_offsets(self, positions: dict[int, int]) -> None:
        if self.client == "confluent":
            ck = self.ck
            self.txn.p.send_offsets_to_transaction(
                [ck.TopicPartition(self.source, p, o) for p, o in positions.items()],
                self.c.consumer_group_metadata(), 60)
        elif self.client == "kafka-python":
            k = self.kafka
            self.txn.p.send_offsets_to_transaction(
                {k.TopicPartition(self.source, p): k.OffsetAndMetadata(o, "", -1)
                 for p, o in positions.items()}, self.group)
        else:
            a = self.aiokafka
            self.txn.run(self.txn.p.send_offsets_to_transaction(
                {a.TopicPartition(self.source, p): o for p, o in positions.items()}, self.group))

    def _rewind(self) -> None:
        """Back to the group's committed offsets (the start when none)."""
        if self.client == "confluent":
            ck = self.ck
            for tp in self.c.committed([ck.TopicPartition(self.source, p)
                                        for p in range(self.partitions)], 30):
                self.c.seek(ck.TopicPartition(self.source, tp.partition,
                                              tp.offset if tp.offset >= 0 else 0))
        elif self.client == "kafka-python":
            for p in range(self.partitions):
                tp = self.kafka.TopicPartition(self.source, p)
                self.c.seek(tp, self.c.committed(tp) or 0)
        else:
            for p in range(self.partitions):
                tp = self.aiokafka.TopicPartition(self.source, p)
                self.c.seek(tp, self.txn.run(self.c.committed(tp)) or 0)

    def step(self, n: int, abort: bool = False, suffix: str = "") -> int:
        got = self._read(n)
        if not got:
            return 0
        self.txn.begin()
        for partition, value in got:
            self.txn.send(self.sink, value + suffix, partition)
        if abort:
            self.txn.flush()
            self.txn.abort()
            self._rewind()
            return len(got)
        self.txn.flush()
        self._send_offsets(self._positions())
        self.txn.commit()
        return len(got)

    def close(self) -> None:
        if self.client == "aiokafka":
            self.txn.run(self.c.stop())
        else:
            self.c.close()
        self.txn.close()
