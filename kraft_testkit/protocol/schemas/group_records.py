"""The records of ``__consumer_offsets``: the classic group coordinator's offsets and group
metadata, as Kafka 4.2 writes them (group-coordinator/.../common/message/*.json).

A record's key starts with an int16 naming its type (1 offset commit, 2 group metadata), then
the key body at version 0; the value starts with its int16 version: Kafka 4.2 writes
OffsetCommitValue v4 (v1 only with an expire timestamp) and GroupMetadataValue v3. A null value
is a tombstone. Declarations are our own.
"""

from ..schema import field, message

OFFSET_COMMIT_KEY = message(
    "OffsetCommitKey", kind="data", versions="0", flexible="none",
    fields=[
        field("Group", "string", "0"),
        field("Topic", "string", "0"),
        field("Partition", "int32", "0"),
    ],
)

OFFSET_COMMIT_VALUE = message(
    "OffsetCommitValue", kind="data", versions="0-4", flexible="4+",
    fields=[
        field("Offset", "int64", "0+"),
        field("LeaderEpoch", "int32", "3+", default=-1, ignorable=True),
        field("Metadata", "string", "0+"),
        field("CommitTimestamp", "int64", "0+"),
        field("ExpireTimestamp", "int64", "1", default=-1, ignorable=True),
        field("TopicId", "uuid", "4+", tag=0, tagged="4+", ignorable=True),
    ],
)

GROUP_METADATA_KEY = message(
    "GroupMetadataKey", kind="data", versions="0", flexible="none",
    fields=[field("Group", "string", "0")],
)

GROUP_METADATA_VALUE = message(
    "GroupMetadataValue", kind="data", versions="0-4", flexible="4+",
    fields=[
        field("ProtocolType", "string", "0+"),
        field("Generation", "int32", "0+"),
        field("Protocol", "string", "0+", nullable="0+", default=None),
        field("Leader", "string", "0+", nullable="0+", default=None),
        field("CurrentStateTimestamp", "int64", "2+", default=-1, ignorable=True),
        field("Members", "[]MemberMetadata", "0+", fields=[
            field("MemberId", "string", "0+"),
            field("GroupInstanceId", "string", "3+", nullable="3+", default=None,
                  ignorable=True),
            field("ClientId", "string", "0+"),
            field("ClientHost", "string", "0+"),
            field("RebalanceTimeout", "int32", "1+", default=-1, ignorable=True),
            field("SessionTimeout", "int32", "0+"),
            field("Subscription", "bytes", "0+"),
            field("Assignment", "bytes", "0+"),
        ]),
    ],
)


# The KIP-848 consumer group records (record types 3-8; Kafka 4.2.1's
# group-coordinator/.../common/message/ConsumerGroup*.json at 18d5ecd939c8): every key at
# version 0, not flexible; every value at version 0, flexible. ConsumerGroupPartitionMetadata
# (type 4) is only tombstoned by 4.1+ (replaced by ConsumerGroupMetadataValue's MetadataHash).


def _group_key(name: str, member: bool = False) -> object:
    fields = [field("GroupId", "string", "0")]
    if member:
        fields.append(field("MemberId", "string", "0"))
    return message(name, kind="data", versions="0", flexible="none", fields=fields)


CONSUMER_GROUP_METADATA_KEY = _group_key("ConsumerGroupMetadataKey")
CONSUMER_GROUP_METADATA_VALUE = message(
    "ConsumerGroupMetadataValue", kind="data", versions="0", flexible="0+",
    fields=[
        field("Epoch", "int32", "0+"),
        field("MetadataHash", "int64", "0+", default=0, tag=0, tagged="0+"),
    ],
)
CONSUMER_GROUP_PARTITION_METADATA_KEY = _group_key("ConsumerGroupPartitionMetadataKey")
CONSUMER_GROUP_PARTITION_METADATA_VALUE = message(
    "ConsumerGroupPartitionMetadataValue", kind="data", versions="0", flexible="0+",
    fields=[
        field("Topics", "[]TopicMetadata", "0+", fields=[
            field("TopicId", "uuid", "0+"),
            field("TopicName", "string", "0+"),
            field("NumPartitions", "int32", "0+"),
            field("PartitionMetadata", "[]PartitionMetadata", "0+", fields=[
                field("Partition", "int32", "0+"),
                field("Racks", "[]string", "0+"),
            ]),
        ]),
    ],
)
CONSUMER_GROUP_MEMBER_METADATA_KEY = _group_key("ConsumerGroupMemberMetadataKey", member=True)
CONSUMER_GROUP_MEMBER_METADATA_VALUE = message(
    "ConsumerGroupMemberMetadataValue", kind="data", versions="0", flexible="0+",
    fields=[
        field("InstanceId", "string", "0+", nullable="0+", default=None),
        field("RackId", "string", "0+", nullable="0+", default=None),
        field("ClientId", "string", "0+"),
        field("ClientHost", "string", "0+"),
        field("SubscribedTopicNames", "[]string", "0+"),
        field("SubscribedTopicRegex", "string", "0+", nullable="0+", default=None),
        field("RebalanceTimeoutMs", "int32", "0+", default=-1),
        field("ServerAssignor", "string", "0+", nullable="0+", default=None),
        field("ClassicMemberMetadata", "ClassicMemberMetadata", "0+", nullable="0+",
              default=None, tag=0, tagged="0+", fields=[
                  field("SessionTimeoutMs", "int32", "0+"),
                  field("SupportedProtocols", "[]ClassicProtocol", "0+", fields=[
                      field("Name", "string", "0+"),
                      field("Metadata", "bytes", "0+"),
                  ]),
              ]),
    ],
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _group_key(
    "ConsumerGroupTargetAssignmentMetadataKey")
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = message(
    "ConsumerGroupTargetAssignmentMetadataValue", kind="data", versions="0", flexible="0+",
    fields=[field("AssignmentEpoch", "int32", "0+")],
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _group_key(
    "ConsumerGroupTargetAssignmentMemberKey", member=True)
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = message(
    "ConsumerGroupTargetAssignmentMemberValue", kind="data", versions="0", flexible="0+",
    fields=[
        field("TopicPartitions", "[]TopicPartition", "0+", fields=[
            field("TopicId", "uuid", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
    ],
)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _group_key(
    "ConsumerGroupCurrentMemberAssignmentKey", member=True)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = message(
    "ConsumerGroupCurrentMemberAssignmentValue", kind="data", versions="0", flexible="0+",
    fields=[
        field("MemberEpoch", "int32", "0+"),
        field("PreviousMemberEpoch", "int32", "0+"),
        field("State", "int8", "0+"),
        field("AssignedPartitions", "[]TopicPartitions", "0+", fields=[
            field("TopicId", "uuid", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
        field("PartitionsPendingRevocation", "[]PendingTopicPartitions", "0+", fields=[
            field("TopicId", "uuid", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
    ],
)
