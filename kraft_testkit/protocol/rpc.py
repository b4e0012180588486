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
_INT32 = _SIZE
_KEY_VERSION = struct.Struct(">hh")
# what a NamedTuple's generated __new__ does, without its Python frame (a frame per message)
_tuple_new = tuple.__new__

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
    return _request_frame(api_key, version, correlation_id, client_id, msg.encode(version))


def _request_frame(api_key: int, version: int, correlation_id: int, client_id: str | None,
                   body: bytes) -> bytes:
    out = bytearray(4)
    header = RequestHeader(request_api_key=api_key, request_api_version=version,
                           correlation_id=correlation_id, client_id=client_id)
    header.encode_into(out, request_header_version(api_key, version))
    out += body
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
    return _response_frame(api_key, version, correlation_id, msg.encode(version))


def _response_frame(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    out = bytearray(4)
    ResponseHeader(correlation_id=correlation_id).encode_into(
        out, response_header_version(api_key, version))
    out += body
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


# Memos of the codec (below): frames of at most this many bytes, at most this many of each kind
# (a full memo is emptied and starts again). The repeated messages of a steady cluster are few;
# a small memo also keeps the garbage collector's work small when most messages are new.
MEMO_MAX_BYTES = 512
MEMO_ENTRIES = 256


def _correlation_at(is_request: bool) -> int:
    """Where the correlation id sits in a frame: every request header version starts with api
    key, api version, correlation id; every response header version with the correlation id."""
    return 8 if is_request else 4


class WireCodec:
    """Encodes requests and responses to Kafka frames and back, at chosen API versions.

    ``versions`` maps api key -> version to speak (default: the newest each side declares).
    Other objects (not Kafka RPCs) pass through untouched, so simulations can mix in
    test-only messages.

    A running cluster sends the same bodies over and over (an idle follower's Fetch, the
    leader's empty answer), so the codec remembers small frames: the frame of a (version,
    message), and the message of a frame's bytes, both but for the correlation id, which is
    written or read in place. Messages are immutable and the codecs deterministic, so a
    remembered answer is the one encoding or decoding would give; every distinct message still
    goes through the codecs once. Message classes with float64 fields are never remembered by
    value (``0.0 == -0.0`` but their bytes differ).
    """

    def __init__(self, versions: dict[int, int] | None = None) -> None:
        self.versions = dict(versions or {})
        self._correlation = 0
        self.bytes_sent = 0
        self.frames_sent = 0
        self._encoded: dict[tuple[int, Message], bytes] = {}  # frames with correlation id 0
        self._decoded: dict[tuple[int, int, bool, bytes], Message] = {}  # frame minus the id
        self._memo_ok: dict[type, bool] = {}
        self._headers: dict[tuple[int, int, bool], bytes] = {}  # header frames, empty body
        # (message class, kind) -> (api key, is request, memoizable, where the id sits)
        self._kinds: dict[tuple[type, str], tuple[int, bool, bool, int]] = {}

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
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        return self.encode_frame(msg, self._correlation, spec.kind)

    def encode_frame(self, msg: Message, correlation_id: int, kind: str,
                     frame_type: type[WireFrame] | None = None) -> WireFrame:
        """``msg``, a ``kind`` (``"request"`` or ``"response"``), as a frame whose header carries
        ``correlation_id``; ``frame_type``: a subclass of :class:`WireFrame` to build instead
        (one tuple per message on the hot path, not one plus a copy)."""
        info = self._kinds.get((type(msg), kind))
        if info is None:  # checked and worked out once per message class and kind
            is_request = kind == "request"
            api_key = _api_of(msg, M.REQUESTS if is_request else M.RESPONSES, kind)
            info = (api_key, is_request, self._memoizable(type(msg)), _correlation_at(is_request))
            self._kinds[(type(msg), kind)] = info
        api_key, is_request, memo, at = info
        version = self.versions.get(api_key)
        if version is None:
            version = self.version_for(api_key)
        key = (version, msg)
        frame = None
        if memo:
            try:
                frame = self._encoded.get(key)
            except TypeError:  # an unhashable field value (a bytearray): nothing to remember
                memo = False
        if frame is None:
            body = msg.encode(version)
            header = self._headers.get((api_key, version, is_request))
            if header is None:  # the header's bytes (size prefix left 0), once per API version
                header = (_request_frame(api_key, version, 0, "kraft-testkit", b"") if is_request
                          else _response_frame(api_key, version, 0, b""))
                self._headers[(api_key, version, is_request)] = header
            size = _SIZE.pack(len(header) - 4 + len(body))
            if memo and len(header) + len(body) <= MEMO_MAX_BYTES:
                frame = size + header[4:] + body
                if len(self._encoded) >= MEMO_ENTRIES:
                    self._encoded.clear()
                self._encoded[key] = frame
            else:  # built once with its id: a large body (catch-up fetches) is copied once
                data = size + header[4:at] + _INT32.pack(correlation_id) + header[at + 4:] + body
                self.bytes_sent += len(data)
                self.frames_sent += 1
                return _tuple_new(frame_type or WireFrame, (data, api_key, version, is_request))
        data = frame[:at] + _INT32.pack(correlation_id) + frame[at + 4:]
        self.bytes_sent += len(data)
        self.frames_sent += 1
        return _tuple_new(frame_type or WireFrame, (data, api_key, version, is_request))

    def decode(self, frame: object) -> object:
        if not isinstance(frame, WireFrame):
            return frame
        return self.decode_frame(frame)[1]

    def decode_frame(self, frame: WireFrame) -> tuple[int, Message]:
        """``(correlation id, body)`` of a frame, as :func:`decode_request` /
        :func:`decode_response` read them."""
        data = bytes(frame.data)
        is_request = frame.is_request
        at = 8 if is_request else 4  # _correlation_at
        key = None
        if at + 4 <= len(data) <= MEMO_MAX_BYTES:
            key = (frame.api_key, frame.api_version, is_request, data[:at] + data[at + 4:])
            body = self._decoded.get(key)
            if body is not None:  # these bytes decoded once already (the id is any int32)
                return _INT32.unpack_from(data, at)[0], body
        body = self._after_own_header(frame, data, at)
        if body is not None:
            correlation_id = _INT32.unpack_from(data, at)[0]
        else:
            if is_request:
                header, body = decode_request(data)
            else:
                header, body = decode_response(data, frame.api_key, frame.api_version)
            correlation_id = header.correlation_id
        if key is not None:
            if len(self._decoded) >= MEMO_ENTRIES:
                self._decoded.clear()
            self._decoded[key] = body
        return correlation_id, body

    def _after_own_header(self, frame: WireFrame, data: bytes, at: int) -> Message | None:
        """The body of a frame whose header is, but for the correlation id, the very bytes
        this codec writes for that API version (every frame of the simulated network): decoding
        those bytes gives back what was encoded, so only the size prefix and the body are read.
        None for any other frame (a real client's): the whole decoder reads it."""
        header = self._headers.get((frame.api_key, frame.api_version, frame.is_request))
        if header is None:
            return None
        end = len(header)
        if len(data) < end or data[4:at] != header[4:at] or data[at + 4:end] != header[at + 4:end] \
                or _SIZE.unpack_from(data, 0)[0] != len(data) - 4:
            return None
        cls = (M.REQUESTS if frame.is_request else M.RESPONSES)[frame.api_key]
        body, pos = cls.decode_from(data, end, frame.api_version)
        if pos != len(data):
            return None  # trailing bytes: the whole decoder says so
        return body

    def _memoizable(self, cls: type[Message]) -> bool:
        ok = self._memo_ok.get(cls)
        if ok is None:
            root = cls._root
            ok = self._memo_ok[cls] = not any(
                "float64" in (f.type, f.element_type)
                for c in (root, *root.STRUCTS.values()) for f in c._field_specs)
        return ok
