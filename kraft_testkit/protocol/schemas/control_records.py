"""KRaft control records (written in control batches of the metadata log) and the quorum-state file.

``control_type`` is the record's id in Kafka's ControlRecordType (the key of a control record).
Wire facts after Apache Kafka's message schemas; declarations are our own.
"""

from ..schema import field, message

# Common struct "Voter" of LeaderChangeMessage.
_LEADER_CHANGE_VOTER = [
    field("VoterId", "int32", "0+"),
    field("VoterDirectoryId", "uuid", "1+"),
]

LEADER_CHANGE_MESSAGE = message(
    "LeaderChangeMessage", kind="data", versions="0-1", flexible="0+", control_type=2,
    fields=[
        field("Version", "int16", "0+"),
        field("LeaderId", "int32", "0+"),
        field("Voters", "[]Voter", "0+", fields=_LEADER_CHANGE_VOTER),
        field("GrantingVoters", "[]Voter", "0+", fields=_LEADER_CHANGE_VOTER),
    ],
)

SNAPSHOT_HEADER_RECORD = message(
    "SnapshotHeaderRecord", kind="data", versions="0", flexible="0+", control_type=3,
    fields=[
        field("Version", "int16", "0+"),
        field("LastContainedLogTimestamp", "int64", "0+"),
    ],
)

SNAPSHOT_FOOTER_RECORD = message(
    "SnapshotFooterRecord", kind="data", versions="0", flexible="0+", control_type=4,
    fields=[
        field("Version", "int16", "0+"),
    ],
)

KRAFT_VERSION_RECORD = message(
    "KRaftVersionRecord", kind="data", versions="0", flexible="0+", control_type=5,
    fields=[
        field("Version", "int16", "0+"),
        field("KRaftVersion", "int16", "0+"),
    ],
)

VOTERS_RECORD = message(
    "VotersRecord", kind="data", versions="0", flexible="0+", control_type=6,
    fields=[
        field("Version", "int16", "0+"),
        field("Voters", "[]Voter", "0+", fields=[
            field("VoterId", "int32", "0+"),
            field("VoterDirectoryId", "uuid", "0+"),
            field("Endpoints", "[]Endpoint", "0+", fields=[
                field("Name", "string", "0+"),
                field("Host", "string", "0+"),
                field("Port", "uint16", "0+"),
            ]),
            field("KRaftVersionFeature", "KRaftVersionFeature", "0+", fields=[
                field("MinSupportedVersion", "int16", "0+"),
                field("MaxSupportedVersion", "int16", "0+"),
            ]),
        ]),
    ],
)

# A KRaft node's quorum-state file: this message as JSON, plus a "data_version" key.
QUORUM_STATE_DATA = message(
    "QuorumStateData", kind="data", versions="0-1", flexible="0+",
    fields=[
        field("ClusterId", "string", "0"),
        field("LeaderId", "int32", "0+", default=-1),
        field("LeaderEpoch", "int32", "0+", default=-1),
        field("VotedId", "int32", "0+", default=-1),
        field("VotedDirectoryId", "uuid", "1+"),
        field("AppliedOffset", "int64", "0"),
        field("CurrentVoters", "[]Voter", "0", nullable="0", fields=[
            field("VoterId", "int32", "0"),
        ]),
    ],
)
