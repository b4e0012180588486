"""The classic consumer group RPCs the gateway's group coordinator serves (Kafka 4.2's
versions; OffsetCommit v10 and OffsetFetch v10, which name topics by id, are left out as
Produce v13 is).

Wire facts after Apache Kafka 4.2.1's message schemas (clients/.../common/message/*.json),
checked field by field; declarations are our own.
"""

from ..schema import field, message

FIND_COORDINATOR_REQUEST = message(
    "FindCoordinatorRequest", kind="request", api_key=10, versions="0-6", flexible="3+",
    fields=[
        field("Key", "string", "0-3"),
        field("KeyType", "int8", "1+", default=0),
        field("CoordinatorKeys", "[]string", "4+"),
    ],
)

FIND_COORDINATOR_RESPONSE = message(
    "FindCoordinatorResponse", kind="response", api_key=10, versions="0-6", flexible="3+",
    fields=[
        field("ThrottleTimeMs", "int32", "1+", ignorable=True),
        field("ErrorCode", "int16", "0-3"),
        field("ErrorMessage", "string", "1-3", nullable="1-3", default=None, ignorable=True),
        field("NodeId", "int32", "0-3"),
        field("Host", "string", "0-3"),
        field("Port", "int32", "0-3"),
        field("Coordinators", "[]Coordinator", "4+", fields=[
            field("Key", "string", "4+"),
            field("NodeId", "int32", "4+"),
            field("Host", "string", "4+"),
            field("Port", "int32", "4+"),
            field("ErrorCode", "int16", "4+"),
            field("ErrorMessage", "string", "4+", nullable="4+", default=None, ignorable=True),
        ]),
    ],
)

JOIN_GROUP_REQUEST = message(
    "JoinGroupRequest", kind="request", api_key=11, versions="0-9", flexible="6+",
    fields=[
        field("GroupId", "string", "0+"),
        field("SessionTimeoutMs", "int32", "0+"),
        field("RebalanceTimeoutMs", "int32", "1+", default=-1, ignorable=True),
        field("MemberId", "string", "0+"),
        field("GroupInstanceId", "string", "5+", nullable="5+", default=None),
        field("ProtocolType", "string", "0+"),
        field("Protocols", "[]JoinGroupRequestProtocol", "0+", fields=[
            field("Name", "string", "0+"),
            field("Metadata", "bytes", "0+"),
        ]),
        field("Reason", "string", "8+", nullable="8+", default=None, ignorable=True),
    ],
)

JOIN_GROUP_RESPONSE = message(
    "JoinGroupResponse", kind="response", api_key=11, versions="0-9", flexible="6+",
    fields=[
        field("ThrottleTimeMs", "int32", "2+", ignorable=True),
        field("ErrorCode", "int16", "0+"),
        field("GenerationId", "int32", "0+", default=-1),
        field("ProtocolType", "string", "7+", nullable="7+", default=None, ignorable=True),
        field("ProtocolName", "string", "0+", nullable="7+", default=""),
        field("Leader", "string", "0+"),
        field("SkipAssignment", "bool", "9+", default=False),
        field("MemberId", "string", "0+"),
        field("Members", "[]JoinGroupResponseMember", "0+", fields=[
            field("MemberId", "string", "0+"),
            field("GroupInstanceId", "string", "5+", nullable="5+", default=None, ignorable=True),
            field("Metadata", "bytes", "0+"),
        ]),
    ],
)

SYNC_GROUP_REQUEST = message(
    "SyncGroupRequest", kind="request", api_key=14, versions="0-5", flexible="4+",
    fields=[
        field("GroupId", "string", "0+"),
        field("GenerationId", "int32", "0+"),
        field("MemberId", "string", "0+"),
        field("GroupInstanceId", "string", "3+", nullable="3+", default=None),
        field("ProtocolType", "string", "5+", nullable="5+", default=None, ignorable=True),
        field("ProtocolName", "string", "5+", nullable="5+", default=None, ignorable=True),
        field("Assignments", "[]SyncGroupRequestAssignment", "0+", fields=[
            field("MemberId", "string", "0+"),
            field("Assignment", "bytes", "0+"),
        ]),
    ],
)

SYNC_GROUP_RESPONSE = message(
    "SyncGroupResponse", kind="response", api_key=14, versions="0-5", flexible="4+",
    fields=[
        field("ThrottleTimeMs", "int32", "1+", ignorable=True),
        field("ErrorCode", "int16", "0+"),
        field("ProtocolType", "string", "5+", nullable="5+", default=None, ignorable=True),
        field("ProtocolName", "string", "5+", nullable="5+", default=None, ignorable=True),
        field("Assignment", "bytes", "0+"),
    ],
)

HEARTBEAT_REQUEST = message(
    "HeartbeatRequest", kind="request", api_key=12, versions="0-4", flexible="4+",
    fields=[
        field("GroupId", "string", "0+"),
        field("GenerationId", "int32", "0+"),
        field("MemberId", "string", "0+"),
        field("GroupInstanceId", "string", "3+", nullable="3+", default=None),
    ],
)

HEARTBEAT_RESPONSE = message(
    "HeartbeatResponse", kind="response", api_key=12, versions="0-4", flexible="4+",
    fields=[
        field("ThrottleTimeMs", "int32", "1+", ignorable=True),
        field("ErrorCode", "int16", "0+"),
    ],
)

LEAVE_GROUP_REQUEST = message(
    "LeaveGroupRequest", kind="request", api_key=13, versions="0-5", flexible="4+",
    fields=[
        field("GroupId", "string", "0+"),
        field("MemberId", "string", "0-2"),
        field("Members", "[]MemberIdentity", "3+", fields=[
            field("MemberId", "string", "3+"),
            field("GroupInstanceId", "string", "3+", nullable="3+", default=None),
            field("Reason", "string", "5+", nullable="5+", default=None, ignorable=True),
        ]),
    ],
)

LEAVE_GROUP_RESPONSE = message(
    "LeaveGroupResponse", kind="response", api_key=13, versions="0-5", flexible="4+",
    fields=[
        field("ThrottleTimeMs", "int32", "1+", ignorable=True),
        field("ErrorCode", "int16", "0+"),
        field("Members", "[]MemberResponse", "3+", fields=[
            field("MemberId", "string", "3+"),
            field("GroupInstanceId", "string", "3+", nullable="3+", default=None),
            field("ErrorCode", "int16", "3+"),
        ]),
    ],
)

OFFSET_COMMIT_REQUEST = message(
    "OffsetCommitRequest", kind="request", api_key=8, versions="2-9", flexible="8+",
    fields=[
        field("GroupId", "string", "0+"),
        field("GenerationIdOrMemberEpoch", "int32", "1+", default=-1, ignorable=True),
        field("MemberId", "string", "1+", ignorable=True),
        field("GroupInstanceId", "string", "7+", nullable="7+", default=None),
        field("RetentionTimeMs", "int64", "2-4", default=-1, ignorable=True),
        field("Topics", "[]OffsetCommitRequestTopic", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]OffsetCommitRequestPartition", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("CommittedOffset", "int64", "0+"),
                field("CommittedLeaderEpoch", "int32", "6+", default=-1, ignorable=True),
                field("CommittedMetadata", "string", "0+", nullable="0+", default=None),
            ]),
        ]),
    ],
)

OFFSET_COMMIT_RESPONSE = message(
    "OffsetCommitResponse", kind="response", api_key=8, versions="2-9", flexible="8+",
    fields=[
        field("ThrottleTimeMs", "int32", "3+", ignorable=True),
        field("Topics", "[]OffsetCommitResponseTopic", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]OffsetCommitResponsePartition", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
            ]),
        ]),
    ],
)

OFFSET_FETCH_REQUEST = message(
    "OffsetFetchRequest", kind="request", api_key=9, versions="1-9", flexible="6+",
    fields=[
        field("GroupId", "string", "0-7"),
        field("Topics", "[]OffsetFetchRequestTopic", "0-7", nullable="2-7", fields=[
            field("Name", "string", "0-7"),
            field("PartitionIndexes", "[]int32", "0-7"),
        ]),
        field("Groups", "[]OffsetFetchRequestGroup", "8+", fields=[
            field("GroupId", "string", "8+"),
            field("MemberId", "string", "9+", nullable="9+", default=None, ignorable=True),
            field("MemberEpoch", "int32", "9+", default=-1, ignorable=True),
            field("Topics", "[]OffsetFetchRequestTopics", "8+", nullable="8+", default=None,
                  fields=[
                field("Name", "string", "8+"),
                field("PartitionIndexes", "[]int32", "8+"),
            ]),
        ]),
        field("RequireStable", "bool", "7+", default=False),
    ],
)

OFFSET_FETCH_RESPONSE = message(
    "OffsetFetchResponse", kind="response", api_key=9, versions="1-9", flexible="6+",
    fields=[
        field("ThrottleTimeMs", "int32", "3+", ignorable=True),
        field("Topics", "[]OffsetFetchResponseTopic", "0-7", fields=[
            field("Name", "string", "0-7"),
            field("Partitions", "[]OffsetFetchResponsePartition", "0-7", fields=[
                field("PartitionIndex", "int32", "0-7"),
                field("CommittedOffset", "int64", "0-7"),
                field("CommittedLeaderEpoch", "int32", "5-7", default=-1, ignorable=True),
                field("Metadata", "string", "0-7", nullable="0-7", default=None),
                field("ErrorCode", "int16", "0-7"),
            ]),
        ]),
        field("ErrorCode", "int16", "2-7", default=0, ignorable=True),
        field("Groups", "[]OffsetFetchResponseGroup", "8+", fields=[
            field("GroupId", "string", "8+"),
            field("Topics", "[]OffsetFetchResponseTopics", "8+", fields=[
                field("Name", "string", "8+"),
                field("Partitions", "[]OffsetFetchResponsePartitions", "8+", fields=[
                    field("PartitionIndex", "int32", "8+"),
                    field("CommittedOffset", "int64", "8+"),
                    field("CommittedLeaderEpoch", "int32", "8+", default=-1, ignorable=True),
                    field("Metadata", "string", "8+", nullable="8+", default=None),
                    field("ErrorCode", "int16", "8+"),
                ]),
            ]),
            field("ErrorCode", "int16", "8+", default=0),
        ]),
    ],
)

LIST_GROUPS_REQUEST = message(
    "ListGroupsRequest", kind="request", api_key=16, versions="0-5", flexible="3+",
    fields=[
        field("StatesFilter", "[]string", "4+"),
        field("TypesFilter", "[]string", "5+"),
    ],
)

LIST_GROUPS_RESPONSE = message(
    "ListGroupsResponse", kind="response", api_key=16, versions="0-5", flexible="3+",
    fields=[
        field("ThrottleTimeMs", "int32", "1+", ignorable=True),
        field("ErrorCode", "int16", "0+"),
        field("Groups", "[]ListedGroup", "0+", fields=[
            field("GroupId", "string", "0+"),
            field("ProtocolType", "string", "0+"),
            field("GroupState", "string", "4+", ignorable=True),
            field("GroupType", "string", "5+", ignorable=True),
        ]),
    ],
)

DESCRIBE_GROUPS_REQUEST = message(
    "DescribeGroupsRequest", kind="request", api_key=15, versions="0-6", flexible="5+",
    fields=[
        field("Groups", "[]string", "0+"),
        field("IncludeAuthorizedOperations", "bool", "3+"),
    ],
)

DESCRIBE_GROUPS_RESPONSE = message(
    "DescribeGroupsResponse", kind="response", api_key=15, versions="0-6", flexible="5+",
    fields=[
        field("ThrottleTimeMs", "int32", "1+", ignorable=True),
        field("Groups", "[]DescribedGroup", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "6+", nullable="6+", default=None),
            field("GroupId", "string", "0+"),
            field("GroupState", "string", "0+"),
            field("ProtocolType", "string", "0+"),
            field("ProtocolData", "string", "0+"),
            field("Members", "[]DescribedGroupMember", "0+", fields=[
                field("MemberId", "string", "0+"),
                field("GroupInstanceId", "string", "4+", nullable="4+", default=None,
                      ignorable=True),
                field("ClientId", "string", "0+"),
                field("ClientHost", "string", "0+"),
                field("MemberMetadata", "bytes", "0+"),
                field("MemberAssignment", "bytes", "0+"),
            ]),
            field("AuthorizedOperations", "int32", "3+", default=-2147483648),
        ]),
    ],
)

DELETE_GROUPS_REQUEST = message(
    "DeleteGroupsRequest", kind="request", api_key=42, versions="0-2", flexible="2+",
    fields=[
        field("GroupsNames", "[]string", "0+"),
    ],
)

DELETE_GROUPS_RESPONSE = message(
    "DeleteGroupsResponse", kind="response", api_key=42, versions="0-2", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Results", "[]DeletableGroupResult", "0+", fields=[
            field("GroupId", "string", "0+"),
            field("ErrorCode", "int16", "0+"),
        ]),
    ],
)

OFFSET_DELETE_REQUEST = message(
    "OffsetDeleteRequest", kind="request", api_key=47, versions="0", flexible="none",
    fields=[
        field("GroupId", "string", "0+"),
        field("Topics", "[]OffsetDeleteRequestTopic", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]OffsetDeleteRequestPartition", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
            ]),
        ]),
    ],
)

OFFSET_DELETE_RESPONSE = message(
    "OffsetDeleteResponse", kind="response", api_key=47, versions="0", flexible="none",
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("ThrottleTimeMs", "int32", "0+", ignorable=True),
        field("Topics", "[]OffsetDeleteResponseTopic", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]OffsetDeleteResponsePartition", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
            ]),
        ]),
    ],
)

