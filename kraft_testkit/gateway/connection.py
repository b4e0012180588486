"""One client connection: bytes in, frames out in request order, and Kafka's rules for bad bytes.

Kafka's socket server reads a 4-byte size, refuses sizes below zero or above
``socket.request.max.bytes`` (100 MiB) by closing the connection, and closes it too when a
request header names an unknown API, an API the listener does not serve, or a version it does not
support; the one exception is ApiVersions, answered at v0 with UNSUPPORTED_VERSION so that a
newer client can learn what to speak. Responses go back in request order on each connection
(clients such as kafka-python check it).
"""

from __future__ import annotations

import socket
import struct
from collections import deque
from dataclasses import dataclass, field
from typing import Any

SOCKET_REQUEST_MAX_BYTES = 100 * 1024 * 1024  # socket.request.max.bytes
#: requests one connection may have in the gateway at once (read, not yet answered). Kafka
#: mutes a channel while its request is processed and the kernel's buffer holds the rest; the
#: kit answers pipelined requests concurrently, up to this many, then stops reading
MAX_QUEUED_REQUESTS = 64
#: unsent response bytes after which a connection is not read until the client takes them
MAX_UNSENT_BYTES = 8 * 1024 * 1024
_SIZE = struct.Struct(">i")
_HEAD = struct.Struct(">hhi")  # api key, api version, correlation id


class BadFrame(Exception):
    """Bytes after which Kafka closes the connection (internal: logged, never raised to users)."""


@dataclass
class Slot:
    """A request's place in the connection's response order."""

    api_key: int
    version: int
    correlation_id: int
    pending: Any = None          # a handlers.Pending while the answer is not ready
    frame: bytes | None = None   # the encoded response once ready
    silent: bool = False         # acks=0 produce: no response at all


@dataclass
class Connection:
    sock: socket.socket
    node: int
    peer: str
    inbuf: bytearray = field(default_factory=bytearray)
    outbuf: bytearray = field(default_factory=bytearray)
    slots: deque = field(default_factory=deque)
    closed: bool = False
    sasl: Any = None             # the SASL exchange state (gateway.sasl)
    close_after_write: bool = False  # Kafka closes after some answers (a failed SASL exchange)
    parked_until_ms: int | None = None  # virtual time runs to here for requests a silent node holds
    reading: bool = True         # registered for reads (False while muted: memory bound)

    def next_frame(self) -> bytes | None:
        """The next whole request frame (size prefix included), or None while incomplete."""
        if len(self.inbuf) < 4:
            return None
        (size,) = _SIZE.unpack_from(self.inbuf, 0)
        if size < 0 or size > SOCKET_REQUEST_MAX_BYTES:
            raise BadFrame(f"frame size {size} outside 0..{SOCKET_REQUEST_MAX_BYTES} "
                           "(socket.request.max.bytes)")
        if len(self.inbuf) < 4 + size:
            return None
        frame = bytes(self.inbuf[:4 + size])
        del self.inbuf[:4 + size]
        return frame

    def wants_read(self) -> bool:
        """Read more only while the connection's memory stays bounded: fewer than
        MAX_QUEUED_REQUESTS in flight, fewer than MAX_UNSENT_BYTES unsent, and no whole frame
        waiting (a frame's size, checked first, bounds what one frame can hold)."""
        if len(self.slots) >= MAX_QUEUED_REQUESTS or len(self.outbuf) >= MAX_UNSENT_BYTES:
            return False
        if len(self.inbuf) < 4:
            return True
        (size,) = _SIZE.unpack_from(self.inbuf, 0)
        return len(self.inbuf) < 4 + size

    def take_ready(self) -> None:
        """Move answered slots at the head of the queue to the output buffer, in order."""
        while self.slots:
            head = self.slots[0]
            if head.silent:
                self.slots.popleft()
                continue
            if head.frame is None:
                return
            self.outbuf += head.frame
            self.slots.popleft()


def read_head(frame: bytes) -> tuple[int, int, int]:
    """(api key, api version, correlation id) of a request frame; BadFrame when too short."""
    if len(frame) < 4 + _HEAD.size:
        raise BadFrame(f"a {len(frame) - 4}-byte request cannot hold a request header")
    return _HEAD.unpack_from(frame, 4)
