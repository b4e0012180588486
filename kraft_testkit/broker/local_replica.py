"""One partition hosted on a broker (:class:`LocalReplica`) and what its leader knows of each
follower (:class:`FollowerState`), apart from the replica manager (``replicas.py``) that keeps
them. A follower record can follow its KIP-227 fetch session's clock instead of being written
at every fetch (``replica_fetch.py``); it reads the same either way.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kraft_testkit.metadata import PartitionRegistration
from kraft_testkit.protocol.uuid import Uuid


class FollowerState:
    """What a leader knows of one follower (Kafka's ``Replica``).

    While its partition is clean in the follower's fetch session (``replica_fetch.py``), the
    record follows the session's last fetch (``link``, a ``FetchClock``) instead of being
    written at every fetch; :meth:`unlink` makes it standalone again with the same values.
    """

    __slots__ = ("_caught_up", "_epoch", "_fetch", "broker_id", "link")

    #: bumped at every change of any record's own values or link: what
    #: :meth:`ReplicaManager.isr_summary` keeps is valid while it has not moved
    mutations = 0

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self._fetch = -1
        self._caught_up = 0
        self._epoch: int | None = None
        self.link: Any = None

    @property
    def last_fetch_ms(self) -> int:
        return self._fetch if self.link is None else self.link.ms

    @property
    def last_caught_up_ms(self) -> int:
        link = self.link
        if link is not None and link.ms > self._caught_up:
            return link.ms
        return self._caught_up

    @last_caught_up_ms.setter
    def last_caught_up_ms(self, value: int) -> None:
        self.unlink()
        self._caught_up = value
        FollowerState.mutations += 1

    @property
    def broker_epoch(self) -> int | None:
        """From its last fetch's ReplicaState (None: no fetch since this broker became leader)."""
        return self._epoch if self.link is None else self.link.epoch

    def link_to(self, clock: Any) -> None:
        """Follow the session's fetches from now on (replica_fetch.py)."""
        self.link = clock
        FollowerState.mutations += 1

    def unlink(self) -> None:
        link = self.link
        if link is not None:
            self._fetch = link.ms
            if link.ms > self._caught_up:
                self._caught_up = link.ms
            self._epoch = link.epoch
            self.link = None
            FollowerState.mutations += 1

    def fetched(self, epoch: int, now_ms: int) -> None:
        """It fetched at ``now_ms`` (from its broker epoch ``epoch``): an idle partition's
        follower is caught up at every fetch."""
        self.unlink()
        self._fetch = now_ms
        if now_ms > self._caught_up:
            self._caught_up = now_ms
        self._epoch = epoch
        FollowerState.mutations += 1

    def reset(self, now_ms: int, in_sync: bool, new_leader: bool) -> None:
        self.unlink()
        self._caught_up = now_ms if in_sync else 0
        if new_leader:
            self._fetch = -1
            self._epoch = None
        FollowerState.mutations += 1

    def __repr__(self) -> str:
        return (f"FollowerState({self.broker_id}, last_fetch={self.last_fetch_ms}, "
                f"caught_up={self.last_caught_up_ms}, epoch={self.broker_epoch})")


class PendingIsr(NamedTuple):
    """An ISR change sent to the controller and not answered yet."""

    kind: str  # "expand" or "shrink"
    replicas: frozenset[int]
    isr: tuple[int, ...]


class LocalReplica:
    """One partition hosted on this broker: as leader or follower, with its committed ISR."""

    __slots__ = (
        "_fetched",
        "_flink",
        "applied",
        "followers",
        "isr",
        "leader",
        "leader_epoch",
        "partition",
        "partition_epoch",
        "pending",
        "replicas",
        "topic_id",
        "topic_name",
    )

    def __init__(self, topic_id: Uuid, topic_name: str, partition: int) -> None:
        self.topic_id = topic_id
        self.topic_name = topic_name
        self.partition = partition
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.leader = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.pending: PendingIsr | None = None
        self.followers: dict[int, FollowerState] = {}
        self.applied: PartitionRegistration | None = None
        """The registration last applied from an image (re-applied only when it changes)."""
        self._fetched: int | None = None
        self._flink: Any = None  # the leader's FetchClock while it is clean in the session

    @property
    def last_fetched_ms(self) -> int | None:
        """As a follower: when a fetch from the leader last succeeded."""
        return self._fetched if self._flink is None else self._flink.ms

    @last_fetched_ms.setter
    def last_fetched_ms(self, value: int | None) -> None:
        self._flink = None
        self._fetched = value

    def link_fetched(self, clock: Any) -> None:
        """Fetched now, and at every successful fetch of the session from now on."""
        self._flink = clock

    def unlink_fetched(self) -> None:
        if self._flink is not None:
            self._fetched = self._flink.ms
            self._flink = None

    def fetched_follows(self, clock: Any) -> bool:
        return self._flink is clock

    @property
    def key(self) -> tuple[Uuid, int]:
        return (self.topic_id, self.partition)

    @property
    def name(self) -> str:
        return f"{self.topic_name}-{self.partition}"

    def __repr__(self) -> str:
        return (f"LocalReplica({self.name}, leader={self.leader}@{self.leader_epoch}, "
                f"isr={list(self.isr)}, partition_epoch={self.partition_epoch}, "
                f"pending={self.pending})")


_NEVER = 1 << 62


def caught_up_min(entry: tuple[int, dict]) -> int:
    """The oldest last-caught-up time of an ``isr_summary`` entry (a record following a
    session is caught up at the later of its own time and the session's last fetch)."""
    own, clocks = entry
    for clock, least in clocks.items():
        t = clock.ms if clock.ms > least else least
        if t < own:
            own = t
    return own
