"""The committed metadata log as a test reads it: ``cluster.records(since=...)``.

Each :class:`CommittedRecord` is one record of ``__cluster_metadata`` below the high watermark,
with its offset, the epoch of the batch that carries it, its timestamp and the decoded record
(the same decoding ``kraft-testkit dump-log`` and the Spark source use)::

    >>> mark = c.metadata.offset + 1            # or c.records()[-1].offset + 1
    >>> c.create_topic("orders", 3, 3)
    >>> [r.type for r in c.records(since=mark)]
    ['TOPIC_RECORD', 'PARTITION_RECORD', 'PARTITION_RECORD', 'PARTITION_RECORD']

Records come from the active controller's log (else the most advanced controller's). A log
trimmed after a snapshot starts later than 0: ``since`` below its start gives the records from
the start on (the earlier ones live in the snapshot, read them with ``dump-log``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .protocol.codegen import Message
from .protocol.frames import ControlRecord
from .protocol.log import iter_log


@dataclass(frozen=True)
class CommittedRecord:
    """One committed record of the metadata log.

    ``type`` is Kafka's MetadataRecordType name (``"TOPIC_RECORD"``,
    ``"REGISTER_BROKER_RECORD"``; for control records the ControlRecordType name,
    ``"LEADER_CHANGE"``, ``"KRAFT_VERSION"``...), ``value`` the decoded message (its
    fields by Kafka's names in snake case: ``r.value.name``), ``epoch`` the leader epoch of
    the batch it was appended in, ``timestamp`` the batch's timestamp in ms on the record
    clock (``DEFAULT_START_MS`` plus virtual time).
    """

    offset: int
    epoch: int
    timestamp: int
    type: str
    version: int
    value: Message | None
    control: bool = False

    @property
    def summary(self) -> str:
        """The record in a few words (``Topic 'orders' id=...``), as the demo prints it."""
        return describe_record(self.type, self.value)

    def to_json(self) -> dict[str, Any]:
        """``{"offset", "epoch", "timestamp", "type", "version", "data"}`` with ``data`` as
        Kafka's metadata decoder prints it."""
        data = self.value.to_json(self.version) if self.value is not None else None
        return {"offset": self.offset, "epoch": self.epoch, "timestamp": self.timestamp,
                "type": self.type, "version": self.version, "data": data}


def describe_record(name: str, m: Any) -> str:
    """A metadata record in a few words, as the demo's timeline prints it
    (``RegisterBroker id=0 epoch=5``, ``Topic 'orders' id=...``); other types by name."""
    if name == "REGISTER_BROKER_RECORD":
        return f"RegisterBroker id={m.broker_id} epoch={m.broker_epoch}"
    if name == "BROKER_REGISTRATION_CHANGE_RECORD":
        what = {1: "fenced", -1: "unfenced"}.get(m.fenced, "")
        if getattr(m, "in_controlled_shutdown", 0) == 1:
            what = (what + " " if what else "") + "in controlled shutdown"
        return f"BrokerRegistrationChange id={m.broker_id} {what}".rstrip()
    if name in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD"):
        return f"{name.title().replace('_', '')} id={m.id}"
    if name == "TOPIC_RECORD":
        return f"Topic {m.name!r} id={m.topic_id}"
    if name == "PARTITION_RECORD":
        return (f"Partition {m.partition_id} replicas={list(m.replicas)} leader={m.leader}")
    if name == "PARTITION_CHANGE_RECORD":
        parts = [f"Partition {m.partition_id} change"]
        if m.leader != -2:
            parts.append(f"leader={m.leader}")
        if m.isr is not None:
            parts.append(f"isr={list(m.isr)}")
        if m.replicas is not None:
            parts.append(f"replicas={list(m.replicas)}")
        if m.adding_replicas is not None:
            parts.append(f"adding={list(m.adding_replicas)}")
        if m.removing_replicas is not None:
            parts.append(f"removing={list(m.removing_replicas)}")
        return " ".join(parts)
    if name == "FEATURE_LEVEL_RECORD":
        return f"FeatureLevel {m.name}={m.feature_level}"
    if name == "REGISTER_CONTROLLER_RECORD":
        return f"RegisterController id={m.controller_id}"
    return name.title().replace("_", "")


def source_replica(cluster: Any) -> Any:
    """The replica whose committed log a reader wants: the active controller's, else the one
    with the highest high watermark; None when no controller runs."""
    active = cluster.active_controller
    if active is not None:
        return cluster.replica(active)
    best = None
    for h in cluster.controllers:
        r = cluster.replica(h)
        if r is not None and (best is None or r.hw > best.hw):
            best = r
    return best


def committed_records(cluster: Any, since: int = 0, *,
                      control: bool = False) -> list[CommittedRecord]:
    """The committed records with ``offset >= since`` (control records too when ``control``).

    :class:`ConfigError` for a ``since`` that is not an int >= 0; an empty list when no
    controller runs or nothing was committed since ``since``."""
    if isinstance(since, bool) or not isinstance(since, int) or since < 0:
        raise ConfigError(f"records(since=...) takes an offset, an int >= 0, got {since!r}")
    if type(control) is not bool:
        raise ConfigError(f"records(control=...) must be a bool, got {control!r}")
    replica = source_replica(cluster)
    if replica is None or since >= replica.hw:
        return []
    log = replica.log
    first_base = max(log.start_offset, _batch_base(log, since))
    data = log.raw_between(first_base, replica.hw)
    out = []
    for batch in iter_log(data):
        epoch = batch.batch.partition_leader_epoch
        for r in batch.records:
            if r.offset < since or r.payload is None:
                continue
            is_control = isinstance(r.payload, ControlRecord)
            if is_control and not control:
                continue
            out.append(CommittedRecord(r.offset, epoch, r.timestamp, r.payload.type_name,
                                       r.payload.version, r.payload.message, is_control))
    return out


def _batch_base(log: Any, offset: int) -> int:
    """The base offset of the batch that holds ``offset`` (or ``offset`` when none does)."""
    batch = log.batch_at(offset)
    return batch.base_offset if batch is not None else offset
