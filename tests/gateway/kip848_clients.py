"""A confluent-kafka (librdkafka) consumer speaking the KIP-848 protocol
(``group.protocol=consumer``), polling in its own thread and driven by plain method calls.

With the consumer protocol the assignment changes incrementally: ``on_assign`` / ``on_revoke``
name only the partitions added or taken away, so the member reads ``consumer.assignment()``
after each poll and keeps every assignment it went through in ``history``."""

from __future__ import annotations

import time

from group_clients import ConfluentMember


class ProtocolMember(ConfluentMember):
    """``group_clients``' confluent-kafka member (``records``, ``assignment``, ``commit()``,
    ``close()``, closed by ``close_leftovers`` after a failed test) speaking the consumer
    protocol, with every assignment it went through in ``history``."""

    WAIT_S = 90

    def __init__(self, bootstrap: str, group: str, topic: str, name: str,
                 assignor: str | None = None, instance_id: str | None = None,
                 extra: dict | None = None) -> None:
        self.config = {"bootstrap.servers": bootstrap, "group.id": group,
                       "group.protocol": "consumer", "client.id": name,
                       "auto.offset.reset": "earliest", "enable.auto.commit": False,
                       "topic.metadata.refresh.interval.ms": 1000, **(extra or {})}
        if assignor is not None:
            self.config["group.remote.assignor"] = assignor
        if instance_id is not None:
            self.config["group.instance.id"] = instance_id
        self.history: list[frozenset[int]] = []
        super().__init__(bootstrap, group, topic, name)   # starts the thread

    def _consumer(self, ck):
        c = ck.Consumer(self.config)
        c.subscribe([self.topic])
        return c

    def _polled(self, c) -> None:
        now = frozenset(tp.partition for tp in c.assignment())
        if now != self.assignment:
            self.assignment = now
            self.history.append(now)

    def _commit_now(self, ck, c) -> None:
        """A commit caught in a coordinator move or an epoch bump (STALE_MEMBER_EPOCH) fails
        retriably: retry after polling, as an application does."""
        last = None
        for _ in range(100):
            try:
                c.commit(asynchronous=False)
                return
            except ck.KafkaException as e:
                if e.args[0].code() == ck.KafkaError._NO_OFFSET:
                    return
                last = e
                c.poll(0.1)
                time.sleep(0.1)
        self.errors.append(repr(last))
