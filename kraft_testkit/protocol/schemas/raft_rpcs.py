"""The RPCs a KRaft quorum speaks: Raft elections, log and snapshot replication, voter changes,
quorum description, plus ApiVersions. Every released version of each.

Wire facts after Apache Kafka's message schemas; declarations are our own.
"""

from ..schema import field, message


def _node_endpoints(versions: str) -> list:
    """Fields of the NodeEndpoint struct the Raft responses carry (id, host, uint16 port)."""
    return [
        field("NodeId", "int32", versions),
        field("Host", "string", versions),
        field("Port", "uint16", versions),
    ]


def _listeners(versions: str) -> list:
    """Fields of a named listener endpoint (name, host, uint16 port)."""
    return [
        field("Name", "string", versions),
        field("Host", "string", versions),
        field("Port", "uint16", versions),
    ]


# --- Vote (52) -----------------------------------------------------------------------------

VOTE_REQUEST = message(
    "VoteRequest", kind="request", api_key=52, versions="0-2", flexible="0+",
    fields=[
        field("ClusterId", "string", "0+", nullable="0+", default=None),
        field("VoterId", "int32", "1+", ignorable=True, default=-1),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("CandidateEpoch", "int32", "0+"),
                field("CandidateId", "int32", "0+"),
                field("CandidateDirectoryId", "uuid", "1+", ignorable=True),
                field("VoterDirectoryId", "uuid", "1+", ignorable=True),
                field("LastOffsetEpoch", "int32", "0+"),
                field("LastOffset", "int64", "0+"),
                field("PreVote", "bool", "2+"),  # KIP-996: a PreVote, not persisted
            ]),
        ]),
    ],
)

VOTE_RESPONSE = message(
    "VoteResponse", kind="response", api_key=52, versions="0-2", flexible="0+",
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("LeaderId", "int32", "0+"),
                field("LeaderEpoch", "int32", "0+"),
                field("VoteGranted", "bool", "0+"),
            ]),
        ]),
        field("NodeEndpoints", "[]NodeEndpoint", "1+", tag=0, tagged="1+",
              fields=_node_endpoints("1+")),
    ],
)

# --- BeginQuorumEpoch (53) -----------------------------------------------------------------

BEGIN_QUORUM_EPOCH_REQUEST = message(
    "BeginQuorumEpochRequest", kind="request", api_key=53, versions="0-1", flexible="1+",
    fields=[
        field("ClusterId", "string", "0+", nullable="0+", default=None),
        field("VoterId", "int32", "1+", ignorable=True, default=-1),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("VoterDirectoryId", "uuid", "1+", ignorable=True),
                field("LeaderId", "int32", "0+"),
                field("LeaderEpoch", "int32", "0+"),
            ]),
        ]),
        field("LeaderEndpoints", "[]LeaderEndpoint", "1+", ignorable=True,
              fields=_listeners("1+")),
    ],
)

BEGIN_QUORUM_EPOCH_RESPONSE = message(
    "BeginQuorumEpochResponse", kind="response", api_key=53, versions="0-1", flexible="1+",
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("LeaderId", "int32", "0+"),
                field("LeaderEpoch", "int32", "0+"),
            ]),
        ]),
        field("NodeEndpoints", "[]NodeEndpoint", "1+", tag=0, tagged="1+",
              fields=_node_endpoints("1+")),
    ],
)

# --- EndQuorumEpoch (54) -------------------------------------------------------------------

END_QUORUM_EPOCH_REQUEST = message(
    "EndQuorumEpochRequest", kind="request", api_key=54, versions="0-1", flexible="1+",
    fields=[
        field("ClusterId", "string", "0+", nullable="0+", default=None),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("LeaderId", "int32", "0+"),
                field("LeaderEpoch", "int32", "0+"),
                # v1 replaced the bare id list with (id, directory id) pairs.
                field("PreferredSuccessors", "[]int32", "0", ignorable=True),
                field("PreferredCandidates", "[]ReplicaInfo", "1+", ignorable=True, fields=[
                    field("CandidateId", "int32", "1+"),
                    field("CandidateDirectoryId", "uuid", "1+"),
                ]),
            ]),
        ]),
        field("LeaderEndpoints", "[]LeaderEndpoint", "1+", ignorable=True,
              fields=_listeners("1+")),
    ],
)

END_QUORUM_EPOCH_RESPONSE = message(
    "EndQuorumEpochResponse", kind="response", api_key=54, versions="0-1", flexible="1+",
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("LeaderId", "int32", "0+"),
                field("LeaderEpoch", "int32", "0+"),
            ]),
        ]),
        field("NodeEndpoints", "[]NodeEndpoint", "1+", tag=0, tagged="1+",
              fields=_node_endpoints("1+")),
    ],
)

# --- DescribeQuorum (55) -------------------------------------------------------------------

DESCRIBE_QUORUM_REQUEST = message(
    "DescribeQuorumRequest", kind="request", api_key=55, versions="0-2", flexible="0+",
    fields=[
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
            ]),
        ]),
    ],
)

# Common struct "ReplicaState" of DescribeQuorumResponse.
_DESCRIBE_QUORUM_REPLICA_STATE = [
    field("ReplicaId", "int32", "0+"),
    field("ReplicaDirectoryId", "uuid", "2+"),
    field("LogEndOffset", "int64", "0+"),
    field("LastFetchTimestamp", "int64", "1+", ignorable=True, default=-1),
    field("LastCaughtUpTimestamp", "int64", "1+", ignorable=True, default=-1),
]

DESCRIBE_QUORUM_RESPONSE = message(
    "DescribeQuorumResponse", kind="response", api_key=55, versions="0-2", flexible="0+",
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "2+", nullable="2+", ignorable=True),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("ErrorMessage", "string", "2+", nullable="2+", ignorable=True),
                field("LeaderId", "int32", "0+"),
                field("LeaderEpoch", "int32", "0+"),
                field("HighWatermark", "int64", "0+"),
                field("CurrentVoters", "[]ReplicaState", "0+",
                      fields=_DESCRIBE_QUORUM_REPLICA_STATE),
                field("Observers", "[]ReplicaState", "0+",
                      fields=_DESCRIBE_QUORUM_REPLICA_STATE),
            ]),
        ]),
        field("Nodes", "[]Node", "2+", fields=[
            field("NodeId", "int32", "2+"),
            field("Listeners", "[]Listener", "2+", fields=_listeners("2+")),
        ]),
    ],
)

# --- Fetch (1) -----------------------------------------------------------------------------

FETCH_REQUEST = message(
    "FetchRequest", kind="request", api_key=1, versions="0-18", flexible="12+",
    fields=[
        field("ClusterId", "string", "12+", nullable="12+", default=None,
              tag=0, tagged="12+", ignorable=True),
        # v15 moved the replica id into the tagged ReplicaState struct.
        field("ReplicaId", "int32", "0-14", default=-1),
        field("ReplicaState", "ReplicaState", "15+", tag=1, tagged="15+", fields=[
            field("ReplicaId", "int32", "15+", default=-1),
            field("ReplicaEpoch", "int64", "15+", default=-1),
        ]),
        field("MaxWaitMs", "int32", "0+"),
        field("MinBytes", "int32", "0+"),
        field("MaxBytes", "int32", "3+", default=0x7FFFFFFF, ignorable=True),
        field("IsolationLevel", "int8", "4+", default=0, ignorable=True),
        field("SessionId", "int32", "7+", default=0, ignorable=True),
        field("SessionEpoch", "int32", "7+", default=-1, ignorable=True),
        field("Topics", "[]FetchTopic", "0+", fields=[
            # v13 identifies topics by id instead of name.
            field("Topic", "string", "0-12", ignorable=True),
            field("TopicId", "uuid", "13+", ignorable=True),
            field("Partitions", "[]FetchPartition", "0+", fields=[
                field("Partition", "int32", "0+"),
                field("CurrentLeaderEpoch", "int32", "9+", default=-1, ignorable=True),
                field("FetchOffset", "int64", "0+"),
                field("LastFetchedEpoch", "int32", "12+", default=-1),
                field("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
                field("PartitionMaxBytes", "int32", "0+"),
                field("ReplicaDirectoryId", "uuid", "17+", tag=0, tagged="17+", ignorable=True),
                # v18 (KIP-1166): the fetcher's high watermark; -1 unknown, Long.MAX_VALUE
                # when not supported (the default, so an older version reads as "no news")
                field("HighWatermark", "int64", "18+", tag=1, tagged="18+",
                      default=(1 << 63) - 1, ignorable=True),
            ]),
        ]),
        field("ForgottenTopicsData", "[]ForgottenTopic", "7+", fields=[
            field("Topic", "string", "7-12", ignorable=True),
            field("TopicId", "uuid", "13+", ignorable=True),
            field("Partitions", "[]int32", "7+"),
        ]),
        field("RackId", "string", "11+", default="", ignorable=True),
    ],
)

FETCH_RESPONSE = message(
    "FetchResponse", kind="response", api_key=1, versions="0-18", flexible="12+",
    fields=[
        field("ThrottleTimeMs", "int32", "1+", ignorable=True),
        field("ErrorCode", "int16", "7+", ignorable=True),
        field("SessionId", "int32", "7+", default=0),
        field("Responses", "[]FetchableTopicResponse", "0+", fields=[
            field("Topic", "string", "0-12", ignorable=True),
            field("TopicId", "uuid", "13+", ignorable=True),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("HighWatermark", "int64", "0+"),
                field("LastStableOffset", "int64", "4+", default=-1, ignorable=True),
                field("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
                field("DivergingEpoch", "EpochEndOffset", "12+", tag=0, tagged="12+", fields=[
                    field("Epoch", "int32", "12+", default=-1),
                    field("EndOffset", "int64", "12+", default=-1),
                ]),
                field("CurrentLeader", "LeaderIdAndEpoch", "12+", tag=1, tagged="12+", fields=[
                    field("LeaderId", "int32", "12+", default=-1),
                    field("LeaderEpoch", "int32", "12+", default=-1),
                ]),
                # Kafka declares this struct's fields "0+" although the struct itself is 12+.
                field("SnapshotId", "SnapshotId", "12+", tag=2, tagged="12+", fields=[
                    field("EndOffset", "int64", "0+", default=-1),
                    field("Epoch", "int32", "0+", default=-1),
                ]),
                field("AbortedTransactions", "[]AbortedTransaction", "4+", nullable="4+",
                      ignorable=True, fields=[
                          field("ProducerId", "int64", "4+"),
                          field("FirstOffset", "int64", "4+"),
                      ]),
                field("PreferredReadReplica", "int32", "11+", default=-1),
                field("Records", "records", "0+", nullable="0+"),
            ]),
        ]),
        field("NodeEndpoints", "[]NodeEndpoint", "16+", tag=0, tagged="16+", fields=[
            field("NodeId", "int32", "16+"),
            field("Host", "string", "16+"),
            field("Port", "int32", "16+"),
            field("Rack", "string", "16+", nullable="16+", default=None),
        ]),
    ],
)

# --- FetchSnapshot (59) --------------------------------------------------------------------

# The SnapshotId struct as both FetchSnapshot messages declare it (no defaults here).
_FETCH_SNAPSHOT_ID = [
    field("EndOffset", "int64", "0+"),
    field("Epoch", "int32", "0+"),
]

FETCH_SNAPSHOT_REQUEST = message(
    "FetchSnapshotRequest", kind="request", api_key=59, versions="0-1", flexible="0+",
    fields=[
        field("ClusterId", "string", "0+", nullable="0+", default=None, tag=0, tagged="0+"),
        field("ReplicaId", "int32", "0+", default=-1),
        field("MaxBytes", "int32", "0+", default=0x7FFFFFFF),
        field("Topics", "[]TopicSnapshot", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]PartitionSnapshot", "0+", fields=[
                field("Partition", "int32", "0+"),
                field("CurrentLeaderEpoch", "int32", "0+"),
                field("SnapshotId", "SnapshotId", "0+", fields=_FETCH_SNAPSHOT_ID),
                field("Position", "int64", "0+"),
                field("ReplicaDirectoryId", "uuid", "1+", tag=0, tagged="1+", ignorable=True),
            ]),
        ]),
    ],
)

FETCH_SNAPSHOT_RESPONSE = message(
    "FetchSnapshotResponse", kind="response", api_key=59, versions="0-1", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+", ignorable=True),
        field("ErrorCode", "int16", "0+"),
        field("Topics", "[]TopicSnapshot", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]PartitionSnapshot", "0+", fields=[
                field("Index", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("SnapshotId", "SnapshotId", "0+", fields=_FETCH_SNAPSHOT_ID),
                field("CurrentLeader", "LeaderIdAndEpoch", "0+", tag=0, tagged="0+", fields=[
                    field("LeaderId", "int32", "0+"),
                    field("LeaderEpoch", "int32", "0+"),
                ]),
                field("Size", "int64", "0+"),
                field("Position", "int64", "0+"),
                field("UnalignedRecords", "records", "0+"),
            ]),
        ]),
        field("NodeEndpoints", "[]NodeEndpoint", "1+", tag=0, tagged="1+",
              fields=_node_endpoints("1+")),
    ],
)

# --- AddRaftVoter (80), RemoveRaftVoter (81), UpdateRaftVoter (82) -------------------------

ADD_RAFT_VOTER_REQUEST = message(
    "AddRaftVoterRequest", kind="request", api_key=80, versions="0-1", flexible="0+",
    fields=[
        field("ClusterId", "string", "0+", nullable="0+"),
        field("TimeoutMs", "int32", "0+"),
        field("VoterId", "int32", "0+"),
        field("VoterDirectoryId", "uuid", "0+"),
        field("Listeners", "[]Listener", "0+", fields=_listeners("0+")),
        # v1 (Kafka 4.2): false asks the leader to answer once the VotersRecord is written,
        # not committed (what auto-join sends)
        field("AckWhenCommitted", "bool", "1+", default=True),
    ],
)

ADD_RAFT_VOTER_RESPONSE = message(
    "AddRaftVoterResponse", kind="response", api_key=80, versions="0-1", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+", ignorable=True),
    ],
)

REMOVE_RAFT_VOTER_REQUEST = message(
    "RemoveRaftVoterRequest", kind="request", api_key=81, versions="0", flexible="0+",
    fields=[
        field("ClusterId", "string", "0+", nullable="0+"),
        field("VoterId", "int32", "0+"),
        field("VoterDirectoryId", "uuid", "0+"),
    ],
)

REMOVE_RAFT_VOTER_RESPONSE = message(
    "RemoveRaftVoterResponse", kind="response", api_key=81, versions="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+", ignorable=True),
    ],
)

UPDATE_RAFT_VOTER_REQUEST = message(
    "UpdateRaftVoterRequest", kind="request", api_key=82, versions="0", flexible="0+",
    fields=[
        field("ClusterId", "string", "0+", nullable="0+"),
        field("CurrentLeaderEpoch", "int32", "0+"),
        field("VoterId", "int32", "0+"),
        field("VoterDirectoryId", "uuid", "0+"),
        field("Listeners", "[]Listener", "0+", fields=_listeners("0+")),
        field("KRaftVersionFeature", "KRaftVersionFeature", "0+", fields=[
            field("MinSupportedVersion", "int16", "0+"),
            field("MaxSupportedVersion", "int16", "0+"),
        ]),
    ],
)

UPDATE_RAFT_VOTER_RESPONSE = message(
    "UpdateRaftVoterResponse", kind="response", api_key=82, versions="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("CurrentLeader", "CurrentLeader", "0+", tag=0, tagged="0+", fields=[
            field("LeaderId", "int32", "0+", default=-1),
            field("LeaderEpoch", "int32", "0+", default=-1),
            field("Host", "string", "0+"),
            field("Port", "int32", "0+"),
        ]),
    ],
)

# --- ApiVersions (18) ----------------------------------------------------------------------

API_VERSIONS_REQUEST = message(
    "ApiVersionsRequest", kind="request", api_key=18, versions="0-4", flexible="3+",
    fields=[
        field("ClientSoftwareName", "string", "3+", ignorable=True),
        field("ClientSoftwareVersion", "string", "3+", ignorable=True),
    ],
)

API_VERSIONS_RESPONSE = message(
    "ApiVersionsResponse", kind="response", api_key=18, versions="0-4", flexible="3+",
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("ApiKeys", "[]ApiVersion", "0+", fields=[
            field("ApiKey", "int16", "0+"),
            field("MinVersion", "int16", "0+"),
            field("MaxVersion", "int16", "0+"),
        ]),
        field("ThrottleTimeMs", "int32", "1+", ignorable=True),
        field("SupportedFeatures", "[]SupportedFeatureKey", "3+", tag=0, tagged="3+",
              ignorable=True, fields=[
                  field("Name", "string", "3+"),
                  field("MinVersion", "int16", "3+"),
                  field("MaxVersion", "int16", "3+"),
              ]),
        field("FinalizedFeaturesEpoch", "int64", "3+", tag=1, tagged="3+", default=-1,
              ignorable=True),
        field("FinalizedFeatures", "[]FinalizedFeatureKey", "3+", tag=2, tagged="3+",
              ignorable=True, fields=[
                  field("Name", "string", "3+"),
                  field("MaxVersionLevel", "int16", "3+"),
                  field("MinVersionLevel", "int16", "3+"),
              ]),
        field("ZkMigrationReady", "bool", "3+", tag=3, tagged="3+", default=False,
              ignorable=True),
    ],
)
