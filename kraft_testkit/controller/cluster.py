"""Cluster membership: broker and controller registration, broker heartbeats, leases.

Kafka spreads this over ``ClusterControlManager`` (registration), ``ReplicationControlManager``
(heartbeats, unregistration, fencing) and ``QuorumController`` (the lease timer); here it is one
module with Kafka's checks, in Kafka's order, and Kafka's error codes. Every command reads
``ctx.image`` (the active controller's latest image) and returns records plus the response; the
soft state of the leases lives in ``ctx.extra`` (see :func:`on_become_active`).

Who writes what, as in Kafka: this module writes the broker's own records (RegisterBroker,
Fence/Unfence or BrokerRegistrationChange, UnregisterBroker); the replication module's hooks
add the partition changes the transition causes. Fencing and unregistering list the partition
changes first (the broker leaves ISRs and leaderships, then its state changes); unfencing and
entering controlled shutdown write the broker's record first, then elect and move leaders.

The finalized metadata.version chooses every shape: below 3.3-IV2 Fence/UnfenceBrokerRecord,
from 3.3-IV2 BrokerRegistrationChangeRecord, from 3.3-IV3 the InControlledShutdown state;
RegisterBrokerRecord v0..v3 (see :func:`kraft_testkit.metadata.versions.
register_broker_record_version`), LogDirs from 3.7-IV2.
"""

from __future__ import annotations

import dataclasses
from collections.abc import MutableMapping
from typing import Any

from ..errors import KraftError
from ..metadata import BrokerRegistration, DirectoryId, MetadataImage, VersionRange
from ..metadata import versions as V
from ..protocol import messages as M
from ..protocol.error_codes import ErrorCode
from ..protocol.frames import MetadataRecord
from ..metadata.feature_versions import KRAFT_VERSION
from .features import finalized_features, metadata_version, registration_feature_error
from .heartbeats import BrokerControlState, BrokerHeartbeatManager
from .log_dirs import handle_directories_offline
from .result import ControllerContext, ControllerResult, record

#: where the lease soft state lives in ``ControllerContext.extra``
SOFT_STATE_KEY = "cluster.broker_heartbeats"

#: BrokerRegistrationChangeRecord.Fenced values (Kafka's BrokerRegistrationFencingChange)
FENCE, UNFENCE = 1, -1
#: BrokerRegistrationChangeRecord.InControlledShutdown: entered
IN_CONTROLLED_SHUTDOWN = 1


class ControllerNotActiveError(KraftError, RuntimeError):
    """A command that needs the lease soft state ran on a controller that is not active
    (the quorum controller must call :func:`on_become_active` when it wins an election)."""


class _Refused(Exception):
    """A request refused with a Kafka error code (becomes the response's error)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# ---------------------------------------------------------------- soft state lifecycle


def on_become_active(ctx: ControllerContext) -> BrokerHeartbeatManager:
    """This controller just became active at ``ctx.now_ms``: start fresh leases.

    Heartbeats are not in the log, so a new active controller cannot know when brokers last
    called; like Kafka (``ClusterControlManager#activate``) it gives every registered unfenced
    broker a contact time of now (a failover delays fencing by up to one session timeout, and
    never fences a healthy broker at once) and a fenced one none; the fence check runs a
    period after activation (``PeriodicTaskControlManager#activate``).
    """
    manager = BrokerHeartbeatManager(ctx.config.broker_session_timeout_ms, ctx.now_ms,
                                     ctx.image)
    ctx.extra[SOFT_STATE_KEY] = manager
    return manager


def on_resign(extra: MutableMapping[str, Any]) -> None:
    """Leadership lost: the soft state is worthless to the next active controller."""
    extra.pop(SOFT_STATE_KEY, None)


def heartbeat_manager(ctx: ControllerContext) -> BrokerHeartbeatManager:
    return _manager_in(ctx.extra)


def heartbeat_manager_in(extra: MutableMapping[str, Any]) -> BrokerHeartbeatManager:
    """The lease soft state in a controller's ``soft`` dict (ControllerNotActiveError if none)."""
    return _manager_in(extra)


def _manager_in(extra: MutableMapping[str, Any]) -> BrokerHeartbeatManager:
    manager = extra.get(SOFT_STATE_KEY)
    if manager is None:
        raise ControllerNotActiveError(
            "broker leases need an active controller: call cluster.on_become_active(ctx) "
            "when this controller becomes active")
    return manager


# ---------------------------------------------------------------- record shapes


def fence_broker_record(image: MetadataImage, broker: BrokerRegistration) -> MetadataRecord:
    """Fence ``broker``: FenceBrokerRecord below 3.3-IV2, BrokerRegistrationChangeRecord after."""
    if V.is_broker_registration_change_record_supported(metadata_version(image)):
        return record(M.BrokerRegistrationChangeRecord(
            broker_id=broker.id, broker_epoch=broker.epoch, fenced=FENCE), 0)
    return record(M.FenceBrokerRecord(id=broker.id, epoch=broker.epoch), 0)


def unfence_broker_record(image: MetadataImage, broker: BrokerRegistration) -> MetadataRecord:
    if V.is_broker_registration_change_record_supported(metadata_version(image)):
        return record(M.BrokerRegistrationChangeRecord(
            broker_id=broker.id, broker_epoch=broker.epoch, fenced=UNFENCE), 0)
    return record(M.UnfenceBrokerRecord(id=broker.id, epoch=broker.epoch), 0)


def in_controlled_shutdown_record(image: MetadataImage,
                                  broker: BrokerRegistration) -> MetadataRecord | None:
    """Mark ``broker`` in controlled shutdown, where the metadata.version can say so (3.3-IV3)
    and it is not marked yet; None otherwise (the shutdown then lives in soft state only)."""
    if broker.in_controlled_shutdown or \
            not V.is_in_controlled_shutdown_state_supported(metadata_version(image)):
        return None
    return record(M.BrokerRegistrationChangeRecord(
        broker_id=broker.id, broker_epoch=broker.epoch,
        in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN), 1)


def unregister_broker_record(broker: BrokerRegistration) -> MetadataRecord:
    return record(M.UnregisterBrokerRecord(broker_id=broker.id, broker_epoch=broker.epoch), 0)


# ---------------------------------------------------------------- transitions (with the hooks)


def _replication() -> Any:
    # Imported late: replication imports the cluster helpers of this package too.
    from . import replication
    return replication


def _after(ctx: ControllerContext, records: list[MetadataRecord]) -> ControllerContext:
    """The context for whatever comes after ``records`` in the same result: same image (the
    records are not replayed yet, as in Kafka), next offset moved past them."""
    return dataclasses.replace(ctx, next_offset=ctx.next_offset + len(records))


def fence_broker(ctx: ControllerContext, broker: BrokerRegistration) -> list[MetadataRecord]:
    """Records that fence ``broker``: it leaves every ISR and leadership, then is fenced."""
    records = list(_replication().handle_broker_fenced(ctx, broker.id))
    records.append(fence_broker_record(ctx.image, broker))
    return records


def unfence_broker(ctx: ControllerContext, broker: BrokerRegistration) -> list[MetadataRecord]:
    """Records that unfence ``broker``: unfenced first, then leaderless partitions elect it."""
    records = [unfence_broker_record(ctx.image, broker)]
    records.extend(_replication().handle_broker_unfenced(_after(ctx, records), broker.id))
    return records


def enter_controlled_shutdown(ctx: ControllerContext,
                              broker: BrokerRegistration) -> list[MetadataRecord]:
    """Records that start ``broker``'s controlled shutdown: marked (where the metadata.version
    allows), then its leaderships move away and it leaves the ISRs."""
    records: list[MetadataRecord] = []
    marker = in_controlled_shutdown_record(ctx.image, broker)
    if marker is not None:
        records.append(marker)
    records.extend(_replication().handle_broker_in_controlled_shutdown(_after(ctx, records),
                                                                       broker.id))
    return records


def unregister(ctx: ControllerContext, broker: BrokerRegistration) -> list[MetadataRecord]:
    """Records that remove ``broker``: out of every ISR and leadership, then unregistered."""
    records = list(_replication().handle_broker_unregistered(ctx, broker.id))
    records.append(unregister_broker_record(broker))
    return records


def _leads_partitions(image: MetadataImage, broker_id: int) -> bool:
    return bool(_replication().partitions_led_by(image, broker_id))


# ---------------------------------------------------------------- BrokerRegistration


def _check_log_dirs(image: MetadataImage, request: M.BrokerRegistrationRequest) -> None:
    """JBOD directories (metadata.version 3.7-IV2 on): some, none reserved, no duplicates, none
    registered by another broker."""
    dirs = list(request.log_dirs)
    if not dirs:
        raise _Refused(ErrorCode.INVALID_REGISTRATION, "No directories specified in request")
    if any(DirectoryId.is_reserved(d) for d in dirs):
        raise _Refused(ErrorCode.INVALID_REGISTRATION, "Reserved directory ID in request")
    if len(set(dirs)) != len(dirs):
        raise _Refused(ErrorCode.INVALID_REGISTRATION, "Duplicate directory ID in request")
    owners = {d: b.id for b in image.cluster.brokers.values() for d in b.log_dirs}
    for d in dirs:
        owner = owners.get(d)
        if owner is not None and owner != request.broker_id:
            raise _Refused(ErrorCode.INVALID_REGISTRATION,
                           f"Broker {owner} is already registered with directory {d}")


def _registration_record(ctx: ControllerContext, manager: BrokerHeartbeatManager,
                         request: M.BrokerRegistrationRequest, kraft_version: int
                         ) -> MetadataRecord:
    image = ctx.image
    if request.cluster_id != ctx.cluster_id:
        raise _Refused(ErrorCode.INCONSISTENT_CLUSTER_ID,
                       f"Expected cluster ID {ctx.cluster_id}, but got cluster ID "
                       f"{request.cluster_id}")
    existing = image.cluster.broker(request.broker_id)
    same_incarnation = existing is not None and existing.incarnation_id == request.incarnation_id
    if existing is not None and not same_incarnation:
        # Kafka 4.2.1's ClusterControlManager#registerBroker: while the registered incarnation
        # has a valid session (BrokerHeartbeatTracker: its (id, epoch)'s last contact, fenced
        # or not) another is refused, with no exception: a cleanly stopped broker's
        # PreviousBrokerEpoch only decides clean vs unclean for ELR (register_broker), so its
        # next process waits out the old session (9-10 s after its last heartbeat) too.
        if manager.has_valid_session(existing, ctx.now_ms):
            raise _Refused(ErrorCode.DUPLICATE_BROKER_REGISTRATION,
                           "Another broker is registered with that broker id. If the broker was "
                           "recently restarted this should self-resolve once the heartbeat "
                           "manager expires the broker's session.")
        manager.remove(request.broker_id)  # the old incarnation's session is over
    if request.is_migrating_zk_broker:
        raise _Refused(ErrorCode.BROKER_ID_NOT_REGISTERED,
                       "Controller does not support registering ZK brokers.")
    mv = metadata_version(image)
    if V.is_directory_assignment_supported(mv):
        _check_log_dirs(image, request)
    announced = [(f.name, VersionRange(f.min_supported_version, f.max_supported_version))
                 for f in request.features]
    # QuorumController#registerBroker: the finalized features plus the Raft log's kraft.version
    finalized = finalized_features(image)
    finalized[KRAFT_VERSION] = kraft_version
    why = registration_feature_error(finalized, announced)
    if why:
        raise _Refused(*why)

    cls = M.RegisterBrokerRecord
    features = [cls.BrokerFeature(name=n, min_supported_version=r.min, max_supported_version=r.max)
                for n, r in announced]
    if same_incarnation:
        # A retry of the same process: its epoch and its states are kept (Kafka "amends").
        epoch, fenced, shutting = existing.epoch, existing.fenced, existing.in_controlled_shutdown
    else:
        epoch, fenced, shutting = ctx.next_offset, True, False
    msg = cls(
        broker_id=request.broker_id,
        is_migrating_zk_broker=False,
        incarnation_id=request.incarnation_id,
        broker_epoch=epoch,
        end_points=tuple(cls.BrokerEndpoint(name=li.name, host=li.host, port=li.port,
                                            security_protocol=li.security_protocol)
                         for li in request.listeners),
        features=tuple(features),
        rack=request.rack,
        fenced=fenced,
        in_controlled_shutdown=shutting and V.is_in_controlled_shutdown_state_supported(mv),
        log_dirs=tuple(request.log_dirs) if V.is_directory_assignment_supported(mv) else (),
    )
    return record(msg, V.register_broker_record_version(mv))


def register_broker(ctx: ControllerContext, request: M.BrokerRegistrationRequest, *,
                    kraft_version: int = 0) -> ControllerResult[M.BrokerRegistrationResponse]:
    """BrokerRegistration. A new incarnation gets the broker epoch ``ctx.next_offset`` (the
    offset of its RegisterBrokerRecord) and starts fenced; the same incarnation registering
    again keeps its epoch and states. Another incarnation is refused while the registered one
    still holds a lease (DUPLICATE_BROKER_REGISTRATION)."""
    manager = heartbeat_manager(ctx)
    try:
        rec = _registration_record(ctx, manager, request, kraft_version)
    except _Refused as refused:
        return ControllerResult((), M.BrokerRegistrationResponse(error_code=refused.code))
    existing = ctx.image.cluster.broker(request.broker_id)
    cleanup: list[MetadataRecord] = []
    if existing is not None and existing.incarnation_id != request.incarnation_id:
        # Kafka 4.x (handleBrokerShutdown): the incarnation it replaces leaves the ISRs and its
        # leaderships before the RegisterBrokerRecord (it may still lead when its lease ran out
        # but the lease task has not fenced it yet: seed 159 of the cluster sweep); with ELR on,
        # one that cannot prove a clean shutdown (PreviousBrokerEpoch is not its registered
        # epoch) leaves the ELRs too
        clean = getattr(request, "previous_broker_epoch", -1) == existing.epoch
        cleanup = _replication().handle_broker_shutdown(ctx, request.broker_id, clean=clean)
    # the broker epoch is the batch's first offset (Kafka's nextWriteOffset), the cleanup
    # records included; the broker unfences once it has caught up to its RegisterBrokerRecord
    epoch = rec.message.broker_epoch
    manager.register(request.broker_id, epoch,
                     registration_offset=ctx.next_offset + len(cleanup))
    return ControllerResult((*cleanup, rec), M.BrokerRegistrationResponse(
        error_code=ErrorCode.NONE, broker_epoch=epoch))


# ---------------------------------------------------------------- ControllerRegistration


def register_controller(ctx: ControllerContext, request: M.ControllerRegistrationRequest
                        ) -> ControllerResult[M.ControllerRegistrationResponse]:
    """ControllerRegistration (KIP-919): a RegisterControllerRecord, from 3.7-IV0 on."""
    mv = metadata_version(ctx.image)
    if not V.is_controller_registration_supported(mv):
        return ControllerResult((), M.ControllerRegistrationResponse(
            error_code=ErrorCode.UNSUPPORTED_VERSION,
            error_message="The current MetadataVersion is too old to support controller "
                          "registrations."))
    cls = M.RegisterControllerRecord
    msg = cls(
        controller_id=request.controller_id,
        incarnation_id=request.incarnation_id,
        zk_migration_ready=request.zk_migration_ready,
        end_points=tuple(cls.ControllerEndpoint(name=li.name, host=li.host, port=li.port,
                                                security_protocol=li.security_protocol)
                         for li in request.listeners),
        features=tuple(cls.ControllerFeature(name=f.name,
                                             min_supported_version=f.min_supported_version,
                                             max_supported_version=f.max_supported_version)
                       for f in request.features),
    )
    return ControllerResult((record(msg, V.register_controller_record_version(mv)),),
                            M.ControllerRegistrationResponse(error_code=ErrorCode.NONE,
                                                             error_message=None))


# ---------------------------------------------------------------- UnregisterBroker


def unregister_broker(ctx: ControllerContext, request: M.UnregisterBrokerRequest
                      ) -> ControllerResult[M.UnregisterBrokerResponse]:
    """UnregisterBroker: BROKER_ID_NOT_REGISTERED unless registered; else its partitions move
    off it and an UnregisterBrokerRecord removes it."""
    manager = heartbeat_manager(ctx)
    broker = ctx.image.cluster.broker(request.broker_id)
    if broker is None:
        return ControllerResult((), M.UnregisterBrokerResponse(
            error_code=ErrorCode.BROKER_ID_NOT_REGISTERED,
            error_message=f"Broker ID {request.broker_id} is not currently registered"))
    records = unregister(ctx, broker)
    manager.remove(broker.id)
    return ControllerResult(tuple(records), M.UnregisterBrokerResponse(
        error_code=ErrorCode.NONE, error_message=None), atomic=False)


# ---------------------------------------------------------------- BrokerHeartbeat


def _heartbeat_refused(code: ErrorCode) -> ControllerResult[M.BrokerHeartbeatResponse]:
    return ControllerResult((), M.BrokerHeartbeatResponse(error_code=code))


def process_broker_heartbeat(ctx: ControllerContext, request: M.BrokerHeartbeatRequest
                             ) -> ControllerResult[M.BrokerHeartbeatResponse]:
    """BrokerHeartbeat: renews the lease and moves the broker between fenced, unfenced,
    controlled shutdown and shut down, as Kafka's ``calculateNextBrokerState`` decides.

    A heartbeat before any registration, or with another epoch, gets STALE_BROKER_EPOCH (as
    Kafka answers both). A fenced broker is unfenced once it no longer wants fencing and has
    replayed its own registration; ShouldShutDown comes once a broker in controlled shutdown
    leads nothing and every active broker has replayed the records of its shutdown. The
    response is sent once the result's records commit.
    """
    manager = heartbeat_manager(ctx)
    # QuorumController#processBrokerHeartbeat: the contact time first, whatever the epoch
    manager.track(request.broker_id, request.broker_epoch, ctx.now_ms)
    image = ctx.image
    broker = image.cluster.broker(request.broker_id)
    if broker is None or broker.epoch != request.broker_epoch:
        return _heartbeat_refused(ErrorCode.STALE_BROKER_EPOCH)
    registration_offset = manager.session(broker).registration_offset
    current, nxt = manager.next_state(
        image, broker, want_fence=request.want_fence, want_shut_down=request.want_shut_down,
        current_metadata_offset=request.current_metadata_offset,
        has_leaderships=lambda: _leads_partitions(image, broker.id))
    records: list[MetadataRecord] = []
    if current is not nxt:
        if nxt.fenced:  # FENCED or SHUTDOWN_NOW
            records = fence_broker(ctx, broker)
        elif nxt is BrokerControlState.UNFENCED:
            records = unfence_broker(ctx, broker)
        else:
            records = enter_controlled_shutdown(ctx, broker)
    records = list(records) + handle_directories_offline(
        ctx, broker, getattr(request, "offline_log_dirs", None) or ())
    manager.record_heartbeat(broker, request.current_metadata_offset, nxt,
                             batch_end_offset=ctx.next_offset + len(records) - 1)
    response = M.BrokerHeartbeatResponse(
        error_code=ErrorCode.NONE,
        is_caught_up=request.current_metadata_offset >= registration_offset,
        is_fenced=nxt.fenced,
        should_shut_down=nxt.should_shut_down)
    return ControllerResult(tuple(records), response, atomic=False)


# ---------------------------------------------------------------- lease expiry


def maybe_fence_one_stale_broker(ctx: ControllerContext) -> ControllerResult[bool]:
    """One run of the fence check (Kafka's ``ReplicationControlManager#maybeFenceOneStaleBroker``):
    the first expired contact entry is taken out; if it is the registered incarnation's, that
    broker is fenced, *even when it already is* (a cleanly stopped broker's session expiring
    writes a second fence record, as in Kafka); an entry of an old epoch or an unknown id
    is only dropped. Response: whether an entry expired (then the next check is 10 ms later).
    One broker per run, so that each fencing is visible before the next."""
    manager = heartbeat_manager(ctx)
    key = manager.remove_expired(ctx.now_ms)
    if key is None:
        return ControllerResult((), False)
    broker_id, epoch = key
    registration = ctx.image.cluster.broker(broker_id)
    if registration is None:
        manager.remove(broker_id)
        return ControllerResult((), True)
    if registration.epoch != epoch:
        return ControllerResult((), True)
    records = fence_broker(ctx, registration)
    manager.on_fenced(broker_id)
    return ControllerResult(tuple(records), True, atomic=False)


def next_lease_expiry_ms(ctx: ControllerContext) -> int | None:
    """The first fence check that will find an expired contact entry as things stand (None
    while there is no entry)."""
    return lease_expiry_ms(ctx.extra, ctx.image)


def lease_expiry_ms(extra: MutableMapping[str, Any], image: MetadataImage) -> int | None:
    """:func:`next_lease_expiry_ms` from the soft state and image alone: the active
    controller asks after every event, and building a context for it cost more than the
    answer."""
    return _manager_in(extra).next_expiry_ms(image)
