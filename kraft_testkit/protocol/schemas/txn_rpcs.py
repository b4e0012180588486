"""The transaction RPCs a broker's transaction coordinator serves (AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, TxnOffsetCommit), and the records of ``__transaction_state`` and of
transaction markers.

Wire facts after Apache Kafka 4.2.1's message schemas (clients/.../common/message/*.json and
transaction-coordinator/.../common/message/TransactionLog*.json), checked field by field;
declarations are our own. The transaction log key starts with an int16 record type (0), the
value with its int16 version (Kafka 4.2 writes v1 once transaction.version >= 1). A marker
(control record) key is (version int16 0, type int16: 0 abort, 1 commit); its value is the
EndTransactionMarker below, behind its own int16 version.
"""

from ..schema import field, message

_ADD_PARTITIONS_TOPIC = [
    field("Name", "string", "0+"),
    field("Partitions", "[]int32", "0+"),
]

ADD_PARTITIONS_TO_TXN_REQUEST = message(
    "AddPartitionsToTxnRequest", kind="request", api_key=24, versions="0-5", flexible="3+",
    fields=[
        field("Transactions", "[]AddPartitionsToTxnTransaction", "4+", fields=[
            field("TransactionalId", "string", "4+"),
            field("ProducerId", "int64", "4+"),
            field("ProducerEpoch", "int16", "4+"),
            field("VerifyOnly", "bool", "4+", default=False),
            field("Topics", "[]AddPartitionsToTxnTopic", "4+", fields=_ADD_PARTITIONS_TOPIC),
        ]),
        field("V3AndBelowTransactionalId", "string", "0-3"),
        field("V3AndBelowProducerId", "int64", "0-3"),
        field("V3AndBelowProducerEpoch", "int16", "0-3"),
        field("V3AndBelowTopics", "[]AddPartitionsToTxnTopic", "0-3",
              fields=_ADD_PARTITIONS_TOPIC),
    ],
)

_ADD_PARTITIONS_RESULT = [
    field("Name", "string", "0+"),
    field("ResultsByPartition", "[]AddPartitionsToTxnPartitionResult", "0+", fields=[
        field("PartitionIndex", "int32", "0+"),
        field("PartitionErrorCode", "int16", "0+"),
    ]),
]

ADD_PARTITIONS_TO_TXN_RESPONSE = message(
    "AddPartitionsToTxnResponse", kind="response", api_key=24, versions="0-5", flexible="3+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "4+", ignorable=True),
        field("ResultsByTransaction", "[]AddPartitionsToTxnResult", "4+", fields=[
            field("TransactionalId", "string", "4+"),
            field("TopicResults", "[]AddPartitionsToTxnTopicResult", "4+",
                  fields=_ADD_PARTITIONS_RESULT),
        ]),
        field("ResultsByTopicV3AndBelow", "[]AddPartitionsToTxnTopicResult", "0-3",
              fields=_ADD_PARTITIONS_RESULT),
    ],
)

ADD_OFFSETS_TO_TXN_REQUEST = message(
    "AddOffsetsToTxnRequest", kind="request", api_key=25, versions="0-4", flexible="3+",
    fields=[
        field("TransactionalId", "string", "0+"),
        field("ProducerId", "int64", "0+"),
        field("ProducerEpoch", "int16", "0+"),
        field("GroupId", "string", "0+"),
    ],
)

ADD_OFFSETS_TO_TXN_RESPONSE = message(
    "AddOffsetsToTxnResponse", kind="response", api_key=25, versions="0-4", flexible="3+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
    ],
)

END_TXN_REQUEST = message(
    "EndTxnRequest", kind="request", api_key=26, versions="0-5", flexible="3+",
    fields=[
        field("TransactionalId", "string", "0+"),
        field("ProducerId", "int64", "0+"),
        field("ProducerEpoch", "int16", "0+"),
        field("Committed", "bool", "0+"),
    ],
)

END_TXN_RESPONSE = message(
    "EndTxnResponse", kind="response", api_key=26, versions="0-5", flexible="3+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ProducerId", "int64", "5+", default=-1, ignorable=True),
        field("ProducerEpoch", "int16", "5+", default=-1, ignorable=True),
    ],
)

TXN_OFFSET_COMMIT_REQUEST = message(
    "TxnOffsetCommitRequest", kind="request", api_key=28, versions="0-5", flexible="3+",
    fields=[
        field("TransactionalId", "string", "0+"),
        field("GroupId", "string", "0+"),
        field("ProducerId", "int64", "0+"),
        field("ProducerEpoch", "int16", "0+"),
        field("GenerationId", "int32", "3+", default=-1),
        field("MemberId", "string", "3+", default=""),
        field("GroupInstanceId", "string", "3+", nullable="3+", default=None),
        field("Topics", "[]TxnOffsetCommitRequestTopic", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]TxnOffsetCommitRequestPartition", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("CommittedOffset", "int64", "0+"),
                field("CommittedLeaderEpoch", "int32", "2+", default=-1, ignorable=True),
                field("CommittedMetadata", "string", "0+", nullable="0+"),
            ]),
        ]),
    ],
)

TXN_OFFSET_COMMIT_RESPONSE = message(
    "TxnOffsetCommitResponse", kind="response", api_key=28, versions="0-5", flexible="3+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Topics", "[]TxnOffsetCommitResponseTopic", "0+", fields=[
            field("Name", "string", "0+"),
            field("Partitions", "[]TxnOffsetCommitResponsePartition", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
            ]),
        ]),
    ],
)

TRANSACTION_LOG_KEY = message(
    "TransactionLogKey", kind="data", versions="0", flexible="none",
    fields=[field("TransactionalId", "string", "0")],
)

TRANSACTION_LOG_VALUE = message(
    "TransactionLogValue", kind="data", versions="0-1", flexible="1+",
    fields=[
        field("ProducerId", "int64", "0+"),
        field("PreviousProducerId", "int64", "1+", tag=0, tagged="1+", default=-1),
        field("NextProducerId", "int64", "1+", tag=1, tagged="1+", default=-1),
        field("ProducerEpoch", "int16", "0+"),
        field("NextProducerEpoch", "int16", "1+", tag=3, tagged="1+", default=-1),
        field("TransactionTimeoutMs", "int32", "0+"),
        field("TransactionStatus", "int8", "0+"),
        field("TransactionPartitions", "[]PartitionsSchema", "0+", nullable="0+", fields=[
            field("Topic", "string", "0+"),
            field("PartitionIds", "[]int32", "0+"),
        ]),
        field("TransactionLastUpdateTimestampMs", "int64", "0+"),
        field("TransactionStartTimestampMs", "int64", "0+"),
        field("ClientTransactionVersion", "int16", "1+", tag=2, tagged="1+", default=0),
    ],
)

#: clients/.../common/message/EndTxnMarker.json (the value of a marker control record)
END_TXN_MARKER = message(
    "EndTxnMarker", kind="data", versions="0", flexible="none",
    fields=[field("CoordinatorEpoch", "int32", "0+")],
)
