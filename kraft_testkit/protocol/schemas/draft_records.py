"""The seeds' draft dialect of the metadata records (frame version 0, type ids 0-16).

KIP-631's record formats as amended by KIP-746 (the later KIP wins). Every message carries
``dialect="draft"``. Where the two texts leave a wire fact open we take the reading closest to
released Kafka; each such choice is marked ``CHOICE`` below.

CHOICE (flexibility): KIP-631 gives no ``flexibleVersions`` for any record. KIP-746 makes the
non-flexible ones flexible in a new version and shows PartitionChangeRecord (also without it in
KIP-631) as ``0+`` already. The records KIP-746 leaves alone (UnregisterBrokerRecord,
AccessControlRecord, FailedReplicasRecord) are therefore taken as flexible from ``0+``, as
released Kafka's records are.

CHOICE (names): where KIP-746's listing names a field differently from KIP-631, KIP-746's name is
used (TopicRecord.Name, Fence/UnfenceBrokerRecord.Id/Epoch, UserScramCredentialRecord.Name,
BrokerFeature.Min/MaxSupportedVersion); these are also the released names, and KIP-631's own
dump-tool example already prints ``name`` and ``id``/``epoch``.
"""

from ..schema import field, message

# v1: flexible, adds Fenced.
# CHOICE: EndPoints and Features are not nullable (KIP-746's listing; KIP-631 had them nullable).
DRAFT_REGISTER_BROKER_RECORD = message(
    "RegisterBrokerRecord", kind="metadata", api_key=0, versions="0-1", flexible="1+",
    dialect="draft",
    fields=[
        field("BrokerId", "int32", "0+"),
        field("IncarnationId", "uuid", "0+"),
        field("BrokerEpoch", "int64", "0+"),
        field("EndPoints", "[]BrokerEndpoint", "0+", fields=[
            field("Name", "string", "0+"),
            field("Host", "string", "0+"),
            field("Port", "uint16", "0+"),
            field("SecurityProtocol", "int16", "0+"),
        ]),
        field("Features", "[]BrokerFeature", "0+", fields=[
            field("Name", "string", "0+"),
            field("MinSupportedVersion", "int16", "0+"),
            field("MaxSupportedVersion", "int16", "0+"),
        ]),
        field("Rack", "string", "0+", nullable="0+"),
        field("Fenced", "bool", "1+", default=True),
    ],
)

# CHOICE: flexible 0+ (not amended by KIP-746).
DRAFT_UNREGISTER_BROKER_RECORD = message(
    "UnregisterBrokerRecord", kind="metadata", api_key=1, versions="0", flexible="0+",
    dialect="draft",
    fields=[
        field("BrokerId", "int32", "0+"),
        field("BrokerEpoch", "int64", "0+"),
    ],
)

# v1: flexible.
DRAFT_TOPIC_RECORD = message(
    "TopicRecord", kind="metadata", api_key=2, versions="0-1", flexible="1+", dialect="draft",
    fields=[
        field("Name", "string", "0+"),
        field("TopicId", "uuid", "0+"),
    ],
)

# v1: flexible.
# CHOICE: PartitionEpoch is present from v0 and Removing/AddingReplicas are nullable from v0, as
# in KIP-746's listing and in KIP-631's own dump-tool example (KIP-631's listing has neither;
# released Kafka has PartitionEpoch but no nullable replica lists).
DRAFT_PARTITION_RECORD = message(
    "PartitionRecord", kind="metadata", api_key=3, versions="0-1", flexible="1+",
    dialect="draft",
    fields=[
        field("PartitionId", "int32", "0+", default=-1),
        field("TopicId", "uuid", "0+"),
        field("Replicas", "[]int32", "0+"),
        field("Isr", "[]int32", "0+"),
        field("RemovingReplicas", "[]int32", "0+", nullable="0+"),
        field("AddingReplicas", "[]int32", "0+", nullable="0+"),
        field("Leader", "int32", "0+", default=-1),
        field("LeaderEpoch", "int32", "0+", default=-1),
        field("PartitionEpoch", "int32", "0+", default=-1),
    ],
)

# v1: flexible, Value nullable (null removes the config).
DRAFT_CONFIG_RECORD = message(
    "ConfigRecord", kind="metadata", api_key=4, versions="0-1", flexible="1+", dialect="draft",
    fields=[
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("Name", "string", "0+"),
        field("Value", "string", "0+", nullable="1+"),
    ],
)

# Every field after TopicId is tagged; defaults mean "unchanged".
DRAFT_PARTITION_CHANGE_RECORD = message(
    "PartitionChangeRecord", kind="metadata", api_key=5, versions="0", flexible="0+",
    dialect="draft",
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
    ],
)

# Id 6 (never released; released Kafka uses 18 AccessControlEntryRecord, keyed by a uuid).
# CHOICE: flexible 0+ (not amended by KIP-746).
DRAFT_ACCESS_CONTROL_RECORD = message(
    "AccessControlRecord", kind="metadata", api_key=6, versions="0", flexible="0+",
    dialect="draft",
    fields=[
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+", nullable="0+"),
        field("PatternType", "int8", "0+"),
        field("Principal", "string", "0+"),
        field("Host", "string", "0+"),
        field("Operation", "int8", "0+"),
        field("PermissionType", "int8", "0+"),
    ],
)

# v1: flexible.
DRAFT_FENCE_BROKER_RECORD = message(
    "FenceBrokerRecord", kind="metadata", api_key=7, versions="0-1", flexible="1+",
    dialect="draft",
    fields=[
        field("Id", "int32", "0+"),
        field("Epoch", "int64", "0+"),
    ],
)

# v1: flexible.
DRAFT_UNFENCE_BROKER_RECORD = message(
    "UnfenceBrokerRecord", kind="metadata", api_key=8, versions="0-1", flexible="1+",
    dialect="draft",
    fields=[
        field("Id", "int32", "0+"),
        field("Epoch", "int64", "0+"),
    ],
)

# v1: flexible.
DRAFT_REMOVE_TOPIC_RECORD = message(
    "RemoveTopicRecord", kind="metadata", api_key=9, versions="0-1", flexible="1+",
    dialect="draft",
    fields=[
        field("TopicId", "uuid", "0+"),
    ],
)

# Flexible from v0 (KIP-746: no new version needed). No Requester field in the seeds.
DRAFT_DELEGATION_TOKEN_RECORD = message(
    "DelegationTokenRecord", kind="metadata", api_key=10, versions="0", flexible="0+",
    dialect="draft",
    fields=[
        field("Owner", "string", "0+"),
        field("Renewers", "[]string", "0+"),
        field("IssueTimestamp", "int64", "0+"),
        field("MaxTimestamp", "int64", "0+"),
        field("ExpirationTimestamp", "int64", "0+"),
        field("TokenId", "string", "0+"),
    ],
)

# Flexible from v0 (KIP-746: no new version needed). One record per user, all mechanisms.
DRAFT_USER_SCRAM_CREDENTIAL_RECORD = message(
    "UserScramCredentialRecord", kind="metadata", api_key=11, versions="0", flexible="0+",
    dialect="draft",
    fields=[
        field("Name", "string", "0+"),
        field("CredentialInfos", "[]CredentialInfo", "0+", fields=[
            field("Mechanism", "int8", "0+"),
            field("Salt", "bytes", "0+"),
            field("SaltedPassword", "bytes", "0+"),
            field("Iterations", "int32", "0+"),
        ]),
    ],
)

# Flexible from v0 (KIP-746: no new version needed). A finalized min/max range per feature;
# removal is RemoveFeatureLevelRecord (16).
DRAFT_FEATURE_LEVEL_RECORD = message(
    "FeatureLevelRecord", kind="metadata", api_key=12, versions="0", flexible="0+",
    dialect="draft",
    fields=[
        field("Name", "string", "0+"),
        field("MinFeatureLevel", "int16", "0+"),
        field("MaxFeatureLevel", "int16", "0+"),
    ],
)

# Id 13 (never released). CHOICE: flexible 0+ (not amended by KIP-746).
DRAFT_FAILED_REPLICAS_RECORD = message(
    "FailedReplicasRecord", kind="metadata", api_key=13, versions="0", flexible="0+",
    dialect="draft",
    fields=[
        field("BrokerId", "int32", "0+"),
        field("Topics", "[]TopicWithFailures", "0+", fields=[
            field("TopicId", "uuid", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
    ],
)

# KIP-631's QuotaRecord, renamed by KIP-746. v1: flexible.
DRAFT_CLIENT_QUOTA_RECORD = message(
    "ClientQuotaRecord", kind="metadata", api_key=14, versions="0-1", flexible="1+",
    dialect="draft",
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

# New in KIP-746 (released Kafka gives this record id 17). Fenced: -1 unfenced, 0 no change,
# 1 fenced.
DRAFT_BROKER_REGISTRATION_CHANGE_RECORD = message(
    "BrokerRegistrationChangeRecord", kind="metadata", api_key=15, versions="0", flexible="0+",
    dialect="draft",
    fields=[
        field("BrokerId", "int32", "0+"),
        field("BrokerEpoch", "int64", "0+"),
        field("Fenced", "int8", "0+", tag=0, tagged="0+"),
    ],
)

# New in KIP-746 (never released; released Kafka writes FeatureLevelRecord with level 0).
DRAFT_REMOVE_FEATURE_LEVEL_RECORD = message(
    "RemoveFeatureLevelRecord", kind="metadata", api_key=16, versions="0", flexible="0+",
    dialect="draft",
    fields=[
        field("Name", "string", "0+"),
    ],
)

