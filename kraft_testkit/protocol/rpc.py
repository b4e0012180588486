"""Kafka request and response frames: size prefix, header, body.

Header versions follow Kafka's rule: a request uses header v2 when its API version is flexible
(v1 otherwise); a response uses header v1 when flexible (v0 otherwise), except ApiVersions
responses, which always use v0 so that old clients can read them.

:class:`WireCodec` is what the simulator's wire mode uses: every message that crosses the
simulated network becomes these bytes and is decoded again on arrival.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from . import messages as M
from .codegen import Message
from .errors import DecodeError, EncodeError, UnsupportedVersionError

API_VERSIONS_KEY = 18
_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")

RequestHeader = M.BY_NAME["RequestHeader"]
ResponseHeader = M.BY_NAME["ResponseHeader"]


def request_header_version(api_key: int, api_version: int) -> int:
    return 2 if api_version in M.REQUESTS[api_key]._spec.flexible else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if api_version in M.RESPONSES[api_key]._spec.flexible else 0


def _api_of(msg: Message, table: dict[int, type[Message]], kind: str) -> int:
    spec = type(msg)._spec
    if spec is None or spec.kind != kind or table.get(spec.api_key) is not type(msg):
        raise EncodeError(f"{type(msg).__name__} is not a {kind}")
    return spec.api_key


def encode_request(msg: Message, version: int, correlation_id: int,
                   client_id: str | None = "kraft-testkit") -> bytes:
    """A whole request frame: int32 size, request header, body."""
    api_key = _api_of(msg, M.REQUESTS, "request")
    out = bytearray(4)
    header = RequestHeader(request_api_key=api_key, request_api_version=version,
                           correlation_id=correlation_id, client_id=client_id)
    header.encode_into(out, request_header_version(api_key, version))
    msg.encode_into(out, version)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def _body(frame: bytes) -> bytes:
    if len(frame) < 4:
        raise DecodeError("frame shorter than its size prefix", offset=0, path="size")
    (size,) = _SIZE.unpack_from(frame, 0)
    if size != len(frame) - 4:
        raise DecodeError(f"frame size {size} does not match its {len(frame) - 4} bytes",
                          offset=0, path="size")
    return frame


def decode_request(frame: bytes) -> tuple[Message, Message]:
    """``(header, request)`` from a whole request frame."""
    frame = _body(bytes(frame))
    if len(frame) < 8:
        raise DecodeError("request header is truncated", offset=4, path="RequestHeader")
    api_key, version = _KEY_VERSION.unpack_from(frame, 4)
    cls = M.REQUESTS.get(api_key)
    if cls is None:
        raise DecodeError(f"unknown api key {api_key}", offset=4, path="RequestHeader.RequestApiKey")
    if version not in cls._spec.versions:
        raise UnsupportedVersionError(
            f"{cls.__name__} version {version} is not supported (supported: {cls._spec.versions})")
    header, pos = RequestHeader.decode_from(frame, 4, request_header_version(api_key, version))
    body, end = cls.decode_from(frame, pos, version)
    if end != len(frame):
        raise DecodeError(f"{len(frame) - end} trailing bytes after {cls.__name__}", offset=end)
    return header, body


def encode_response(msg: Message, version: int, correlation_id: int) -> bytes:
    api_key = _api_of(msg, M.RESPONSES, "response")
    out = bytearray(4)
    ResponseHeader(correlation_id=correlation_id).encode_into(
        out, response_header_version(api_key, version))
    msg.encode_into(out, version)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def decode_response(frame: bytes, api_key: int, version: int) -> tuple[Message, Message]:
    """``(header, response)``; the caller knows which request this answers, as a client does."""
    frame = _body(bytes(frame))
    cls = M.RESPONSES.get(api_key)
    if cls is None:
        raise DecodeError(f"unknown api key {api_key}")
    header, pos = ResponseHeader.decode_from(frame, 4, response_header_version(api_key, version))
    body, end = cls.decode_from(frame, pos, version)
    if end != len(frame):
        raise DecodeError(f"{len(frame) - end} trailing bytes after {cls.__name__}", offset=end)
    return header, body


class WireFrame(NamedTuple):
    """Kafka bytes in flight, plus what the connection knows (which API a response answers)."""

    data: bytes
    api_key: int
    api_version: int
    is_request: bool


class WireCodec:
    """Encodes requests and responses to Kafka frames and back, at chosen API versions.

    ``versions`` maps api key -> version to speak (default: the newest each side declares).
    Other objects (not Kafka RPCs) pass through untouched, so simulations can mix in
    test-only messages.
    """

    def __init__(self, versions: dict[int, int] | None = None) -> None:
        self.versions = dict(versions or {})
        self._correlation = 0
        self.bytes_sent = 0
        self.frames_sent = 0

    def version_for(self, api_key: int) -> int:
        v = self.versions.get(api_key)
        if v is None:
            v = M.REQUESTS[api_key]._spec.versions.hi
            self.versions[api_key] = v
        return v

    def encode(self, msg: object) -> object:
        if not isinstance(msg, Message) or type(msg)._spec is None:
            return msg
        spec = type(msg)._spec
        if spec.kind not in ("request", "response"):
            return msg
        version = self.version_for(spec.api_key)
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        if spec.kind == "request":
            data = encode_request(msg, version, self._correlation)
        else:
            data = encode_response(msg, version, self._correlation)
        self.bytes_sent += len(data)
        self.frames_sent += 1
        return WireFrame(data, spec.api_key, version, spec.kind == "request")

    def decode(self, frame: object) -> object:
        if not isinstance(frame, WireFrame):
            return frame
        if frame.is_request:
            return decode_request(frame.data)[1]
        return decode_response(frame.data, frame.api_key, frame.api_version)[1]
