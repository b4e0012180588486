"""Released KRaft metadata records (frame version 1), every released version.

Wire facts after Apache Kafka's metadata schemas; declarations are our own. ``api_key`` is the
record type id written after the frame version. Listed in api-key order (6, 13 and 16 were never
released; see ``draft_records`` for the seeds' use of those ids).
"""

from ..schema import field, message

# Field lists shared by the endpoint / feature structs of broker and controller registrations
# (same shape, different struct names per record).
_ENDPOINT_FIELDS = [
    field("Name", "string", "0+"),
    field("Host", "string", "0+"),
    field("Port", "uint16", "0+"),
    field("SecurityProtocol", "int16", "0+"),
]
_SUPPORTED_FEATURE_FIELDS = [
    field("Name", "string", "0+"),
    field("MinSupportedVersion", "int16", "0+"),
    field("MaxSupportedVersion", "int16", "0+"),
]

# v1 adds InControlledShutdown; v2 adds IsMigratingZkBroker; v3 adds tagged LogDirs.
REGISTER_BROKER_RECORD = message(
    "RegisterBrokerRecord", kind="metadata", api_key=0, versions="0-3", flexible="0+",
    fields=[
        field("BrokerId", "int32", "0+"),
        field("IsMigratingZkBroker", "bool", "2+", default=False),
        field("IncarnationId", "uuid", "0+"),
        field("BrokerEpoch", "int64", "0+"),
        field("EndPoints", "[]BrokerEndpoint", "0+", fields=_ENDPOINT_FIELDS),
        field("Features", "[]BrokerFeature", "0+", fields=_SUPPORTED_FEATURE_FIELDS),
        field("Rack", "string", "0+", nullable="0+"),
        field("Fenced", "bool", "0+", default=True),
        field("InControlledShutdown", "bool", "1+", default=False),
        field("LogDirs", "[]uuid", "3+", tag=0, tagged="3+"),
    ],
)

UNREGISTER_BROKER_RECORD = message(
    "UnregisterBrokerRecord", kind="metadata", api_key=1, versions="0", flexible="0+",
    fields=[
        field("BrokerId", "int32", "0+"),
        field("BrokerEpoch", "int64", "0+"),
    ],
)

TOPIC_RECORD = message(
    "TopicRecord", kind="metadata", api_key=2, versions="0", flexible="0+",
    fields=[
        field("Name", "string", "0+"),
        field("TopicId", "uuid", "0+"),
    ],
)

# v1 adds Directories (KIP-858); v2 adds the tagged ELR fields (KIP-966).
PARTITION_RECORD = message(
    "PartitionRecord", kind="metadata", api_key=3, versions="0-2", flexible="0+",
    fields=[
        field("PartitionId", "int32", "0+", default=-1),
        field("TopicId", "uuid", "0+"),
        field("Replicas", "[]int32", "0+"),
        field("Isr", "[]int32", "0+"),
        field("RemovingReplicas", "[]int32", "0+"),
        field("AddingReplicas", "[]int32", "0+"),
        field("Leader", "int32", "0+", default=-1),
        field("LeaderRecoveryState", "int8", "0+", tag=0, tagged="0+", default=0),
        field("LeaderEpoch", "int32", "0+", default=-1),
        field("PartitionEpoch", "int32", "0+", default=-1),
        field("Directories", "[]uuid", "1+"),
        field("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tag=1, tagged="2+",
              default=None),
        field("LastKnownElr", "[]int32", "2+", nullable="2+", tag=2, tagged="2+", default=None),
    ],
)

CONFIG_RECORD = message(
    "ConfigRecord", kind="metadata", api_key=4, versions="0", flexible="0+",
    fields=[
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("Name", "string", "0+"),
        field("Value", "string", "0+", nullable="0+"),
    ],
)

# Every field after TopicId is tagged; defaults mean "unchanged".
# v1 adds Directories (tag 8); v2 adds the ELR fields (tags 6 and 7).
PARTITION_CHANGE_RECORD = message(
    "PartitionChangeRecord", kind="metadata", api_key=5, versions="0-2", flexible="0+",
    fields=[
        field("PartitionId", "int32", "0+", default=-1),
        field("TopicId", "uuid", "0+"),
        field("Isr", "[]int32", "0+", nullable="0+", tag=0, tagged="0+", default=None),
        field("Leader", "int32", "0+", tag=1, tagged="0+", default=-2),
        field("Replicas", "[]int32", "0+", nullable="0+", tag=2, tagged="0+", default=None),
        field("RemovingReplicas", "[]int32", "0+", nullable="0+", tag=3, tagged="0+",
              default=None),
        field("AddingReplicas", "[]int32", "0+", nullable="0+", tag=4, tagged="0+",
              default=None),
        field("LeaderRecoveryState", "int8", "0+", tag=5, tagged="0+", default=-1),
        field("Directories", "[]uuid", "1+", nullable="1+", tag=8, tagged="1+", default=None),
        field("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tag=6, tagged="2+",
              default=None),
        field("LastKnownElr", "[]int32", "2+", nullable="2+", tag=7, tagged="2+", default=None),
    ],
)

FENCE_BROKER_RECORD = message(
    "FenceBrokerRecord", kind="metadata", api_key=7, versions="0", flexible="0+",
    fields=[
        field("Id", "int32", "0+"),
        field("Epoch", "int64", "0+"),
    ],
)

UNFENCE_BROKER_RECORD = message(
    "UnfenceBrokerRecord", kind="metadata", api_key=8, versions="0", flexible="0+",
    fields=[
        field("Id", "int32", "0+"),
        field("Epoch", "int64", "0+"),
    ],
)

REMOVE_TOPIC_RECORD = message(
    "RemoveTopicRecord", kind="metadata", api_key=9, versions="0", flexible="0+",
    fields=[
        field("TopicId", "uuid", "0+"),
    ],
)

DELEGATION_TOKEN_RECORD = message(
    "DelegationTokenRecord", kind="metadata", api_key=10, versions="0", flexible="0+",
    fields=[
        field("Owner", "string", "0+"),
        field("Requester", "string", "0+"),
        field("Renewers", "[]string", "0+"),
        field("IssueTimestamp", "int64", "0+"),
        field("MaxTimestamp", "int64", "0+"),
        field("ExpirationTimestamp", "int64", "0+"),
        field("TokenId", "string", "0+"),
    ],
)

USER_SCRAM_CREDENTIAL_RECORD = message(
    "UserScramCredentialRecord", kind="metadata", api_key=11, versions="0", flexible="0+",
    fields=[
        field("Name", "string", "0+"),
        field("Mechanism", "int8", "0+"),
        field("Salt", "bytes", "0+"),
        field("StoredKey", "bytes", "0+"),
        field("ServerKey", "bytes", "0+"),
        field("Iterations", "int32", "0+"),
    ],
)

# One finalized level per feature; level 0 means the feature was removed.
FEATURE_LEVEL_RECORD = message(
    "FeatureLevelRecord", kind="metadata", api_key=12, versions="0", flexible="0+",
    fields=[
        field("Name", "string", "0+"),
        field("FeatureLevel", "int16", "0+"),
    ],
)

CLIENT_QUOTA_RECORD = message(
    "ClientQuotaRecord", kind="metadata", api_key=14, versions="0", flexible="0+",
    fields=[
        field("Entity", "[]EntityData", "0+", fields=[
            field("EntityType", "string", "0+"),
            field("EntityName", "string", "0+", nullable="0+"),
        ]),
        field("Key", "string", "0+"),
        field("Value", "float64", "0+"),
        field("Remove", "bool", "0+"),
    ],
)

PRODUCER_IDS_RECORD = message(
    "ProducerIdsRecord", kind="metadata", api_key=15, versions="0", flexible="0+",
    fields=[
        field("BrokerId", "int32", "0+"),
        field("BrokerEpoch", "int64", "0+", default=-1),
        field("NextProducerId", "int64", "0+"),
    ],
)

# Fenced / InControlledShutdown are changes: 0 = no change (Fenced: -1 unfenced, 1 fenced).
# v1 adds InControlledShutdown; v2 adds LogDirs.
BROKER_REGISTRATION_CHANGE_RECORD = message(
    "BrokerRegistrationChangeRecord", kind="metadata", api_key=17, versions="0-2",
    flexible="0+",
    fields=[
        field("BrokerId", "int32", "0+"),
        field("BrokerEpoch", "int64", "0+"),
        field("Fenced", "int8", "0+", tag=0, tagged="0+"),
        field("InControlledShutdown", "int8", "1+", tag=1, tagged="1+"),
        field("LogDirs", "[]uuid", "2+", tag=2, tagged="2+"),
    ],
)

ACCESS_CONTROL_ENTRY_RECORD = message(
    "AccessControlEntryRecord", kind="metadata", api_key=18, versions="0", flexible="0+",
    fields=[
        field("Id", "uuid", "0+"),
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("PatternType", "int8", "0+"),
        field("Principal", "string", "0+"),
        field("Host", "string", "0+"),
        field("Operation", "int8", "0+"),
        field("PermissionType", "int8", "0+"),
    ],
)

REMOVE_ACCESS_CONTROL_ENTRY_RECORD = message(
    "RemoveAccessControlEntryRecord", kind="metadata", api_key=19, versions="0",
    flexible="0+",
    fields=[
        field("Id", "uuid", "0+"),
    ],
)

NO_OP_RECORD = message(
    "NoOpRecord", kind="metadata", api_key=20, versions="0", flexible="0+",
    fields=[],
)

# Defined in Kafka's ZkMigrationRecord.json.
ZK_MIGRATION_STATE_RECORD = message(
    "ZkMigrationStateRecord", kind="metadata", api_key=21, versions="0", flexible="0+",
    fields=[
        field("ZkMigrationState", "int8", "0+"),
    ],
)

REMOVE_USER_SCRAM_CREDENTIAL_RECORD = message(
    "RemoveUserScramCredentialRecord", kind="metadata", api_key=22, versions="0",
    flexible="0+",
    fields=[
        field("Name", "string", "0+"),
        field("Mechanism", "int8", "0+"),
    ],
)

BEGIN_TRANSACTION_RECORD = message(
    "BeginTransactionRecord", kind="metadata", api_key=23, versions="0", flexible="0+",
    fields=[
        field("Name", "string", "0+", nullable="0+", tag=0, tagged="0+", default=None),
    ],
)

END_TRANSACTION_RECORD = message(
    "EndTransactionRecord", kind="metadata", api_key=24, versions="0", flexible="0+",
    fields=[],
)

ABORT_TRANSACTION_RECORD = message(
    "AbortTransactionRecord", kind="metadata", api_key=25, versions="0", flexible="0+",
    fields=[
        field("Reason", "string", "0+", nullable="0+", tag=0, tagged="0+", default=None),
    ],
)

REMOVE_DELEGATION_TOKEN_RECORD = message(
    "RemoveDelegationTokenRecord", kind="metadata", api_key=26, versions="0", flexible="0+",
    fields=[
        field("TokenId", "string", "0+"),
    ],
)

REGISTER_CONTROLLER_RECORD = message(
    "RegisterControllerRecord", kind="metadata", api_key=27, versions="0", flexible="0+",
    fields=[
        field("ControllerId", "int32", "0+"),
        field("IncarnationId", "uuid", "0+"),
        field("ZkMigrationReady", "bool", "0+"),
        field("EndPoints", "[]ControllerEndpoint", "0+", fields=_ENDPOINT_FIELDS),
        field("Features", "[]ControllerFeature", "0+", fields=_SUPPORTED_FEATURE_FIELDS),
    ],
)

# Kafka 4.0 (KIP-966): clears the ELR and last known ELR of one topic's partitions, or of every
# topic when TopicName is empty (written when min.insync.replicas changes or ELR is disabled).
CLEAR_ELR_RECORD = message(
    "ClearElrRecord", kind="metadata", api_key=28, versions="0", flexible="0+",
    fields=[
        field("TopicName", "string", "0+"),
    ],
)
