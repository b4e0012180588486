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
  every record and the leader epoch whenever Leader is not -2;
* with eligible leader replicas (KIP-966, :class:`Elr` given and enabled; Kafka 4.x): while the
  ISR is below min.insync.replicas, members that leave it move to the ELR (unless they shut
  down uncleanly) and the rest of the former replicas to the last known ELR; the ISR may then
  be written empty; with an empty ISR a leader comes from the ELR (and becomes the ISR); when
  the partition first loses its leader the last known ELR keeps that leader alone, and that
  "last known leader" is elected (as an unclean election) once ISR and ELR are both empty.
  An unclean election or ELR being off clears both lists. Lists are written in ascending order
  (Java's HashSet order for broker ids).
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


class Elr(NamedTuple):
    """ELR settings of one partition change (Kafka's ``setEligibleLeaderReplicasEnabled``, the
    topic's effective ``min.insync.replicas``, ``setUncleanShutdownReplicas``)."""

    enabled: bool
    min_isr: int = 1
    unclean_shutdown: tuple[int, ...] = ()
    use_last_known_leader: bool = True


def _contains_all(values: Sequence[int], required: Sequence[int]) -> bool:
    return set(required) <= set(values)


class _Change:
    """The builder's working state: targets that start as the partition's own values."""

    def __init__(self, partition: PartitionRegistration, acceptable: LeaderAcceptor,
                 election: Election, elr: Elr) -> None:
        self.partition = partition
        self.acceptable = acceptable
        self.election = election
        self.elr_settings = elr
        self.elr: tuple[int, ...] = partition.elr
        self.last_known_elr: tuple[int, ...] = partition.last_known_elr
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
        """In the ISR, or in the ELR while the ISR is empty; and acceptable."""
        in_sync = broker_id in self.isr or (not self.isr and broker_id in self.elr)
        return in_sync and self.acceptable(broker_id)

    def populate_elr(self) -> None:
        """Kafka's ``maybePopulateTargetElr``."""
        if not self.elr_settings.enabled:
            return
        if len(self.isr) >= self.elr_settings.min_isr:
            self.elr = self.last_known_elr = ()
            return
        isr = set(self.isr)
        candidates = set(self.elr) | set(self.partition.isr)
        self.elr = tuple(sorted(r for r in candidates if r not in isr
                                and r not in self.elr_settings.unclean_shutdown))
        candidates |= set(self.last_known_elr)
        self.last_known_elr = tuple(sorted(r for r in candidates
                                           if r not in isr and r not in self.elr))

    def can_elect_last_known_leader(self) -> bool:
        """Kafka's ``canElectLastKnownLeader`` (the leader must also be acceptable: the kit never
        elects a fenced broker)."""
        settings = self.elr_settings
        if not settings.enabled or not settings.use_last_known_leader:
            return False
        if self.elr or self.isr or len(self.partition.last_known_elr) != 1:
            return False
        return self.acceptable(self.partition.last_known_elr[0])

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
        if self.can_elect_last_known_leader():
            return ElectionResult(self.partition.last_known_elr[0], True)
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
    elr: Elr | None = None,
) -> MetadataRecord | None:
    """The PartitionChangeRecord taking ``partition`` to the targets, or None if it is a no-op.

    Targets left as None keep the partition's value. ``directories`` overrides replica
    directories; replicas new to the partition get ``default_dir(broker)`` (only written from
    metadata.version 3.7-IV2, where PartitionChangeRecord v1 carries Directories).
    """
    if elr is None:
        elr = Elr(False)
    elif not V.is_elr_supported(metadata_version):
        elr = Elr(False, use_last_known_leader=elr.use_last_known_leader)
    change = _Change(partition, acceptable_leader, election, elr)
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
    change.populate_elr()
    fields: dict = {}
    leader = NO_LEADER_CHANGE
    result = change.elect()
    if result.leader != partition.leader:
        leader = result.leader
        if result.leader in change.elr:
            # elected from the ELR: it alone is in sync now
            change.isr = (result.leader,)
            change.elr = tuple(r for r in change.elr if r != result.leader)
        if result.unclean:
            # The new leader may lack committed data: it alone is in sync, and it must recover.
            fields["isr"] = (result.leader,)
            if (partition.leader_recovery_state != LeaderRecoveryState.RECOVERING
                    and V.is_leader_recovery_supported(metadata_version)):
                fields["leader_recovery_state"] = LeaderRecoveryState.RECOVERING.value
    if leader == NO_LEADER_CHANGE and not _contains_all(change.replicas, partition.replicas):
        leader = partition.leader  # replicas removed: followers must see a new leader epoch
    _elr_changes(fields, change, leader)
    if "isr" not in fields and (change.isr or elr.enabled) and change.isr != partition.isr:
        fields["isr"] = change.isr
    if (leader == NO_LEADER_CHANGE and "isr" in fields
            and V.is_leader_epoch_bump_required_on_isr_shrink(metadata_version)
            and not _contains_all(fields["isr"], partition.isr)):
        leader = partition.leader
    if leader != NO_LEADER_CHANGE:
        fields["leader"] = leader
    _last_known_leader(fields, change, leader)
    _assignment_changes(fields, change, partition, metadata_version, directories, default_dir)
    if target_lrs != partition.leader_recovery_state:
        fields["leader_recovery_state"] = target_lrs
    if not fields:
        return None
    record = M.PartitionChangeRecord(topic_id=topic_id, partition_id=partition_id, **fields)
    return MetadataRecord(record, V.partition_change_record_version(metadata_version))


def _elr_changes(fields: dict, change: _Change, leader: int) -> None:
    """Kafka's ``maybeUpdateRecordElr``: ELR fields go in the record when they change; an
    unclean election (the ISR already written) or ELR being off empties them."""
    partition, settings = change.partition, change.elr_settings
    if "isr" in fields or not settings.enabled:
        change.elr = change.last_known_elr = ()
    if change.elr != partition.elr:
        fields["eligible_leader_replicas"] = change.elr
    if settings.use_last_known_leader and len(partition.last_known_elr) == 1 and (
            leader == NO_LEADER or (leader == NO_LEADER_CHANGE and partition.leader == NO_LEADER)):
        change.last_known_elr = partition.last_known_elr  # it keeps the last known leader
    if not settings.use_last_known_leader and change.last_known_elr != partition.last_known_elr:
        fields["last_known_elr"] = change.last_known_elr


def _last_known_leader(fields: dict, change: _Change, leader: int) -> None:
    """4.2.1 ``maybeUpdateLastKnownLeader``: when the record takes the leader away and no last
    known ELR is stored yet, it stores the partition's leader; when the record names a leader
    and one is stored, it is cleared. ``leader``: the record's Leader (-2 when unchanged)."""
    partition, settings = change.partition, change.elr_settings
    if not settings.use_last_known_leader or not settings.enabled:
        return
    if leader == NO_LEADER and not partition.last_known_elr:
        fields["last_known_elr"] = (partition.leader,)
    elif leader >= 0 and partition.last_known_elr:
        fields["last_known_elr"] = ()


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
