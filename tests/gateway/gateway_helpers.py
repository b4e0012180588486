"""Small helpers for the gateway tests: a raw Kafka client on a socket (the kit's own codec),
and waits on client futures that fail loudly."""

from __future__ import annotations

import socket
import struct

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol import rpc


def port_of(bootstrap: str, index: int = 0) -> int:
    return int(bootstrap.split(",")[index].rsplit(":", 1)[1])


class RawClient:
    """One blocking connection speaking Kafka frames: for exact requests and bad bytes."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.correlation = 0

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def request(self, body, version: int):
        self.correlation += 1
        self.sock.sendall(rpc.encode_request(body, version, self.correlation))
        return self.read_response(type(body)._spec.api_key, version)

    def read_response(self, api_key: int, version: int):
        size = struct.unpack(">i", self.read_exactly(4))[0]
        frame = struct.pack(">i", size) + self.read_exactly(size)
        _header, body = rpc.decode_response(frame, api_key, version)
        return body

    def read_exactly(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the gateway")
            out += chunk
        return out

    def closed_by_peer(self) -> bool:
        """True when the other side closed the connection (reads give EOF or a reset)."""
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True

    def close(self) -> None:
        self.sock.close()


def metadata(client: RawClient, topics=None):
    req = M.MetadataRequest(topics=None if topics is None else tuple(
        M.MetadataRequest.MetadataRequestTopic(name=t) for t in topics),
        allow_auto_topic_creation=False)
    return client.request(req, 12)


def one_record_batch(value: bytes, producer: tuple[int, int, int] = (-1, -1, -1)) -> bytes:
    """A one-record v2 batch built by kafka-python's own encoder (not the kit's)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    pid, epoch, seq = producer
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                  batch_size=1 << 20)
    b.append(0, timestamp=1_700_000_000_000, key=None, value=value, headers=[])
    return bytes(b.build())
