"""Kafka's PartitionChangeBuilder: from a partition and the state we want, the one
PartitionChangeRecord that gets there (or none when nothing changes).

Every caller (AlterPartition, elections, broker fencing, reassignment) states targets; this
module alone decides leadership, so the rules live in one place:

* a leader must be in the (target) ISR and acceptable (active, directory online); the current
  leader stays while it qualifies, else the first qualifying replica in assignment order wins;
  a PREFERRED election tries the first replica before keeping the current leader;
* an UNCLEAN election, when no ISR member qualifies, takes the first acceptable replica, makes
  it the whole ISR and marks the leader RECOVERING (from metadata.version 3.2-IV0);
* the ISR is never written empty: when its last member goes, the leader becomes -1 and the ISR
  keeps that member, so the partition can come back when it does;
* a reassignment whose target replicas are all in the ISR completes in the same record;
* the leader epoch is bumped (Leader written even when unchanged) when replicas are removed,
  and before 3.6-IV0 also when the ISR shrinks (KAFKA-15021). Replay bumps the partition epoch on
  every record and the leader epoch whenever Leader is not -2.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import NamedTuple

from ..errors import KraftError
from ..metadata import NO_LEADER, NO_LEADER_CHANGE, LeaderRecoveryState, PartitionRegistration
from ..metadata import versions as V
from ..protocol import messages as M
from ..protocol.frames import MetadataRecord
from ..protocol.uuid import Uuid
from .eligibility import LeaderAcceptor
from .reassignment_replicas import ReassignmentReplicas


class PartitionChangeError(KraftError, ValueError):
    """A caller broke the builder's contract (not a user error: those become error codes)."""


class Election(Enum):
    """Kafka's ``PartitionChangeBuilder.Election``."""

    PREFERRED = "preferred"  # the first replica if it qualifies, else like ONLINE
    ONLINE = "online"        # keep the partition led from its ISR
    UNCLEAN = "unclean"      # like ONLINE, then any acceptable replica (may lose data)


class ElectionResult(NamedTuple):
    leader: int
    unclean: bool


def _contains_all(values: Sequence[int], required: Sequence[int]) -> bool:
    return set(required) <= set(values)


class _Change:
    """The builder's working state: targets that start as the partition's own values."""

    def __init__(self, partition: PartitionRegistration, acceptable: LeaderAcceptor,
                 election: Election) -> None:
        self.partition = partition
        self.acceptable = acceptable
        self.election = election
        self.isr: tuple[int, ...] = partition.isr
        self.replicas: tuple[int, ...] = partition.replicas
        self.removing: tuple[int, ...] = partition.removing_replicas
        self.adding: tuple[int, ...] = partition.adding_replicas

    def complete_reassignment(self) -> None:
        done = ReassignmentReplicas(self.removing, self.adding, self.replicas).completed(self.isr)
        if done is not None:
            self.replicas, self.isr = done
            self.removing = self.adding = ()

    def qualifies(self, broker_id: int) -> bool:
        return broker_id in self.isr and self.acceptable(broker_id)

    def elect(self) -> ElectionResult:
        current = self.partition.leader
        preferred = self.replicas[0] if self.replicas else NO_LEADER
        if self.election is Election.PREFERRED and self.qualifies(preferred):
            return ElectionResult(preferred, False)
        if self.qualifies(current):
            return ElectionResult(current, False)
        for replica in self.replicas:
            if self.qualifies(replica):
                return ElectionResult(replica, False)
        if self.election is Election.UNCLEAN:
            for replica in self.replicas:
                if self.acceptable(replica):
                    return ElectionResult(replica, True)
        return ElectionResult(NO_LEADER, False)


def build_partition_change(
    partition: PartitionRegistration,
    topic_id: Uuid,
    partition_id: int,
    *,
    acceptable_leader: LeaderAcceptor,
    metadata_version: int,
    isr: Sequence[int] | None = None,
    replicas: Sequence[int] | None = None,
    removing: Sequence[int] | None = None,
    adding: Sequence[int] | None = None,
    leader_recovery_state: int | None = None,
    election: Election = Election.ONLINE,
    directories: Mapping[int, Uuid] | None = None,
    default_dir: Callable[[int], Uuid] | None = None,
) -> MetadataRecord | None:
    """The PartitionChangeRecord taking ``partition`` to the targets, or None if it is a no-op.

    Targets left as None keep the partition's value. ``directories`` overrides replica
    directories; replicas new to the partition get ``default_dir(broker)`` (only written from
    metadata.version 3.7-IV2, where PartitionChangeRecord v1 carries Directories).
    """
    change = _Change(partition, acceptable_leader, election)
    if isr is not None:
        change.isr = tuple(isr)
    if replicas is not None:
        change.replicas = tuple(replicas)
    if removing is not None:
        change.removing = tuple(removing)
    if adding is not None:
        change.adding = tuple(adding)
    target_lrs = partition.leader_recovery_state if leader_recovery_state is None \
        else int(leader_recovery_state)

    change.complete_reassignment()
    fields: dict = {}
    leader = NO_LEADER_CHANGE
    result = change.elect()
    if result.leader != partition.leader:
        leader = result.leader
        if result.unclean:
            # The new leader may lack committed data: it alone is in sync, and it must recover.
            fields["isr"] = (result.leader,)
            if (partition.leader_recovery_state != LeaderRecoveryState.RECOVERING
                    and V.is_leader_recovery_supported(metadata_version)):
                fields["leader_recovery_state"] = LeaderRecoveryState.RECOVERING.value
    if leader == NO_LEADER_CHANGE and not _contains_all(change.replicas, partition.replicas):
        leader = partition.leader  # replicas removed: followers must see a new leader epoch
    if "isr" not in fields and change.isr and change.isr != partition.isr:
        fields["isr"] = change.isr
    if (leader == NO_LEADER_CHANGE and "isr" in fields
            and V.is_leader_epoch_bump_required_on_isr_shrink(metadata_version)
            and not _contains_all(fields["isr"], partition.isr)):
        leader = partition.leader
    if leader != NO_LEADER_CHANGE:
        fields["leader"] = leader
    _assignment_changes(fields, change, partition, metadata_version, directories, default_dir)
    if target_lrs != partition.leader_recovery_state:
        fields["leader_recovery_state"] = target_lrs
    if not fields:
        return None
    record = M.PartitionChangeRecord(topic_id=topic_id, partition_id=partition_id, **fields)
    return MetadataRecord(record, V.partition_change_record_version(metadata_version))


def _assignment_changes(fields: dict, change: _Change, partition: PartitionRegistration, mv: int,
                        directories: Mapping[int, Uuid] | None,
                        default_dir: Callable[[int], Uuid] | None) -> None:
    if change.replicas:
        if V.is_directory_assignment_supported(mv):
            where = dict(zip(partition.replicas, partition.directories))
            where.update(directories or {})
            dirs = []
            for replica in change.replicas:
                if replica in where:
                    dirs.append(where[replica])
                elif default_dir is None:
                    raise PartitionChangeError(
                        f"replica {replica} is new to the partition: a default_dir is needed")
                else:
                    dirs.append(default_dir(replica))
            if tuple(dirs) != partition.directories:
                fields["directories"] = tuple(dirs)
        if change.replicas != partition.replicas:
            fields["replicas"] = change.replicas
    if change.removing != partition.removing_replicas:
        fields["removing_replicas"] = change.removing
    if change.adding != partition.adding_replicas:
        fields["adding_replicas"] = change.adding
