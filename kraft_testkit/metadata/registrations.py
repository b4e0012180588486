"""Broker and controller registrations, as the cluster image holds them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from ..protocol import messages as M
from ..protocol.frames import MetadataRecord
from ..protocol.uuid import Uuid
from . import versions as V
from .frozen import FrozenDict, freeze

LossHandler = Callable[[str], None]


class Endpoint(NamedTuple):
    """A listener: name, host, port and Kafka's security protocol id (0 = PLAINTEXT)."""

    name: str
    host: str
    port: int
    security_protocol: int


class VersionRange(NamedTuple):
    """A supported feature range, inclusive."""

    min: int
    max: int


def uuid_sort_key(u: bytes) -> tuple[int, int]:
    """Kafka's ``Uuid.compareTo``: the two 64-bit halves compared as signed longs."""
    return (int.from_bytes(u[:8], "big", signed=True), int.from_bytes(u[8:], "big", signed=True))


def sorted_dirs(dirs: Iterable[bytes]) -> tuple[Uuid, ...]:
    """Log directory ids in the order Kafka keeps them (registrations sort their dirs)."""
    return tuple(sorted((d if type(d) is Uuid else Uuid(d) for d in dirs), key=uuid_sort_key))


def _endpoints(structs: Iterable[Any]) -> FrozenDict[str, Endpoint]:
    return freeze((e.name, Endpoint(e.name, e.host, e.port, e.security_protocol)) for e in structs)


def _features(structs: Iterable[Any]) -> FrozenDict[str, VersionRange]:
    return freeze((f.name, VersionRange(f.min_supported_version, f.max_supported_version))
                  for f in structs)


def _endpoints_json(endpoints: FrozenDict[str, Endpoint]) -> list[dict]:
    return [{"name": e.name, "host": e.host, "port": e.port,
             "security_protocol": e.security_protocol}
            for e in sorted(endpoints.values())]


def _features_json(features: FrozenDict[str, VersionRange]) -> dict:
    return {name: [r.min, r.max] for name, r in sorted(features.items())}



def _kept(value: Any, supported: bool, on_loss: LossHandler, what: str, empty: Any) -> Any:
    """``value`` when the snapshot's metadata.version can carry it; else ``empty``, and the loss
    of ``what`` is reported (only when there was something to lose)."""
    if not value:
        return empty
    if supported:
        return value
    on_loss(what)
    return empty

@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A registered broker. ``log_dirs`` are its online directories, sorted as Kafka sorts them."""

    id: int
    epoch: int
    incarnation_id: Uuid
    endpoints: FrozenDict[str, Endpoint]
    supported_features: FrozenDict[str, VersionRange]
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    is_migrating_zk_broker: bool = False
    log_dirs: tuple[Uuid, ...] = ()

    @classmethod
    def from_record(cls, rec: Any) -> BrokerRegistration:
        """From a RegisterBrokerRecord of either dialect (the draft one lacks the later fields)."""
        return cls(
            id=rec.broker_id,
            epoch=rec.broker_epoch,
            incarnation_id=rec.incarnation_id,
            endpoints=_endpoints(rec.end_points),
            supported_features=_features(rec.features),
            rack=rec.rack,
            fenced=rec.fenced,
            in_controlled_shutdown=getattr(rec, "in_controlled_shutdown", False),
            is_migrating_zk_broker=getattr(rec, "is_migrating_zk_broker", False),
            log_dirs=sorted_dirs(getattr(rec, "log_dirs", ())),
        )

    def with_changes(self, *, fenced: bool | None = None,
                     in_controlled_shutdown: bool | None = None,
                     log_dirs: tuple[Uuid, ...] | None = None) -> BrokerRegistration:
        """This registration with the given states changed (``None`` = unchanged); ``self``
        when nothing changes, so unchanged brokers stay shared between images."""
        changes: dict[str, Any] = {}
        if fenced is not None and fenced != self.fenced:
            changes["fenced"] = fenced
        if in_controlled_shutdown is not None and \
                in_controlled_shutdown != self.in_controlled_shutdown:
            changes["in_controlled_shutdown"] = in_controlled_shutdown
        if log_dirs is not None and log_dirs != self.log_dirs:
            changes["log_dirs"] = log_dirs
        return replace(self, **changes) if changes else self

    def to_record(self, mv: int, on_loss: LossHandler) -> MetadataRecord:
        """The RegisterBrokerRecord a snapshot at ``mv`` holds for this broker."""
        in_cs = _kept(self.in_controlled_shutdown, V.is_in_controlled_shutdown_state_supported(mv),
                      on_loss, "the inControlledShutdown state of one or more brokers", False)
        migrating = _kept(self.is_migrating_zk_broker, V.is_migration_supported(mv), on_loss,
                          "the isMigratingZkBroker state of one or more brokers", False)
        log_dirs: tuple[Uuid, ...] = _kept(
            self.log_dirs, V.is_directory_assignment_supported(mv), on_loss,
            "the online log directories of one or more brokers", ())
        cls = M.RegisterBrokerRecord
        msg = cls(
            broker_id=self.id,
            is_migrating_zk_broker=migrating,
            incarnation_id=self.incarnation_id,
            broker_epoch=self.epoch,
            end_points=tuple(cls.BrokerEndpoint(name=e.name, host=e.host, port=e.port,
                                                security_protocol=e.security_protocol)
                             for e in self.endpoints.values()),
            features=tuple(cls.BrokerFeature(name=n, min_supported_version=r.min,
                                             max_supported_version=r.max)
                           for n, r in self.supported_features.items()),
            rack=self.rack,
            fenced=self.fenced,
            in_controlled_shutdown=in_cs,
            log_dirs=log_dirs,
        )
        return MetadataRecord(msg, V.register_broker_record_version(mv))

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "epoch": self.epoch,
            "incarnation_id": str(self.incarnation_id),
            "endpoints": _endpoints_json(self.endpoints),
            "supported_features": _features_json(self.supported_features),
            "rack": self.rack,
            "fenced": self.fenced,
            "in_controlled_shutdown": self.in_controlled_shutdown,
            "is_migrating_zk_broker": self.is_migrating_zk_broker,
            "log_dirs": [str(d) for d in self.log_dirs],
        }


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    """A controller registered with RegisterControllerRecord (KIP-919)."""

    id: int
    incarnation_id: Uuid
    zk_migration_ready: bool
    endpoints: FrozenDict[str, Endpoint]
    supported_features: FrozenDict[str, VersionRange]

    @classmethod
    def from_record(cls, rec: Any) -> ControllerRegistration:
        return cls(id=rec.controller_id, incarnation_id=rec.incarnation_id,
                   zk_migration_ready=rec.zk_migration_ready,
                   endpoints=_endpoints(rec.end_points),
                   supported_features=_features(rec.features))

    def to_record(self, mv: int, on_loss: LossHandler) -> MetadataRecord:
        ready = _kept(self.zk_migration_ready, V.is_migration_supported(mv), on_loss,
                      "the zk migration readiness of one or more controllers", False)
        cls = M.RegisterControllerRecord
        msg = cls(
            controller_id=self.id,
            incarnation_id=self.incarnation_id,
            zk_migration_ready=ready,
            end_points=tuple(cls.ControllerEndpoint(name=e.name, host=e.host, port=e.port,
                                                    security_protocol=e.security_protocol)
                             for e in self.endpoints.values()),
            features=tuple(cls.ControllerFeature(name=n, min_supported_version=r.min,
                                                 max_supported_version=r.max)
                           for n, r in self.supported_features.items()),
        )
        return MetadataRecord(msg, V.register_controller_record_version(mv))

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "incarnation_id": str(self.incarnation_id),
            "zk_migration_ready": self.zk_migration_ready,
            "endpoints": _endpoints_json(self.endpoints),
            "supported_features": _features_json(self.supported_features),
        }
