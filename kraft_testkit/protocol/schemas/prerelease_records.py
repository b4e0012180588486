"""Pre-release layouts of metadata records, as written by Kafka trunk between 2023-10-19 and
2023-11-30 (the golden log ``A_mv16_3brokers``); ``dialect="prerelease-2023-11"``.

Only the records whose layout then differed from the released one are declared here; every other
record of that log has its released layout (``metadata_records``). Back then version 1 of the
partition records meant ELR (KIP-966) and JBOD's Directories did not exist yet; released Kafka
swapped this (v1 = Directories, v2 = ELR). Frame version 1, same type ids as released.
"""

from ..schema import field, message

# Checked against folder A: its six PartitionRecord v1 values carry EligibleLeaderReplicas and
# LastKnownELR as tags 1 and 2 (written even when empty, so their default is null) and no
# Directories. The field was then spelled "LastKnownELR".
PRERELEASE_PARTITION_RECORD = message(
    "PartitionRecord", kind="metadata", api_key=3, versions="0-1", flexible="0+",
    dialect="prerelease-2023-11",
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
        field("EligibleLeaderReplicas", "[]int32", "1+", nullable="1+", tag=1, tagged="1+",
              default=None),
        field("LastKnownELR", "[]int32", "1+", nullable="1+", tag=2, tagged="1+", default=None),
    ],
)

# v1 then meant ELR here too (tags 6 and 7, which is why the released Directories got tag 8).
# Folder A's PartitionChangeRecord v1 values only carry tags 0 and 1, so they decode the same
# with this layout and with the released one; this declaration is the one that keeps a
# pre-release ELR change (tags 6/7) from being read as unknown tags.
PRERELEASE_PARTITION_CHANGE_RECORD = message(
    "PartitionChangeRecord", kind="metadata", api_key=5, versions="0-1", flexible="0+",
    dialect="prerelease-2023-11",
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
        field("EligibleLeaderReplicas", "[]int32", "1+", nullable="1+", tag=6, tagged="1+",
              default=None),
        field("LastKnownELR", "[]int32", "1+", nullable="1+", tag=7, tagged="1+", default=None),
    ],
)
