"""Kafka's wire primitives: fixed-width big-endian ints, (zigzag) varints, strings, bytes, uuids.

The generated codecs (:mod:`.codegen`) inline the fixed-width reads and call the varint helpers
here; record batches (:mod:`.records`) use them directly. Readers take ``(buf, pos)`` and return
``(value, new_pos)``; writers append to a ``bytearray``. Malformed input raises
:class:`~.errors.DecodeError` with the byte offset, never a bare ``IndexError``.
"""

from __future__ import annotations

import struct

from .errors import DecodeError, EncodeError
from .uuid import Uuid

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")

#: struct format letter and width of each fixed-width Kafka type
FIXED = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
}


def read_uvarint(buf: bytes, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """An unsigned varint (LEB128) of at most ``max_bytes`` bytes (5 for 32-bit, 10 for 64-bit)."""
    try:  # one or two bytes (most lengths, counts and tags) without the loop
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
        if max_bytes > 1:
            high = buf[pos + 1]
            if high < 0x80:
                return (b & 0x7F) | high << 7, pos + 2
    except IndexError:
        raise DecodeError("truncated varint", offset=pos) from None
    start = pos
    result = 0
    shift = 0
    try:
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if pos - start >= max_bytes:
                raise DecodeError(f"varint longer than {max_bytes} bytes", offset=start)
    except IndexError:
        raise DecodeError("truncated varint", offset=start) from None
    if max_bytes == 5 and result > 0xFFFFFFFF:
        raise DecodeError("varint exceeds 32 bits", offset=start)
    return result, pos


def read_uvarlong(buf: bytes, pos: int) -> tuple[int, int]:
    return read_uvarint(buf, pos, 10)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed 32-bit varint."""
    v, pos = read_uvarint(buf, pos, 5)
    return (v >> 1) ^ -(v & 1), pos


def read_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed 64-bit varint."""
    v, pos = read_uvarint(buf, pos, 10)
    return (v >> 1) ^ -(v & 1), pos


_SMALL = [bytes([i]) for i in range(128)]


def uvarint_bytes(v: int) -> bytes:
    if 0 <= v < 128:
        return _SMALL[v]
    if v < 0:
        raise EncodeError(f"unsigned varint cannot hold {v}")
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def varint_bytes(v: int) -> bytes:
    """Zigzag + unsigned varint of a signed 32-bit value."""
    if not -(1 << 31) <= v < (1 << 31):
        raise EncodeError(f"varint out of 32-bit range: {v}")
    return uvarint_bytes(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)


def varlong_bytes(v: int) -> bytes:
    """Zigzag + unsigned varint of a signed 64-bit value."""
    if not -(1 << 63) <= v < (1 << 63):
        raise EncodeError(f"varlong out of 64-bit range: {v}")
    return uvarint_bytes(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)


def read_exact(buf: bytes, pos: int, n: int, what: str = "bytes") -> tuple[bytes, int]:
    end = pos + n
    if n < 0 or end > len(buf):
        raise DecodeError(f"{what}: need {n} bytes, {len(buf) - pos} left", offset=pos)
    return buf[pos:end], end


def read_uuid(buf: bytes, pos: int) -> tuple[Uuid, int]:
    raw, pos = read_exact(buf, pos, 16, "uuid")
    return bytes.__new__(Uuid, raw), pos


def read_compact_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    n, p = read_uvarint(buf, pos)
    if n == 0:
        return None, p
    raw, p = read_exact(buf, p, n - 1, "string")
    try:
        return raw.decode("utf-8"), p
    except UnicodeDecodeError:
        raise DecodeError("string is not valid UTF-8", offset=pos) from None


def read_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    raw, p = read_exact(buf, pos, 2, "string length")
    (n,) = INT16.unpack(raw)
    if n < 0:
        return None, p
    raw, p = read_exact(buf, p, n, "string")
    try:
        return raw.decode("utf-8"), p
    except UnicodeDecodeError:
        raise DecodeError("string is not valid UTF-8", offset=pos) from None


def write_compact_string(out: bytearray, s: str | None) -> None:
    if s is None:
        out.append(0)
        return
    b = s.encode("utf-8")
    out += uvarint_bytes(len(b) + 1)
    out += b


def write_string(out: bytearray, s: str | None) -> None:
    if s is None:
        out += b"\xff\xff"
        return
    b = s.encode("utf-8")
    if len(b) > 0x7FFF:
        raise EncodeError(f"string of {len(b)} bytes is longer than int16 allows")
    out += INT16.pack(len(b))
    out += b
