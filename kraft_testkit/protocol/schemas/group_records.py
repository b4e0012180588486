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
