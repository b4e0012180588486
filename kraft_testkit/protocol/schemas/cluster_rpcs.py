"""Cluster RPCs a KRaft controller or broker serves: registration, heartbeats, ISR changes,
topic/partition administration, metadata and cluster discovery, producer-id allocation.

Wire facts after Apache Kafka's message schemas (trunk as of late 2024); declarations are our own.
"""

from ..schema import field, message

# --- KRaft registration and liveness ---

CONTROLLER_REGISTRATION_REQUEST = message(
    "ControllerRegistrationRequest", kind="request", api_key=70, versions="0", flexible="0+",
    fields=[
        field("ControllerId", "int32", "0+"),
        field("IncarnationId", "uuid", "0+"),
        field("ZkMigrationReady", "bool", "0+"),
        field("Listeners", "[]Listener", "0+", fields=[
            field("Name", "string", "0+"),
            field("Host", "string", "0+"),
            field("Port", "uint16", "0+"),
            field("SecurityProtocol", "int16", "0+"),
        ]),
        field("Features", "[]Feature", "0+", fields=[
            field("Name", "string", "0+"),
            field("MinSupportedVersion", "int16", "0+"),
            field("MaxSupportedVersion", "int16", "0+"),
        ]),
    ],
)

CONTROLLER_REGISTRATION_RESPONSE = message(
    "ControllerRegistrationResponse", kind="response", api_key=70, versions="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
    ],
)

BROKER_REGISTRATION_REQUEST = message(
    "BrokerRegistrationRequest", kind="request", api_key=62, versions="0-4", flexible="0+",
    fields=[
        field("BrokerId", "int32", "0+"),
        field("ClusterId", "string", "0+"),
        field("IncarnationId", "uuid", "0+"),
        field("Listeners", "[]Listener", "0+", fields=[
            field("Name", "string", "0+"),
            field("Host", "string", "0+"),
            field("Port", "uint16", "0+"),
            field("SecurityProtocol", "int16", "0+"),
        ]),
        field("Features", "[]Feature", "0+", fields=[
            field("Name", "string", "0+"),
            field("MinSupportedVersion", "int16", "0+"),
            field("MaxSupportedVersion", "int16", "0+"),
        ]),
        field("Rack", "string", "0+", nullable="0+"),
        field("IsMigratingZkBroker", "bool", "1+", default=False),
        field("LogDirs", "[]uuid", "2+", ignorable=True),
        field("PreviousBrokerEpoch", "int64", "3+", default=-1, ignorable=True),
    ],
)

BROKER_REGISTRATION_RESPONSE = message(
    "BrokerRegistrationResponse", kind="response", api_key=62, versions="0-4", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("BrokerEpoch", "int64", "0+", default=-1),
    ],
)

BROKER_HEARTBEAT_REQUEST = message(
    "BrokerHeartbeatRequest", kind="request", api_key=63, versions="0-1", flexible="0+",
    fields=[
        field("BrokerId", "int32", "0+"),
        field("BrokerEpoch", "int64", "0+", default=-1),
        field("CurrentMetadataOffset", "int64", "0+"),
        field("WantFence", "bool", "0+"),
        field("WantShutDown", "bool", "0+"),
        field("OfflineLogDirs", "[]uuid", "1+", tag=0, tagged="1+"),
    ],
)

BROKER_HEARTBEAT_RESPONSE = message(
    "BrokerHeartbeatResponse", kind="response", api_key=63, versions="0-1", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("IsCaughtUp", "bool", "0+", default=False),
        field("IsFenced", "bool", "0+", default=True),
        field("ShouldShutDown", "bool", "0+"),
    ],
)

UNREGISTER_BROKER_REQUEST = message(
    "UnregisterBrokerRequest", kind="request", api_key=64, versions="0", flexible="0+",
    fields=[
        field("BrokerId", "int32", "0+"),
    ],
)

UNREGISTER_BROKER_RESPONSE = message(
    "UnregisterBrokerResponse", kind="response", api_key=64, versions="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
    ],
)

# --- ISR changes from partition leaders ---

ALTER_PARTITION_REQUEST = message(
    "AlterPartitionRequest", kind="request", api_key=56, versions="0-3", flexible="0+",
    fields=[
        field("BrokerId", "int32", "0+"),
        field("BrokerEpoch", "int64", "0+", default=-1),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0-1", ignorable=True),
            field("TopicId", "uuid", "2+", ignorable=True),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("LeaderEpoch", "int32", "0+"),
                # v3 replaces the plain ISR list with (broker id, broker epoch) pairs.
                field("NewIsr", "[]int32", "0-2"),
                field("NewIsrWithEpochs", "[]BrokerState", "3+", fields=[
                    field("BrokerId", "int32", "3+"),
                    field("BrokerEpoch", "int64", "3+", default=-1),
                ]),
                field("LeaderRecoveryState", "int8", "1+", default=0),
                field("PartitionEpoch", "int32", "0+"),
            ]),
        ]),
    ],
)

ALTER_PARTITION_RESPONSE = message(
    "AlterPartitionResponse", kind="response", api_key=56, versions="0-3", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0-1", ignorable=True),
            field("TopicId", "uuid", "2+", ignorable=True),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("LeaderId", "int32", "0+"),
                field("LeaderEpoch", "int32", "0+"),
                field("Isr", "[]int32", "0+"),
                field("LeaderRecoveryState", "int8", "1+", default=0, ignorable=True),
                field("PartitionEpoch", "int32", "0+"),
            ]),
        ]),
    ],
)

# --- Topic and partition administration ---

CREATE_TOPICS_REQUEST = message(
    "CreateTopicsRequest", kind="request", api_key=19, versions="0-7", flexible="5+",
    fields=[
        field("Topics", "[]CreatableTopic", "0+", fields=[
            field("Name", "string", "0+"),
            field("NumPartitions", "int32", "0+"),
            field("ReplicationFactor", "int16", "0+"),
            field("Assignments", "[]CreatableReplicaAssignment", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("BrokerIds", "[]int32", "0+"),
            ]),
            field("Configs", "[]CreatableTopicConfig", "0+", fields=[
                field("Name", "string", "0+"),
                field("Value", "string", "0+", nullable="0+"),
            ]),
        ]),
        # Kafka's schema spells these two with a lower-case first letter.
        field("timeoutMs", "int32", "0+", default=60000),
        field("validateOnly", "bool", "1+", default=False),
    ],
)

CREATE_TOPICS_RESPONSE = message(
    "CreateTopicsResponse", kind="response", api_key=19, versions="0-7", flexible="5+",
    fields=[
        field("ThrottleTimeMs", "int32", "2+", ignorable=True),
        field("Topics", "[]CreatableTopicResult", "0+", fields=[
            field("Name", "string", "0+"),
            field("TopicId", "uuid", "7+", ignorable=True),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "1+", nullable="0+", ignorable=True),
            field("TopicConfigErrorCode", "int16", "5+", tag=0, tagged="5+", ignorable=True),
            field("NumPartitions", "int32", "5+", default=-1, ignorable=True),
            field("ReplicationFactor", "int16", "5+", default=-1, ignorable=True),
            field("Configs", "[]CreatableTopicConfigs", "5+", nullable="5+", ignorable=True,
                  fields=[
                field("Name", "string", "5+"),
                field("Value", "string", "5+", nullable="5+"),
                field("ReadOnly", "bool", "5+"),
                field("ConfigSource", "int8", "5+", default=-1, ignorable=True),
                field("IsSensitive", "bool", "5+"),
            ]),
        ]),
    ],
)

DELETE_TOPICS_REQUEST = message(
    "DeleteTopicsRequest", kind="request", api_key=20, versions="0-6", flexible="4+",
    fields=[
        # v6 names topics by id (Topics); v0-5 send bare names (TopicNames).
        field("Topics", "[]DeleteTopicState", "6+", fields=[
            field("Name", "string", "6+", nullable="6+", default=None),
            field("TopicId", "uuid", "6+"),
        ]),
        field("TopicNames", "[]string", "0-5", ignorable=True),
        field("TimeoutMs", "int32", "0+"),
    ],
)

DELETE_TOPICS_RESPONSE = message(
    "DeleteTopicsResponse", kind="response", api_key=20, versions="0-6", flexible="4+",
    fields=[
        field("ThrottleTimeMs", "int32", "1+", ignorable=True),
        field("Responses", "[]DeletableTopicResult", "0+", fields=[
            field("Name", "string", "0+", nullable="6+"),
            field("TopicId", "uuid", "6+", ignorable=True),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "5+", nullable="5+", default=None, ignorable=True),
        ]),
    ],
)

CREATE_PARTITIONS_REQUEST = message(
    "CreatePartitionsRequest", kind="request", api_key=37, versions="0-3", flexible="2+",
    fields=[
        field("Topics", "[]CreatePartitionsTopic", "0+", fields=[
            field("Name", "string", "0+"),
            field("Count", "int32", "0+"),
            field("Assignments", "[]CreatePartitionsAssignment", "0+", nullable="0+", fields=[
                field("BrokerIds", "[]int32", "0+"),
            ]),
        ]),
        field("TimeoutMs", "int32", "0+"),
        field("ValidateOnly", "bool", "0+"),
    ],
)

CREATE_PARTITIONS_RESPONSE = message(
    "CreatePartitionsResponse", kind="response", api_key=37, versions="0-3", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Results", "[]CreatePartitionsTopicResult", "0+", fields=[
            field("Name", "string", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+", default=None),
        ]),
    ],
)

ALTER_PARTITION_REASSIGNMENTS_REQUEST = message(
    "AlterPartitionReassignmentsRequest", kind="request", api_key=45, versions="0", flexible="0+",
    fields=[
        field("TimeoutMs", "int32", "0+", default=60000),
        field("Topics", "[]ReassignableTopic", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]ReassignablePartition", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("Replicas", "[]int32", "0+", nullable="0+", default=None),
            ]),
        ]),
    ],
)

ALTER_PARTITION_REASSIGNMENTS_RESPONSE = message(
    "AlterPartitionReassignmentsResponse", kind="response", api_key=45, versions="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("Responses", "[]ReassignableTopicResponse", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]ReassignablePartitionResponse", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("ErrorMessage", "string", "0+", nullable="0+"),
            ]),
        ]),
    ],
)

LIST_PARTITION_REASSIGNMENTS_REQUEST = message(
    "ListPartitionReassignmentsRequest", kind="request", api_key=46, versions="0", flexible="0+",
    fields=[
        field("TimeoutMs", "int32", "0+", default=60000),
        field("Topics", "[]ListPartitionReassignmentsTopics", "0+", nullable="0+", default=None,
              fields=[
            field("Name", "string", "0+"),
            field("PartitionIndexes", "[]int32", "0+"),
        ]),
    ],
)

LIST_PARTITION_REASSIGNMENTS_RESPONSE = message(
    "ListPartitionReassignmentsResponse", kind="response", api_key=46, versions="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("Topics", "[]OngoingTopicReassignment", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]OngoingPartitionReassignment", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("Replicas", "[]int32", "0+"),
                field("AddingReplicas", "[]int32", "0+"),
                field("RemovingReplicas", "[]int32", "0+"),
            ]),
        ]),
    ],
)

ELECT_LEADERS_REQUEST = message(
    "ElectLeadersRequest", kind="request", api_key=43, versions="0-2", flexible="2+",
    fields=[
        field("ElectionType", "int8", "1+"),
        field("TopicPartitions", "[]TopicPartitions", "0+", nullable="0+", fields=[
            field("Topic", "string", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
        field("TimeoutMs", "int32", "0+", default=60000),
    ],
)

ELECT_LEADERS_RESPONSE = message(
    "ElectLeadersResponse", kind="response", api_key=43, versions="0-2", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "1+"),
        field("ReplicaElectionResults", "[]ReplicaElectionResult", "0+", fields=[
            field("Topic", "string", "0+"),
            field("PartitionResult", "[]PartitionResult", "0+", fields=[
                field("PartitionId", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("ErrorMessage", "string", "0+", nullable="0+"),
            ]),
        ]),
    ],
)

# --- Cluster discovery ---

METADATA_REQUEST = message(
    "MetadataRequest", kind="request", api_key=3, versions="0-12", flexible="9+",
    fields=[
        field("Topics", "[]MetadataRequestTopic", "0+", nullable="1+", fields=[
            field("TopicId", "uuid", "10+", ignorable=True),
            field("Name", "string", "0+", nullable="10+"),
        ]),
        field("AllowAutoTopicCreation", "bool", "4+", default=True),
        field("IncludeClusterAuthorizedOperations", "bool", "8-10"),
        field("IncludeTopicAuthorizedOperations", "bool", "8+"),
    ],
)

METADATA_RESPONSE = message(
    "MetadataResponse", kind="response", api_key=3, versions="0-12", flexible="9+",
    fields=[
        field("ThrottleTimeMs", "int32", "3+", ignorable=True),
        field("Brokers", "[]MetadataResponseBroker", "0+", fields=[
            field("NodeId", "int32", "0+"),
            field("Host", "string", "0+"),
            field("Port", "int32", "0+"),
            field("Rack", "string", "1+", nullable="1+", default=None, ignorable=True),
        ]),
        field("ClusterId", "string", "2+", nullable="2+", default=None, ignorable=True),
        field("ControllerId", "int32", "1+", default=-1, ignorable=True),
        field("Topics", "[]MetadataResponseTopic", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("Name", "string", "0+", nullable="12+"),
            field("TopicId", "uuid", "10+", ignorable=True),
            field("IsInternal", "bool", "1+", default=False, ignorable=True),
            field("Partitions", "[]MetadataResponsePartition", "0+", fields=[
                field("ErrorCode", "int16", "0+"),
                field("PartitionIndex", "int32", "0+"),
                field("LeaderId", "int32", "0+"),
                field("LeaderEpoch", "int32", "7+", default=-1, ignorable=True),
                field("ReplicaNodes", "[]int32", "0+"),
                field("IsrNodes", "[]int32", "0+"),
                field("OfflineReplicas", "[]int32", "5+", ignorable=True),
            ]),
            field("TopicAuthorizedOperations", "int32", "8+", default=-2147483648),
        ]),
        field("ClusterAuthorizedOperations", "int32", "8-10", default=-2147483648),
    ],
)

DESCRIBE_CLUSTER_REQUEST = message(
    "DescribeClusterRequest", kind="request", api_key=60, versions="0-1", flexible="0+",
    fields=[
        field("IncludeClusterAuthorizedOperations", "bool", "0+"),
        field("EndpointType", "int8", "1+", default=1),
    ],
)

DESCRIBE_CLUSTER_RESPONSE = message(
    "DescribeClusterResponse", kind="response", api_key=60, versions="0-1", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+", default=None),
        field("EndpointType", "int8", "1+", default=1),
        field("ClusterId", "string", "0+"),
        field("ControllerId", "int32", "0+", default=-1),
        field("Brokers", "[]DescribeClusterBroker", "0+", fields=[
            field("BrokerId", "int32", "0+"),
            field("Host", "string", "0+"),
            field("Port", "int32", "0+"),
            field("Rack", "string", "0+", nullable="0+", default=None),
        ]),
        field("ClusterAuthorizedOperations", "int32", "0+", default=-2147483648),
    ],
)

# --- Producer id blocks ---

ALLOCATE_PRODUCER_IDS_REQUEST = message(
    "AllocateProducerIdsRequest", kind="request", api_key=67, versions="0", flexible="0+",
    fields=[
        field("BrokerId", "int32", "0+"),
        field("BrokerEpoch", "int64", "0+", default=-1),
    ],
)

ALLOCATE_PRODUCER_IDS_RESPONSE = message(
    "AllocateProducerIdsResponse", kind="response", api_key=67, versions="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ProducerIdStart", "int64", "0+"),
        field("ProducerIdLen", "int32", "0+"),
    ],
)
