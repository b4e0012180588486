"""Kafka error codes the Raft RPCs use, and the errors the replica raises to its callers.

Responses carry Kafka's numeric codes; :data:`NAMES` turns them back into the names Kafka's
``Errors`` enum prints, which is what error messages and traces show.
"""

from __future__ import annotations

from kraft_testkit.errors import KraftError, StorageError

NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
BROKER_NOT_AVAILABLE = 8
INVALID_REQUEST = 42
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
INCONSISTENT_VOTER_SET = 94
SNAPSHOT_NOT_FOUND = 98
POSITION_OUT_OF_RANGE = 99
INCONSISTENT_CLUSTER_ID = 104
UNSUPPORTED_VERSION = 35
INVALID_VOTER_KEY = 125
DUPLICATE_VOTER = 126
VOTER_NOT_FOUND = 127

NAMES: dict[int, str] = {
    code: name for name, code in globals().items() if name.isupper() and type(code) is int
}


def error_name(code: int) -> str:
    """Kafka's name for an error code (``"FENCED_LEADER_EPOCH"``), or ``"UNKNOWN(<code>)"``."""
    return NAMES.get(code, f"UNKNOWN({code})")


class RaftError(KraftError):
    """Root of the errors the Raft layer raises to its callers."""


class NotLeader(RaftError):
    """The replica asked to append is not the leader (Kafka: NOT_LEADER_OR_FOLLOWER).

    ``leader_id`` and ``epoch`` say who the replica thinks leads, so a caller can retry there.
    """

    code = NOT_LEADER_OR_FOLLOWER

    def __init__(self, node_id: int, leader_id: int | None, epoch: int) -> None:
        self.node_id = node_id
        self.leader_id = leader_id
        self.epoch = epoch
        known = f"the leader is {leader_id}" if leader_id is not None else "no leader is known"
        super().__init__(f"NOT_LEADER_OR_FOLLOWER: node {node_id} is not the leader in epoch {epoch} ({known})")


class InvalidResign(RaftError, ValueError):
    """``resign(epoch)`` named an epoch this replica cannot resign from (Kafka's
    ``KafkaRaftClient#resign`` throws IllegalArgumentException): a negative or future epoch,
    or the current one while another replica leads it."""


class LogError(RaftError):
    """Files on a replica's disk that cannot be a Kafka metadata log (outside torn tails)."""


class CorruptFile(LogError, StorageError):
    """A file of the metadata log directory that is damaged (not a torn tail a crash leaves):
    names the file, the problem and, for binary files, the byte offset."""

    __init__ = StorageError.__init__
