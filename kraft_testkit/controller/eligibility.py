"""Who may lead or join an ISR, and where a new replica's log lives: the controller's view of
brokers that every replication command shares.

Kafka's ``ClusterControlManager.isActive`` (registered, unfenced, not in controlled shutdown),
its ``LeaderAcceptor`` (active *and* the replica's directory online) and ``defaultDir``. The hooks
that react to a broker changing state pass ``removing``/``adding`` so that broker counts as
ineligible/eligible before the image shows its new state, as Kafka does while it generates the
records of that very change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..metadata import (
    NO_LEADER,
    BrokerRegistration,
    DirectoryId,
    MetadataImage,
    PartitionRegistration,
)
from ..metadata import versions as V
from ..protocol.uuid import Uuid
from .features import metadata_version

__all__ = ["LeaderAcceptor", "default_dir", "default_dir_provider", "default_dirs", "is_active",
           "is_directory_online", "leader_acceptor", "metadata_version", "replica_directory"]

LeaderAcceptor = Callable[[int], bool]


def is_active(image: MetadataImage, broker_id: int) -> bool:
    """Registered, unfenced and not shutting down: may lead, join an ISR, start in one."""
    broker = image.cluster.brokers.get(broker_id)
    return broker is not None and not broker.fenced and not broker.in_controlled_shutdown


def is_directory_online(image: MetadataImage, broker_id: int, directory: Uuid) -> bool:
    """Kafka's ``DirectoryId.isOnline`` for the broker's registered directories: reserved ids
    other than LOST count as online, and so does anything when the broker lists no directory."""
    broker = image.cluster.brokers.get(broker_id)
    if broker is None:
        return False
    if directory == DirectoryId.UNASSIGNED or directory == DirectoryId.MIGRATING:
        return True
    if directory == DirectoryId.LOST:
        return False
    return not broker.log_dirs or directory in broker.log_dirs


def replica_directory(partition: PartitionRegistration, broker_id: int) -> Uuid:
    """The directory of a replica; a broker that is not (yet) a replica has none assigned."""
    for replica, directory in zip(partition.replicas, partition.directories):
        if replica == broker_id:
            return directory
    return DirectoryId.UNASSIGNED


def leader_acceptor(image: MetadataImage, partition: PartitionRegistration, *,
                    removing: int = NO_LEADER, adding: int = NO_LEADER,
                    unclean_shutdown: int = NO_LEADER) -> LeaderAcceptor:
    """A predicate: may this broker lead ``partition``? ``removing`` never may (it is being
    fenced, shut down or unregistered), nor ``unclean_shutdown`` (it may have lost data);
    ``adding`` may even if the image still shows it fenced."""

    def acceptable(broker_id: int) -> bool:
        if broker_id in (removing, unclean_shutdown) or broker_id < 0:
            return False
        if broker_id != adding and not is_active(image, broker_id):
            return False
        return is_directory_online(image, broker_id, replica_directory(partition, broker_id))

    return acceptable


def default_dir(image: MetadataImage, broker_id: int) -> Uuid:
    """Where a new replica on ``broker_id`` goes: its only log directory, UNASSIGNED when it has
    several (the broker picks one and tells the controller), MIGRATING before directories are
    tracked (metadata.version below 3.7-IV2) or when the broker lists none."""
    if not V.is_directory_assignment_supported(metadata_version(image)):
        return DirectoryId.MIGRATING
    return _registered_default_dir(image.cluster.brokers.get(broker_id))


def default_dirs(image: MetadataImage, broker_ids: Sequence[int]) -> tuple[Uuid, ...]:
    """``default_dir`` of each broker, the metadata.version read once (new partitions)."""
    if not V.is_directory_assignment_supported(metadata_version(image)):
        return (DirectoryId.MIGRATING,) * len(broker_ids)
    get = image.cluster.brokers.get
    return tuple([_registered_default_dir(get(b)) for b in broker_ids])


def _registered_default_dir(broker: BrokerRegistration | None) -> Uuid:
    if broker is None:
        return DirectoryId.UNASSIGNED
    if not broker.log_dirs:
        return DirectoryId.MIGRATING
    if len(broker.log_dirs) == 1:
        return broker.log_dirs[0]
    return DirectoryId.UNASSIGNED


def default_dir_provider(image: MetadataImage) -> Callable[[int], Uuid]:
    return lambda broker_id: default_dir(image, broker_id)
