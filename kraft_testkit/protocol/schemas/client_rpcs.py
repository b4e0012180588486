"""Client data-plane RPCs the loopback gateway serves: Produce, ListOffsets, OffsetForLeaderEpoch,
DeleteRecords.

Wire facts after Apache Kafka 4.x's message schemas (the versions a 4.0 broker accepts: the
pre-KIP-896 versions Kafka 4.0 dropped are not declared); declarations are our own.
"""

from ..schema import field, message

# --- Produce (0) ---------------------------------------------------------------------------
# v3 is Kafka 4.0's baseline (message format v2 only); v9 flexible; v10 adds the tagged
# CurrentLeader / NodeEndpoints of KIP-951; v11 and v12 change semantics only. v13 (topic ids)
# is left out.

PRODUCE_REQUEST = message(
    "ProduceRequest", kind="request", api_key=0, versions="3-12", flexible="9+",
    fields=[
        field("TransactionalId", "string", "3+", nullable="0+", default=None),
        field("Acks", "int16", "0+"),
        field("TimeoutMs", "int32", "0+"),
        field("TopicData", "[]TopicProduceData", "0+", fields=[
            field("Name", "string", "0+"),
            field("PartitionData", "[]PartitionProduceData", "0+", fields=[
                field("Index", "int32", "0+"),
                field("Records", "records", "0+", nullable="0+"),
            ]),
        ]),
    ],
)

PRODUCE_RESPONSE = message(
    "ProduceResponse", kind="response", api_key=0, versions="3-12", flexible="9+",
    fields=[
        field("Responses", "[]TopicProduceResponse", "0+", fields=[
            field("Name", "string", "0+"),
            field("PartitionResponses", "[]PartitionProduceResponse", "0+", fields=[
                field("Index", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("BaseOffset", "int64", "0+"),
                field("LogAppendTimeMs", "int64", "2+", default=-1, ignorable=True),
                field("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
                field("RecordErrors", "[]BatchIndexAndErrorMessage", "8+", ignorable=True,
                      fields=[
                          field("BatchIndex", "int32", "8+"),
                          field("BatchIndexErrorMessage", "string", "8+", nullable="8+",
                                default=None),
                      ]),
                field("ErrorMessage", "string", "8+", nullable="8+", default=None,
                      ignorable=True),
                field("CurrentLeader", "LeaderIdAndEpoch", "10+", tag=0, tagged="10+",
                      ignorable=True, fields=[
                          field("LeaderId", "int32", "10+", default=-1),
                          field("LeaderEpoch", "int32", "10+", default=-1),
                      ]),
            ]),
        ]),
        field("ThrottleTimeMs", "int32", "1+", default=0, ignorable=True),
        field("NodeEndpoints", "[]NodeEndpoint", "10+", tag=0, tagged="10+", ignorable=True,
              fields=[
                  field("NodeId", "int32", "10+"),
                  field("Host", "string", "10+"),
                  field("Port", "int32", "10+"),
                  field("Rack", "string", "10+", nullable="10+", default=None),
              ]),
    ],
)

# --- ListOffsets (2) -----------------------------------------------------------------------
# v1 is Kafka 4.0's baseline; v6 flexible; v7 max timestamp (KIP-734); v8 local log start
# (KIP-405); v9 last tiered offset (KIP-1005): same shapes. v10 (a TimeoutMs) is left out.

LIST_OFFSETS_REQUEST = message(
    "ListOffsetsRequest", kind="request", api_key=2, versions="1-9", flexible="6+",
    fields=[
        field("ReplicaId", "int32", "0+"),
        field("IsolationLevel", "int8", "2+"),
        field("Topics", "[]ListOffsetsTopic", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]ListOffsetsPartition", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("CurrentLeaderEpoch", "int32", "4+", default=-1, ignorable=True),
                field("Timestamp", "int64", "0+"),
            ]),
        ]),
    ],
)

LIST_OFFSETS_RESPONSE = message(
    "ListOffsetsResponse", kind="response", api_key=2, versions="1-9", flexible="6+",
    fields=[
        field("ThrottleTimeMs", "int32", "2+", ignorable=True),
        field("Topics", "[]ListOffsetsTopicResponse", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]ListOffsetsPartitionResponse", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("Timestamp", "int64", "1+", default=-1),
                field("Offset", "int64", "1+", default=-1),
                field("LeaderEpoch", "int32", "4+", default=-1),
            ]),
        ]),
    ],
)

# --- OffsetForLeaderEpoch (23) -------------------------------------------------------------
# v2 is Kafka 4.0's baseline (current leader epoch for fencing); v3 adds ReplicaId; v4 flexible.

OFFSET_FOR_LEADER_EPOCH_REQUEST = message(
    "OffsetForLeaderEpochRequest", kind="request", api_key=23, versions="2-4", flexible="4+",
    fields=[
        field("ReplicaId", "int32", "3+", default=-2, ignorable=True),
        field("Topics", "[]OffsetForLeaderTopic", "0+", fields=[
            field("Topic", "string", "0+"),
            field("Partitions", "[]OffsetForLeaderPartition", "0+", fields=[
                field("Partition", "int32", "0+"),
                field("CurrentLeaderEpoch", "int32", "2+", default=-1, ignorable=True),
                field("LeaderEpoch", "int32", "0+"),
            ]),
        ]),
    ],
)

OFFSET_FOR_LEADER_EPOCH_RESPONSE = message(
    "OffsetForLeaderEpochResponse", kind="response", api_key=23, versions="2-4", flexible="4+",
    fields=[
        field("ThrottleTimeMs", "int32", "2+", ignorable=True),
        field("Topics", "[]OffsetForLeaderTopicResult", "0+", fields=[
            field("Topic", "string", "0+"),
            field("Partitions", "[]EpochEndOffset", "0+", fields=[
                field("ErrorCode", "int16", "0+"),
                field("Partition", "int32", "0+"),
                field("LeaderEpoch", "int32", "1+", default=-1, ignorable=True),
                field("EndOffset", "int64", "0+"),
            ]),
        ]),
    ],
)

# --- DeleteRecords (21) --------------------------------------------------------------------
# v0-2 as Kafka 4.x keeps them (v1 changes throttling only); v2 flexible. Offset -1 means the
# high watermark (DeleteRecordsRequest.HIGH_WATERMARK).

DELETE_RECORDS_REQUEST = message(
    "DeleteRecordsRequest", kind="request", api_key=21, versions="0-2", flexible="2+",
    fields=[
        field("Topics", "[]DeleteRecordsTopic", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]DeleteRecordsPartition", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("Offset", "int64", "0+"),
            ]),
        ]),
        field("TimeoutMs", "int32", "0+"),
    ],
)

DELETE_RECORDS_RESPONSE = message(
    "DeleteRecordsResponse", kind="response", api_key=21, versions="0-2", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Topics", "[]DeleteRecordsTopicResult", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]DeleteRecordsPartitionResult", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("LowWatermark", "int64", "0+"),
                field("ErrorCode", "int16", "0+"),
            ]),
        ]),
    ],
)

# --- AlterConfigs (33) ---------------------------------------------------------------------
# The legacy, whole-set form (IncrementalAlterConfigs is the one the controller runs); v2
# flexible. Kafka 4.0 keeps v0-2.

ALTER_CONFIGS_REQUEST = message(
    "AlterConfigsRequest", kind="request", api_key=33, versions="0-2", flexible="2+",
    fields=[
        field("Resources", "[]AlterConfigsResource", "0+", fields=[
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
            field("Configs", "[]AlterableConfig", "0+", fields=[
                field("Name", "string", "0+"),
                field("Value", "string", "0+", nullable="0+"),
            ]),
        ]),
        field("ValidateOnly", "bool", "0+"),
    ],
)

ALTER_CONFIGS_RESPONSE = message(
    "AlterConfigsResponse", kind="response", api_key=33, versions="0-2", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Responses", "[]AlterConfigsResourceResponse", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
        ]),
    ],
)

# --- SaslHandshake (17) and SaslAuthenticate (36) ------------------------------------------
# Handshake v1 says the tokens travel in SaslAuthenticate (v0's bare tokens are not served);
# SaslAuthenticate v1 adds the session lifetime, v2 is flexible.

SASL_HANDSHAKE_REQUEST = message(
    "SaslHandshakeRequest", kind="request", api_key=17, versions="0-1", flexible="none",
    fields=[field("Mechanism", "string", "0+")],
)

SASL_HANDSHAKE_RESPONSE = message(
    "SaslHandshakeResponse", kind="response", api_key=17, versions="0-1", flexible="none",
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("Mechanisms", "[]string", "0+"),
    ],
)

SASL_AUTHENTICATE_REQUEST = message(
    "SaslAuthenticateRequest", kind="request", api_key=36, versions="0-2", flexible="2+",
    fields=[field("AuthBytes", "bytes", "0+")],
)

SASL_AUTHENTICATE_RESPONSE = message(
    "SaslAuthenticateResponse", kind="response", api_key=36, versions="0-2", flexible="2+",
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("AuthBytes", "bytes", "0+"),
        field("SessionLifetimeMs", "int64", "1+", default=0, ignorable=True),
    ],
)

# --- InitProducerId (22) -------------------------------------------------------------------
# v2 flexible; v3 lets a producer resume with its id and epoch; v4 PRODUCER_FENCED; v5 (KIP-890)
# changes semantics only. v6's two-phase-commit fields are left out.

INIT_PRODUCER_ID_REQUEST = message(
    "InitProducerIdRequest", kind="request", api_key=22, versions="0-5", flexible="2+",
    fields=[
        field("TransactionalId", "string", "0+", nullable="0+"),
        field("TransactionTimeoutMs", "int32", "0+"),
        field("ProducerId", "int64", "3+", default=-1),
        field("ProducerEpoch", "int16", "3+", default=-1),
    ],
)

INIT_PRODUCER_ID_RESPONSE = message(
    "InitProducerIdResponse", kind="response", api_key=22, versions="0-5", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ProducerId", "int64", "0+", default=-1),
        field("ProducerEpoch", "int16", "0+"),
    ],
)

# --- DescribeUserScramCredentials (50) -----------------------------------------------------

DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST = message(
    "DescribeUserScramCredentialsRequest", kind="request", api_key=50, versions="0",
    flexible="0+",
    fields=[
        field("Users", "[]UserName", "0+", nullable="0+", fields=[
            field("Name", "string", "0+"),
        ]),
    ],
)

DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE = message(
    "DescribeUserScramCredentialsResponse", kind="response", api_key=50, versions="0",
    flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("Results", "[]DescribeUserScramCredentialsResult", "0+", fields=[
            field("User", "string", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
            field("CredentialInfos", "[]CredentialInfo", "0+", fields=[
                field("Mechanism", "int8", "0+"),
                field("Iterations", "int32", "0+"),
            ]),
        ]),
    ],
)

# --- DescribeLogDirs (35) ------------------------------------------------------------------
# v1 is Kafka 4.0's baseline; v2 flexible; v3 a top-level ErrorCode; v4 total/usable bytes.

DESCRIBE_LOG_DIRS_REQUEST = message(
    "DescribeLogDirsRequest", kind="request", api_key=35, versions="1-4", flexible="2+",
    fields=[
        field("Topics", "[]DescribableLogDirTopic", "0+", nullable="0+", fields=[
            field("Topic", "string", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
    ],
)

DESCRIBE_LOG_DIRS_RESPONSE = message(
    "DescribeLogDirsResponse", kind="response", api_key=35, versions="1-4", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "3+", ignorable=True),
        field("Results", "[]DescribeLogDirsResult", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("LogDir", "string", "0+"),
            field("Topics", "[]DescribeLogDirsTopic", "0+", fields=[
                field("Name", "string", "0+"),
                field("Partitions", "[]DescribeLogDirsPartition", "0+", fields=[
                    field("PartitionIndex", "int32", "0+"),
                    field("PartitionSize", "int64", "0+"),
                    field("OffsetLag", "int64", "0+"),
                    field("IsFutureKey", "bool", "0+"),
                ]),
            ]),
            field("TotalBytes", "int64", "4+", default=-1, ignorable=True),
            field("UsableBytes", "int64", "4+", default=-1, ignorable=True),
        ]),
    ],
)
