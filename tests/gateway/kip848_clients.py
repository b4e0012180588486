"""A confluent-kafka (librdkafka) consumer speaking the KIP-848 protocol
(``group.protocol=consumer``), polling in its own thread and driven by plain method calls.

With the consumer protocol the assignment changes incrementally: ``on_assign`` / ``on_revoke``
name only the partitions added or taken away, so the member reads ``consumer.assignment()``
after each poll and keeps every assignment it went through in ``history``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class ProtocolMember:
    def __init__(self, bootstrap: str, group: str, topic: str, name: str,
                 assignor: str | None = None, instance_id: str | None = None,
                 extra: dict | None = None) -> None:
        self.name = name
        self.config = {"bootstrap.servers": bootstrap, "group.id": group,
                       "group.protocol": "consumer", "client.id": name,
                       "auto.offset.reset": "earliest", "enable.auto.commit": False,
                       "topic.metadata.refresh.interval.ms": 1000, **(extra or {})}
        if assignor is not None:
            self.config["group.remote.assignor"] = assignor
        if instance_id is not None:
            self.config["group.instance.id"] = instance_id
        self.topic = topic
        self.records: list[tuple[int, int, str]] = []
        self.assignment: frozenset[int] = frozenset()
        self.history: list[frozenset[int]] = []
        self.errors: list[str] = []
        self._commit, self._committed, self._stop = (threading.Event() for _ in range(3))
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._guarded, name=f"kip848-{name}", daemon=True)
        self.thread.start()

    def commit(self, timeout_s: float = 90) -> None:
        self._committed.clear()
        self._commit.set()
        if not self._committed.wait(timeout_s):
            raise AssertionError(f"{self.name}: commit not done in {timeout_s} s; {self.errors}")
        assert not self.errors, self.errors

    def close(self, timeout_s: float = 90) -> None:
        self._stop.set()
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), f"{self.name} did not close"

    def values(self) -> list[str]:
        with self._lock:
            return [v for _, _, v in self.records]

    def _guarded(self) -> None:
        try:
            self._run()
        except Exception as e:  # noqa: BLE001 (the client's own exception types)
            self.errors.append(f"{self.name} stopped: {e!r}")

    def _run(self) -> None:
        import confluent_kafka as ck

        c = ck.Consumer(self.config)
        c.subscribe([self.topic])
        try:
            while not self._stop.is_set():
                m = c.poll(0.1)
                if m is not None:
                    if m.error() is None:
                        with self._lock:
                            self.records.append((m.partition(), m.offset(), m.value().decode()))
                    elif not m.error().retriable():
                        self.errors.append(str(m.error()))
                now = frozenset(tp.partition for tp in c.assignment())
                if now != self.assignment:
                    self.assignment = now
                    self.history.append(now)
                if self._commit.is_set():
                    self._commit.clear()
                    self._commit_with_retries(ck, c)
                    self._committed.set()
        finally:
            c.close()

    def _commit_with_retries(self, ck, c) -> None:
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


def wait_for(what: Callable[[], bool], timeout_s: float, describe: Callable[[], str]) -> None:
    """Wait in wall time (clients run on it) for ``what()``; fail with ``describe()``."""
    deadline = time.monotonic() + timeout_s
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout_s} s: {describe()}")
        time.sleep(0.05)
