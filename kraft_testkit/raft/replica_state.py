"""The small state objects of a Raft replica: its roles, one connection per destination, what a
leader knows of each replica, the fetches it holds, and a snapshot download in progress."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import reconfig
from kraft_testkit.sim.node import NEVER

UNATTACHED, VOTED, CANDIDATE, LEADER, FOLLOWER, RESIGNED, PROSPECTIVE = (
    "unattached", "voted", "candidate", "leader", "follower", "resigned", "prospective")
_ELECTION_BACKOFF_BASE_MS = 100  # Kafka's RETRY_BACKOFF_BASE_MS
_NO_DIR = Uuid.ZERO


class _Conn:
    """Kafka's RequestManager.ConnectionState: one request in flight per destination."""

    __slots__ = ("backoff_until", "cid", "sent_at")

    def __init__(self) -> None:
        self.cid: int | None = None
        self.sent_at = 0
        self.backoff_until = 0

    def ready_at(self, request_timeout_ms: int) -> int:
        return self.sent_at + request_timeout_ms if self.cid is not None else self.backoff_until


class Progress:
    """What the leader knows of one replica's log (DescribeQuorum's ReplicaState)."""

    __slots__ = ("caught_up_ms", "directory_id", "end_offset", "last_fetch_ms", "replica_id")

    def __init__(self, replica_id: int, directory_id: Uuid, end_offset: int = -1) -> None:
        self.replica_id = replica_id
        self.directory_id = directory_id
        self.end_offset = end_offset
        self.last_fetch_ms = -1
        self.caught_up_ms = -1


class _Parked:
    """A fetch the leader holds until new data, a new high watermark, or its max wait."""

    __slots__ = ("cid", "deadline", "partition", "replica_id", "src")

    def __init__(self, src: int, cid: int, replica_id: int, partition: Any, deadline: int) -> None:
        self.src = src
        self.cid = cid
        self.replica_id = replica_id
        self.partition = partition
        self.deadline = deadline


class _Leadership:
    """State only a leader has (Kafka's LeaderState)."""

    __slots__ = (
        "acked",
        "change",
        "check_deadline",
        "drain_at",
        "epoch_start",
        "fetched",
        "observers",
        "parked",
        "pending",
        "voters",
        "wake_parked",
    )

    def __init__(self, epoch_start: int, voters: Mapping[int, Uuid], check_deadline: int) -> None:
        self.epoch_start = epoch_start
        self.voters = {v: Progress(v, d) for v, d in voters.items()}
        self.observers: dict[int, Progress] = {}
        self.acked: set[int] = set()  # voters that know this leader (BeginQuorumEpoch)
        self.fetched: set[int] = set()  # voters that fetched since the last check-quorum reset
        self.check_deadline = check_deadline
        self.parked: list[_Parked] = []
        self.pending: list[bytes] = []  # appended values waiting for the linger time
        self.drain_at = NEVER
        self.wake_parked = False
        self.change: reconfig.PendingChange | None = None  # a voter change awaiting its commit


class _Download:
    """A snapshot being fetched from the leader, chunk by chunk, kept in memory until whole."""

    __slots__ = ("data", "snapshot_id")

    def __init__(self, snapshot_id: tuple[int, int]) -> None:
        self.snapshot_id = snapshot_id
        self.data = bytearray()
