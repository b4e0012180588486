"""A consumer group member per client library, each polling in its own thread (a member must
keep polling to take part in a rebalance), driven by the tests with plain method calls."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable


#: members started and not yet closed: ``close_leftovers`` stops them after a test that failed
#: half-way (a member's client thread left running draws from the global random and logs
#: tracebacks while later tests in the worker run)
_LIVE: list[Member] = []


def close_leftovers() -> None:
    """Close every member a test left open (a test that failed before its own ``close()``)."""
    while _LIVE:
        _LIVE[-1].close()


class Member:
    """One group member: ``records`` it got, its current ``assignment``; ``commit()`` commits
    what it consumed (synchronously, in its thread), ``close()`` leaves the group."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str) -> None:
        self.bootstrap, self.group, self.topic, self.name = bootstrap, group, topic, name
        self.records: list[tuple[int, int, str]] = []   # (partition, offset, value)
        self.assignment: frozenset[int] = frozenset()
        self.errors: list[str] = []
        self._commit = threading.Event()
        self._committed = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._guarded, name=f"member-{name}",
                                       daemon=True)
        _LIVE.append(self)
        self.thread.start()

    #: the default bound of ``commit()`` and ``close()``, wall seconds (ends only a run gone wrong)
    WAIT_S: float = 60

    def commit(self, timeout_s: float | None = None) -> None:
        timeout_s = timeout_s or self.WAIT_S
        self._committed.clear()
        self._commit.set()
        if not self._committed.wait(timeout_s):
            raise AssertionError(f"{self.name}: commit not done in {timeout_s} s; {self.errors}")
        assert not self.errors, self.errors

    def close(self, timeout_s: float | None = None) -> None:
        timeout_s = timeout_s or self.WAIT_S
        self._stop.set()
        self.thread.join(timeout_s)
        if self in _LIVE:
            _LIVE.remove(self)
        assert not self.thread.is_alive(), f"{self.name} did not close"

    def values(self) -> list[str]:
        with self._lock:
            return [v for _, _, v in self.records]

    def _got(self, partition: int, offset: int, value: bytes) -> None:
        with self._lock:
            self.records.append((partition, offset, value.decode()))

    def _guarded(self) -> None:
        """A member whose client raised is dead: say so in ``errors`` (the tests check them)
        rather than leaving only a thread warning behind."""
        try:
            self._run()
        except Exception as e:  # noqa: BLE001 (any client's exception)
            if not self.errors:
                self.errors.append(f"{self.name} stopped: {e!r}")

    def _run(self) -> None:
        raise NotImplementedError


class ConfluentMember(Member):
    def _consumer(self, ck):
        """The consumer, subscribed (a classic-protocol member: eager assignment callbacks)."""
        c = ck.Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "client.id": self.name, "session.timeout.ms": 30_000,
                         "heartbeat.interval.ms": 500, "topic.metadata.refresh.interval.ms": 1000})
        c.subscribe([self.topic], on_assign=lambda _, parts: self._assigned(parts),
                    on_revoke=lambda _, parts: self._assigned([]))
        return c

    def _run(self) -> None:
        import confluent_kafka as ck

        c = self._consumer(ck)
        try:
            while not self._stop.is_set():
                m = c.poll(0.1)
                if m is not None:
                    if m.error() is None:
                        self._got(m.partition(), m.offset(), m.value())
                    elif not m.error().retriable():
                        self.errors.append(str(m.error()))
                self._polled(c)
                if self._commit.is_set():
                    self._commit.clear()
                    self._commit_now(ck, c)
                    self._committed.set()
        finally:
            c.close()

    def _polled(self, c) -> None:
        """After each poll (the assignment comes through the callbacks here)."""

    def _commit_now(self, ck, c) -> None:
        self._retry(lambda: _commit_stored(ck, c))

    def _assigned(self, parts) -> None:
        self.assignment = frozenset(tp.partition for tp in parts)

    def _retry(self, fn: Callable[[], object]) -> None:
        """A commit caught in a coordinator move fails retriably: a real application retries."""
        for _ in range(50):
            try:
                fn()
                return
            except Exception as e:  # noqa: BLE001 (the client's own exception types)
                last = e
                time.sleep(0.2)
        self.errors.append(repr(last))


def _commit_stored(ck, consumer) -> None:
    """librdkafka's commit() raises _NO_OFFSET when the member read nothing since it was
    assigned its partitions (the other member read them before the split): nothing to commit,
    as an application treats it, not a failure."""
    try:
        consumer.commit(asynchronous=False)
    except ck.KafkaException as e:
        if e.args[0].code() != ck.KafkaError._NO_OFFSET:
            raise


class KafkaPythonMember(Member):
    def _run(self) -> None:
        import kafka
        import kafka.errors

        c = kafka.KafkaConsumer(bootstrap_servers=self.bootstrap,
                                group_id=self.group, client_id=self.name,
                                auto_offset_reset="earliest", enable_auto_commit=False,
                                session_timeout_ms=30_000, heartbeat_interval_ms=500,
                                metadata_max_age_ms=1000)
        # the topic's partitions in the coordinator's metadata snapshot before the first join
        # (topics() fetches metadata, which rebuilds it): a member that leads a join without
        # them assigns nothing and rejoins once its metadata changes, and kafka-python 3.0
        # loses such a rejoin's assignment when a poll's timeout ends while it completes (its
        # own assignment clears need_rejoin, so the finished join is never applied)
        c.subscribe([self.topic])
        try:
            while self.topic not in c.topics() and not self._stop.is_set():
                time.sleep(0.01)  # each topics() is a Metadata request; do not spin on a core
            while not self._stop.is_set():
                try:
                    polled = c.poll(timeout_ms=100)
                except kafka.errors.KafkaError as e:
                    # kafka-python 3.0's poll raises what its coordinator lookup met (a
                    # KafkaConnectionError from the killed coordinator's broker, still in
                    # Metadata until it is fenced): retriable, so an application polls again
                    if not e.retriable:
                        self.errors.append(repr(e))
                        raise
                    polled = {}
                for records in polled.values():
                    for r in records:
                        self._got(r.partition, r.offset, r.value)
                self.assignment = frozenset(tp.partition for tp in c.assignment())
                if self._commit.is_set():
                    self._commit_polling(c, kafka.errors)
        finally:
            c.close()

    def _commit_polling(self, c, errors) -> None:
        """Commit; a failure caught in a coordinator move or a rebalance is retried after the
        next poll (kafka-python completes a rebalance, which fails a commit with
        RebalanceInProgressError, only inside poll()), at most 50 times."""
        try:
            c.commit()
        except errors.KafkaError as e:
            self._failed_commits = getattr(self, "_failed_commits", 0) + 1
            if self._failed_commits < 50:
                return  # _commit stays set: the loop polls, then commits again
            self.errors.append(repr(e))
        self._failed_commits = 0
        self._commit.clear()
        self._committed.set()


class AiokafkaMember(Member):
    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        import aiokafka

        c = aiokafka.AIOKafkaConsumer(self.topic, bootstrap_servers=self.bootstrap,
                                      group_id=self.group, client_id=self.name,
                                      auto_offset_reset="earliest", enable_auto_commit=False,
                                      session_timeout_ms=30_000, heartbeat_interval_ms=500,
                                      metadata_max_age_ms=1000)
        await c.start()
        try:
            while not self._stop.is_set():
                batches = await c.getmany(timeout_ms=100)
                for records in batches.values():
                    for r in records:
                        self._got(r.partition, r.offset, r.value)
                self.assignment = frozenset(tp.partition for tp in c.assignment())
                if self._commit.is_set():
                    self._commit.clear()
                    for _ in range(50):
                        try:
                            await c.commit()
                            break
                        except Exception as e:  # noqa: BLE001 (aiokafka's own errors)
                            last = e
                            await asyncio.sleep(0.2)
                    else:
                        self.errors.append(repr(last))
                    self._committed.set()
        finally:
            await c.stop()


MEMBERS = {"confluent": ConfluentMember, "kafka-python": KafkaPythonMember,
           "aiokafka": AiokafkaMember}


def wait_for(what: Callable[[], bool], timeout_s: float, describe: Callable[[], str]) -> None:
    """Wait in wall time (clients run on it) for ``what()``; fail with ``describe()``."""
    deadline = time.monotonic() + timeout_s
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout_s} s: {describe()}")
        time.sleep(0.05)
