"""Kafka's 16-byte UUID, printed in base64url without padding as Kafka's tools do."""

from __future__ import annotations

import base64
import uuid as _uuid
from random import Random


class Uuid(bytes):
    """Immutable 16 bytes. ``str()`` gives Kafka's form (``"AAAAAAAAAAAAAAAAAAAAAA"``)."""

    __slots__ = ()
    ZERO: "Uuid"
    METADATA_TOPIC_ID: "Uuid"

    def __new__(cls, data: bytes | str | _uuid.UUID = b"\0" * 16) -> "Uuid":
        if isinstance(data, str):
            return cls.parse(data)
        if isinstance(data, _uuid.UUID):
            data = data.bytes
        if len(data) != 16:
            raise ValueError(f"a Uuid is 16 bytes, got {len(data)}")
        return bytes.__new__(cls, data)

    @classmethod
    def parse(cls, text: str) -> "Uuid":
        """Parse Kafka's base64url form, or the canonical 8-4-4-4-12 hex form."""
        if len(text) == 36 and text.count("-") == 4:
            return bytes.__new__(cls, _uuid.UUID(text).bytes)
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (ValueError, TypeError) as e:
            raise ValueError(f"not a Kafka uuid: {text!r}") from e
        if len(raw) != 16:
            raise ValueError(f"not a Kafka uuid: {text!r}")
        return bytes.__new__(cls, raw)

    @classmethod
    def random(cls, rng: Random) -> "Uuid":
        """A random (version 4) uuid drawn from ``rng``; never ZERO or METADATA_TOPIC_ID (as Kafka)."""
        while True:
            raw = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
            raw[6] = (raw[6] & 0x0F) | 0x40
            raw[8] = (raw[8] & 0x3F) | 0x80
            u = bytes.__new__(cls, bytes(raw))
            if u != cls.ZERO and u != cls.METADATA_TOPIC_ID and not str(u).startswith("-"):
                return u

    def to_uuid(self) -> _uuid.UUID:
        return _uuid.UUID(bytes=bytes(self))

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(self).rstrip(b"=").decode("ascii")

    def __repr__(self) -> str:
        return f"Uuid({str(self)!r})"


Uuid.ZERO = bytes.__new__(Uuid, b"\0" * 16)
Uuid.METADATA_TOPIC_ID = bytes.__new__(Uuid, b"\0" * 15 + b"\1")


# The decoders intern the uuids they read: a cluster's few topic, directory and incarnation ids
# come back in every fetch, heartbeat and record, and a dict lookup on the 16 raw bytes costs less
# than half of building a new Uuid. Uuids are immutable, so sharing one object changes nothing a
# caller can see but ``is``. The table is bounded: it starts over when it is full.
_CACHE: dict[bytes, Uuid] = {}
_CACHE_MAX = 1 << 14

#: ``uuid_cache_get(raw)``: the interned Uuid of 16 raw bytes, or None
uuid_cache_get = _CACHE.get


def uuid_cache_add(buf: bytes, pos: int) -> Uuid:
    """The Uuid of ``buf[pos:pos + 16]``, interned; ValueError when fewer than 16 bytes are left."""
    raw = buf[pos:pos + 16]
    if len(raw) != 16:
        raise ValueError("uuid past the end")
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    u = _CACHE[raw] = bytes.__new__(Uuid, raw)
    return u


_ARRAYS: dict[bytes, tuple[Uuid, ...]] = {}  # a partition's directories repeat too


def uuid_array(buf: bytes, pos: int, end: int) -> tuple[Uuid, ...]:
    """The interned Uuids of ``buf[pos:end]`` (a multiple of 16 bytes, checked by the caller),
    as one shared tuple per distinct run of bytes."""
    raw = buf[pos:end]
    found = _ARRAYS.get(raw)
    if found is None:
        get = _CACHE.get
        found = tuple([get(raw[k:k + 16]) or uuid_cache_add(raw, k)
                       for k in range(0, len(raw), 16)])
        if len(_ARRAYS) >= _CACHE_MAX:
            _ARRAYS.clear()
        _ARRAYS[raw] = found
    return found
