"""WriteTxnMarkers (27, what a transaction coordinator sends partition leaders), and the
transaction admin RPCs DescribeTransactions (65) and ListTransactions (66, KIP-664).

Wire facts after Apache Kafka 4.2.1's message schemas (clients/.../common/message/
WriteTxnMarkers*.json, DescribeTransactions*.json, ListTransactions*.json), checked field by
field; declarations are our own. WriteTxnMarkers v0 is gone in 4.x (valid 1-2, flexible 1+);
v2 adds the marker's TransactionVersion.
"""

from ..schema import field, message

WRITE_TXN_MARKERS_REQUEST = message(
    "WriteTxnMarkersRequest", kind="request", api_key=27, versions="1-2", flexible="1+",
    fields=[
        field("Markers", "[]WritableTxnMarker", "0+", fields=[
            field("ProducerId", "int64", "0+"),
            field("ProducerEpoch", "int16", "0+"),
            field("TransactionResult", "bool", "0+"),
            field("Topics", "[]WritableTxnMarkerTopic", "0+", fields=[
                field("Name", "string", "0+"),
                field("PartitionIndexes", "[]int32", "0+"),
            ]),
            field("CoordinatorEpoch", "int32", "0+"),
            field("TransactionVersion", "int8", "2+", default=0, ignorable=True),
        ]),
    ],
)

WRITE_TXN_MARKERS_RESPONSE = message(
    "WriteTxnMarkersResponse", kind="response", api_key=27, versions="1-2", flexible="1+",
    fields=[
        field("Markers", "[]WritableTxnMarkerResult", "0+", fields=[
            field("ProducerId", "int64", "0+"),
            field("Topics", "[]WritableTxnMarkerTopicResult", "0+", fields=[
                field("Name", "string", "0+"),
                field("Partitions", "[]WritableTxnMarkerPartitionResult", "0+", fields=[
                    field("PartitionIndex", "int32", "0+"),
                    field("ErrorCode", "int16", "0+"),
                ]),
            ]),
        ]),
    ],
)

DESCRIBE_TRANSACTIONS_REQUEST = message(
    "DescribeTransactionsRequest", kind="request", api_key=65, versions="0", flexible="0+",
    fields=[field("TransactionalIds", "[]string", "0+")],
)

DESCRIBE_TRANSACTIONS_RESPONSE = message(
    "DescribeTransactionsResponse", kind="response", api_key=65, versions="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("TransactionStates", "[]TransactionState", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("TransactionalId", "string", "0+"),
            field("TransactionState", "string", "0+"),
            field("TransactionTimeoutMs", "int32", "0+"),
            field("TransactionStartTimeMs", "int64", "0+"),
            field("ProducerId", "int64", "0+"),
            field("ProducerEpoch", "int16", "0+"),
            field("Topics", "[]TopicData", "0+", fields=[
                field("Topic", "string", "0+"),
                field("Partitions", "[]int32", "0+"),
            ]),
        ]),
    ],
)

LIST_TRANSACTIONS_REQUEST = message(
    "ListTransactionsRequest", kind="request", api_key=66, versions="0-2", flexible="0+",
    fields=[
        field("StateFilters", "[]string", "0+"),
        field("ProducerIdFilters", "[]int64", "0+"),
        field("DurationFilter", "int64", "1+", default=-1),
        field("TransactionalIdPattern", "string", "2+", nullable="2+", default=None),
    ],
)

LIST_TRANSACTIONS_RESPONSE = message(
    "ListTransactionsResponse", kind="response", api_key=66, versions="0-2", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("UnknownStateFilters", "[]string", "0+"),
        field("TransactionStates", "[]TransactionState", "0+", fields=[
            field("TransactionalId", "string", "0+"),
            field("ProducerId", "int64", "0+"),
            field("TransactionState", "string", "0+"),
        ]),
    ],
)
