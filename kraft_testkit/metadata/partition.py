"""A partition's registration and Kafka's rules for changing it.

:class:`PartitionRegistration` is a NamedTuple, not a dataclass: it is the one value rebuilt on
nearly every committed batch (ISR and leader changes), and a tuple is the cheapest immutable
object Python builds.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from typing import Any, NamedTuple

from ..protocol import messages as M
from ..protocol.frames import MetadataRecord
from ..protocol.uuid import Uuid
from . import versions as V
from .errors import MetadataReplayError

NO_LEADER = -1
NO_LEADER_CHANGE = -2  # PartitionChangeRecord.Leader when the leader stays


class DirectoryId:
    """Kafka's reserved directory ids (``org.apache.kafka.common.DirectoryId``)."""

    MIGRATING = Uuid.ZERO                           # placed before directories were tracked
    UNASSIGNED = Uuid(b"\0" * 15 + b"\x01")        # not yet placed in a directory
    LOST = Uuid(b"\0" * 15 + b"\x02")              # placed in a directory now offline

    @staticmethod
    def is_reserved(u: bytes) -> bool:
        return u[:8] == b"\0" * 8 and int.from_bytes(u[8:], "big") < 100


class LeaderRecoveryState(IntEnum):
    RECOVERED = 0
    RECOVERING = 1


_LRS_VALUES = frozenset(s.value for s in LeaderRecoveryState)
_NO_LRS_CHANGE = -1


def _migrating(n: int) -> tuple[Uuid, ...]:
    return (DirectoryId.MIGRATING,) * n


#: one Uuid object per directory id: a decoded PartitionRecord brings a fresh 16-byte object per
#: replica (about 70 bytes each), while a cluster has only a few directories. Only Uuid
#: instances go in, so a shared value is always a Uuid (never a plain bytes equal to it).
_DIRECTORIES: dict[Uuid, Uuid] = {}
_MAX_DIRECTORIES = 1 << 16


def _shared_directories(dirs: Any) -> tuple[Uuid, ...]:
    if len(_DIRECTORIES) > _MAX_DIRECTORIES:
        _DIRECTORIES.clear()
    shared = _DIRECTORIES.setdefault
    return tuple([shared(d, d) if type(d) is Uuid else d for d in dirs])


def _ints(values: Any) -> tuple[int, ...]:
    return () if values is None else tuple(values)


class PartitionRegistration(NamedTuple):
    """Replica assignment, ISR, leadership and epochs of one partition."""

    replicas: tuple[int, ...]
    directories: tuple[Uuid, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_recovery_state: int = LeaderRecoveryState.RECOVERED.value
    leader_epoch: int = 0
    partition_epoch: int = 0
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    # ------------------------------------------------------------- from records

    @classmethod
    def from_record(cls, rec: Any) -> PartitionRegistration:
        """From a PartitionRecord of any dialect (draft and pre-release shapes lack some fields:
        no directories means every replica is MIGRATING, as Kafka reads a v0 record)."""
        replicas = tuple(rec.replicas)
        dirs = getattr(rec, "directories", None)
        if dirs:
            if len(dirs) != len(replicas):
                raise MetadataReplayError(
                    f"{len(dirs)} directories for {len(replicas)} replicas", rec)
            directories = _shared_directories(dirs)
        else:
            directories = _migrating(len(replicas))
        isr = tuple(rec.isr)
        if isr == replicas:  # the usual case: one tuple (and its ints) for both
            isr = replicas
        lrs = getattr(rec, "leader_recovery_state", 0)
        if lrs not in _LRS_VALUES:
            raise MetadataReplayError(f"unknown leader recovery state {lrs}", rec)
        if rec.leader < NO_LEADER:
            raise MetadataReplayError(f"leader {rec.leader} is not a broker id or -1", rec)
        return cls(replicas, directories, isr, _ints(rec.removing_replicas),
                   _ints(rec.adding_replicas), rec.leader, lrs, rec.leader_epoch,
                   rec.partition_epoch, _ints(getattr(rec, "eligible_leader_replicas", None)),
                   _ints(getattr(rec, "last_known_elr", None)))

    def merge(self, rec: Any) -> PartitionRegistration:
        """Apply a PartitionChangeRecord, as Kafka's ``PartitionRegistration.merge``.

        Null fields keep their value. A Leader other than -2 sets the leader (-1: none) and bumps
        the leader epoch; the partition epoch is bumped by every change. (Before 3.6-IV0 the
        controller forced a leader epoch bump on ISR shrink by writing the unchanged leader.)
        Replicas without Directories keep each surviving replica's directory and mark new ones
        UNASSIGNED.
        """
        replicas = self.replicas if rec.replicas is None else tuple(rec.replicas)
        dirs = getattr(rec, "directories", None)
        if dirs:
            if len(dirs) != len(replicas):
                raise MetadataReplayError(
                    f"{len(dirs)} directories for {len(replicas)} replicas", rec)
            directories = tuple(dirs)
        elif rec.replicas is not None:
            where = dict(zip(self.replicas, self.directories))
            directories = tuple(where.get(r, DirectoryId.UNASSIGNED) for r in replicas)
        else:
            directories = self.directories
        leader = rec.leader
        if leader == NO_LEADER_CHANGE:
            leader, leader_epoch = self.leader, self.leader_epoch
        elif leader < NO_LEADER:
            raise MetadataReplayError(f"leader {leader} is not a broker id, -1 or -2", rec)
        else:
            leader_epoch = self.leader_epoch + 1
        lrs = getattr(rec, "leader_recovery_state", _NO_LRS_CHANGE)
        if lrs == _NO_LRS_CHANGE:
            lrs = self.leader_recovery_state
        elif lrs not in _LRS_VALUES:
            raise MetadataReplayError(f"unknown leader recovery state {lrs}", rec)
        elr = getattr(rec, "eligible_leader_replicas", None)
        last_known = getattr(rec, "last_known_elr", None)
        return PartitionRegistration(
            replicas,
            directories,
            self.isr if rec.isr is None else tuple(rec.isr),
            self.removing_replicas if rec.removing_replicas is None
            else tuple(rec.removing_replicas),
            self.adding_replicas if rec.adding_replicas is None else tuple(rec.adding_replicas),
            leader,
            lrs,
            leader_epoch,
            self.partition_epoch + 1,
            self.elr if elr is None else tuple(elr),
            self.last_known_elr if last_known is None else tuple(last_known),
        )

    # ------------------------------------------------------------- queries

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    @property
    def preferred_replica(self) -> int:
        return self.replicas[0] if self.replicas else NO_LEADER

    def directory(self, replica: int) -> Uuid:
        for r, d in zip(self.replicas, self.directories):
            if r == replica:
                return d
        raise KeyError(f"broker {replica} is not a replica of this partition")

    # ------------------------------------------------------------- to records

    def to_record(self, topic_id: Uuid, partition_id: int, mv: int,
                  on_loss: Callable[[str], None]) -> MetadataRecord:
        """The PartitionRecord a snapshot at ``mv`` holds. As in Kafka, ELR fields are dropped
        without complaint where the version cannot carry them."""
        directories: tuple[Uuid, ...] = ()
        if V.is_directory_assignment_supported(mv):
            directories = self.directories
        elif any(d != DirectoryId.MIGRATING for d in self.directories):
            on_loss("the directory assignment state of one or more replicas")
        elr = last_known = None
        if V.is_elr_supported(mv):
            elr = self.elr or None
            last_known = self.last_known_elr or None
        msg = M.PartitionRecord(
            partition_id=partition_id, topic_id=topic_id, replicas=self.replicas, isr=self.isr,
            removing_replicas=self.removing_replicas, adding_replicas=self.adding_replicas,
            leader=self.leader, leader_recovery_state=self.leader_recovery_state,
            leader_epoch=self.leader_epoch, partition_epoch=self.partition_epoch,
            directories=directories, eligible_leader_replicas=elr, last_known_elr=last_known)
        return MetadataRecord(msg, V.partition_record_version(mv))

    def to_dict(self) -> dict:
        return {
            "replicas": list(self.replicas),
            "directories": [str(d) for d in self.directories],
            "isr": list(self.isr),
            "removing_replicas": list(self.removing_replicas),
            "adding_replicas": list(self.adding_replicas),
            "leader": self.leader,
            "leader_recovery_state": self.leader_recovery_state,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
            "elr": list(self.elr),
            "last_known_elr": list(self.last_known_elr),
        }
