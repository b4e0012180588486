"""KIP-858 (JBOD in KRaft): AssignReplicasToDirs, a broker telling the controller which log
directory holds each of its replicas. After Kafka's AssignReplicasToDirsRequest.json and
AssignReplicasToDirsResponse.json (api key 73, version 0, flexible)."""

from __future__ import annotations

from ..schema import field, message

_PARTITION_REQUEST = [field("PartitionIndex", "int32", "0+")]
_PARTITION_RESPONSE = [field("PartitionIndex", "int32", "0+"), field("ErrorCode", "int16", "0+")]

ASSIGN_REPLICAS_TO_DIRS_REQUEST = message(
    "AssignReplicasToDirsRequest", kind="request", api_key=73, versions="0", flexible="0+",
    fields=[
        field("BrokerId", "int32", "0+"),
        field("BrokerEpoch", "int64", "0+", default=-1),
        field("Directories", "[]DirectoryData", "0+", fields=[
            field("Id", "uuid", "0+"),
            field("Topics", "[]TopicData", "0+", fields=[
                field("TopicId", "uuid", "0+"),
                field("Partitions", "[]PartitionData", "0+", fields=_PARTITION_REQUEST),
            ]),
        ]),
    ],
)

ASSIGN_REPLICAS_TO_DIRS_RESPONSE = message(
    "AssignReplicasToDirsResponse", kind="response", api_key=73, versions="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("Directories", "[]DirectoryData", "0+", fields=[
            field("Id", "uuid", "0+"),
            field("Topics", "[]TopicData", "0+", fields=[
                field("TopicId", "uuid", "0+"),
                field("Partitions", "[]PartitionData", "0+", fields=_PARTITION_RESPONSE),
            ]),
        ]),
    ],
)
