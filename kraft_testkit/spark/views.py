"""Typed views of a ``kraft-metadata`` DataFrame, so a job joins on columns instead of parsing
JSON. Each view keeps ``offset`` and ``timestamp`` and turns one record type's JSON (Kafka's field
names, as dump-log prints them) into columns. They work on batch and streaming frames alike
(no joins inside); join ``partitions``/``partition_changes`` to ``topics`` on ``topic_id``.

A field a record leaves out (a PartitionChangeRecord says only what changed) is null.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_ENDPOINT = "array<struct<name: string, host: string, port: int, securityProtocol: short>>"
_BROKER = (f"brokerId int, brokerEpoch long, incarnationId string, rack string, fenced boolean, "
           f"inControlledShutdown boolean, endPoints {_ENDPOINT}, logDirs array<string>")
_TOPIC = "name string, topicId string"
_PARTITION = ("partitionId int, topicId string, replicas array<int>, isr array<int>, "
              "removingReplicas array<int>, addingReplicas array<int>, leader int, "
              "leaderEpoch int, partitionEpoch int, leaderRecoveryState byte")
_CHANGE = ("partitionId int, topicId string, leader int, isr array<int>, replicas array<int>, "
           "removingReplicas array<int>, addingReplicas array<int>, leaderRecoveryState byte")
_REGISTRATION_CHANGE = "brokerId int, brokerEpoch long, fenced byte, inControlledShutdown byte"


def _records(df: "DataFrame", record_type: str, fields: str) -> "DataFrame":
    from pyspark.sql import functions as F

    data = F.from_json(F.col("value_json"), f"data struct<{_struct(fields)}>").getField("data")
    return (df.where(F.col("record_type") == record_type)
              .select("offset", "timestamp", data.alias("d")))


def _struct(fields: str) -> str:
    """``"a int, b string"`` -> ``"a: int, b: string"`` (struct<> syntax)."""
    out = []
    depth = 0
    for part in fields.split(", "):
        if depth == 0 and " " in part:
            name, rest = part.split(" ", 1)
            out.append(f"{name}: {rest}")
        else:
            out.append(part)
        depth += part.count("<") - part.count(">")
    return ", ".join(out)


def brokers(df: "DataFrame") -> "DataFrame":
    """One row per RegisterBrokerRecord: ``broker_id, broker_epoch, incarnation_id, rack,
    fenced, in_controlled_shutdown, endpoints, log_dirs``."""
    r = _records(df, "REGISTER_BROKER_RECORD", _BROKER)
    return r.select("offset", "timestamp", r.d.brokerId.alias("broker_id"),
                    r.d.brokerEpoch.alias("broker_epoch"),
                    r.d.incarnationId.alias("incarnation_id"), r.d.rack.alias("rack"),
                    r.d.fenced.alias("fenced"),
                    r.d.inControlledShutdown.alias("in_controlled_shutdown"),
                    r.d.endPoints.alias("endpoints"), r.d.logDirs.alias("log_dirs"))


def broker_changes(df: "DataFrame") -> "DataFrame":
    """One row per BrokerRegistrationChangeRecord: ``broker_id, broker_epoch, fenced,
    in_controlled_shutdown`` (Kafka's tri-state bytes: 1 yes, -1 no, 0 unchanged)."""
    r = _records(df, "BROKER_REGISTRATION_CHANGE_RECORD", _REGISTRATION_CHANGE)
    return r.select("offset", "timestamp", r.d.brokerId.alias("broker_id"),
                    r.d.brokerEpoch.alias("broker_epoch"), r.d.fenced.alias("fenced"),
                    r.d.inControlledShutdown.alias("in_controlled_shutdown"))


def topics(df: "DataFrame") -> "DataFrame":
    """One row per TopicRecord: ``topic, topic_id``."""
    r = _records(df, "TOPIC_RECORD", _TOPIC)
    return r.select("offset", "timestamp", r.d["name"].alias("topic"),
                    r.d.topicId.alias("topic_id"))


def partitions(df: "DataFrame") -> "DataFrame":
    """One row per PartitionRecord: ``topic_id, partition, replicas, isr, leader,
    leader_epoch, partition_epoch, adding_replicas, removing_replicas``."""
    r = _records(df, "PARTITION_RECORD", _PARTITION)
    return r.select("offset", "timestamp", r.d.topicId.alias("topic_id"),
                    r.d.partitionId.alias("partition"), r.d.replicas.alias("replicas"),
                    r.d.isr.alias("isr"), r.d.leader.alias("leader"),
                    r.d.leaderEpoch.alias("leader_epoch"),
                    r.d.partitionEpoch.alias("partition_epoch"),
                    r.d.addingReplicas.alias("adding_replicas"),
                    r.d.removingReplicas.alias("removing_replicas"))


def partition_changes(df: "DataFrame") -> "DataFrame":
    """One row per PartitionChangeRecord: ``topic_id, partition, leader, isr, replicas,
    adding_replicas, removing_replicas, leader_recovery_state``; null where the record leaves
    the field unchanged (leader -1 means no leader)."""
    r = _records(df, "PARTITION_CHANGE_RECORD", _CHANGE)
    return r.select("offset", "timestamp", r.d.topicId.alias("topic_id"),
                    r.d.partitionId.alias("partition"), r.d.leader.alias("leader"),
                    r.d.isr.alias("isr"), r.d.replicas.alias("replicas"),
                    r.d.addingReplicas.alias("adding_replicas"),
                    r.d.removingReplicas.alias("removing_replicas"),
                    r.d.leaderRecoveryState.alias("leader_recovery_state"))
