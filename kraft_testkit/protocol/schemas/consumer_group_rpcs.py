"""The KIP-848 consumer group RPCs the gateway's group coordinator serves: ConsumerGroupHeartbeat
(68) and ConsumerGroupDescribe (69), v0-1 as Apache Kafka 4.2.1 serves them.

Wire facts after Kafka 4.2.1's message schemas (clients/.../common/message/ConsumerGroup*.json at
18d5ecd939c8), checked field by field; declarations are our own.
"""

from ..schema import field, message

CONSUMER_GROUP_HEARTBEAT_REQUEST = message(
    "ConsumerGroupHeartbeatRequest", kind="request", api_key=68, versions="0-1", flexible="0+",
    fields=[
        field("GroupId", "string", "0+"),
        field("MemberId", "string", "0+"),
        field("MemberEpoch", "int32", "0+"),
        field("InstanceId", "string", "0+", nullable="0+", default=None),
        field("RackId", "string", "0+", nullable="0+", default=None),
        field("RebalanceTimeoutMs", "int32", "0+", default=-1),
        field("SubscribedTopicNames", "[]string", "0+", nullable="0+", default=None),
        field("SubscribedTopicRegex", "string", "1+", nullable="1+", default=None),
        field("ServerAssignor", "string", "0+", nullable="0+", default=None),
        field("TopicPartitions", "[]TopicPartitions", "0+", nullable="0+", default=None, fields=[
            field("TopicId", "uuid", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
    ],
)

CONSUMER_GROUP_HEARTBEAT_RESPONSE = message(
    "ConsumerGroupHeartbeatResponse", kind="response", api_key=68, versions="0-1",
    flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+", default=None),
        field("MemberId", "string", "0+", nullable="0+", default=None),
        field("MemberEpoch", "int32", "0+"),
        field("HeartbeatIntervalMs", "int32", "0+"),
        field("Assignment", "Assignment", "0+", nullable="0+", default=None, fields=[
            field("TopicPartitions", "[]TopicPartitions", "0+", fields=[
                field("TopicId", "uuid", "0+"),
                field("Partitions", "[]int32", "0+"),
            ]),
        ]),
    ],
)

CONSUMER_GROUP_DESCRIBE_REQUEST = message(
    "ConsumerGroupDescribeRequest", kind="request", api_key=69, versions="0-1", flexible="0+",
    fields=[
        field("GroupIds", "[]string", "0+"),
        field("IncludeAuthorizedOperations", "bool", "0+"),
    ],
)


def _assignment(name: str, type_name: str) -> object:
    return field(name, type_name, "0+", fields=[
        field("TopicPartitions", "[]TopicPartitions", "0+", fields=[
            field("TopicId", "uuid", "0+"),
            field("TopicName", "string", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
    ])


CONSUMER_GROUP_DESCRIBE_RESPONSE = message(
    "ConsumerGroupDescribeResponse", kind="response", api_key=69, versions="0-1",
    flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Groups", "[]DescribedGroup", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+", default=None),
            field("GroupId", "string", "0+"),
            field("GroupState", "string", "0+"),
            field("GroupEpoch", "int32", "0+"),
            field("AssignmentEpoch", "int32", "0+"),
            field("AssignorName", "string", "0+"),
            field("Members", "[]Member", "0+", fields=[
                field("MemberId", "string", "0+"),
                field("InstanceId", "string", "0+", nullable="0+", default=None),
                field("RackId", "string", "0+", nullable="0+", default=None),
                field("MemberEpoch", "int32", "0+"),
                field("ClientId", "string", "0+"),
                field("ClientHost", "string", "0+"),
                field("SubscribedTopicNames", "[]string", "0+"),
                field("SubscribedTopicRegex", "string", "0+", nullable="0+", default=None),
                _assignment("Assignment", "Assignment"),
                _assignment("TargetAssignment", "TargetAssignment"),
                field("MemberType", "int8", "1+", default=-1, ignorable=True),
            ]),
            field("AuthorizedOperations", "int32", "0+", default=-2147483648),
        ]),
    ],
)
