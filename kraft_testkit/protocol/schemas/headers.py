"""Request and response headers that frame every Kafka RPC.

Wire facts after Apache Kafka's message schemas; declarations are our own.
"""

from ..schema import field, message

REQUEST_HEADER = message(
    "RequestHeader", kind="header", versions="0-2", flexible="2+",
    fields=[
        field("RequestApiKey", "int16", "0+"),
        field("RequestApiVersion", "int16", "0+"),
        field("CorrelationId", "int32", "0+"),
        # ClientId stays a classic int16-length string even in flexible header v2.
        field("ClientId", "string", "1+", nullable="1+", ignorable=True, flexible="none"),
    ],
)

RESPONSE_HEADER = message(
    "ResponseHeader", kind="header", versions="0-1", flexible="1+",
    fields=[
        field("CorrelationId", "int32", "0+"),
    ],
)
