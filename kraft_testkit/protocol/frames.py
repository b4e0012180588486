"""What rides inside record values: metadata record frames and control records.

Metadata record value = uvarint frame version, uvarint record type, uvarint record version, body.
Frame version 1 is released Kafka's; frame version 0 is the seeds' draft dialect (KIP-631 as
revised by KIP-746), readable always and chosen on read by the frame version.

Control record key = int16 version (0) + int16 type; value = the control message, whose first
field is its own int16 ``Version`` (Kafka writes no separate version prefix).
"""

from __future__ import annotations

import functools
import re
import struct
from typing import NamedTuple

from . import jsontext
from . import messages as M
from .codegen import Message, _compile
from .errors import DecodeError, EncodeError, UnknownFrameVersionError, UnknownRecordTypeError
from .primitives import read_uvarint, uvarint_bytes

RELEASED_FRAME = 1
DRAFT_FRAME = 0

CONTROL_TYPE_NAMES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                      4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
_CONTROL_KEY = struct.Struct(">hh")
_tuple_new = tuple.__new__
_JSON_HEADS: dict[type, str] = {}  # message class -> '{"type":"<TYPE_NAME>","version":'


@functools.lru_cache(maxsize=1024)  # a few dozen names, asked for once per record
def type_name(message_name: str) -> str:
    """``RegisterBrokerRecord`` -> ``REGISTER_BROKER_RECORD`` (Kafka's MetadataRecordType names)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", message_name).upper()


class MetadataRecord(NamedTuple):
    """A decoded metadata record: the message, its version and the frame it came in."""

    message: Message
    version: int
    frame_version: int = RELEASED_FRAME

    @property
    def api_key(self) -> int:
        return type(self.message)._spec.api_key

    @property
    def type_name(self) -> str:
        return type_name(type(self.message).__name__)

    def to_json(self) -> dict:
        """The form Kafka's metadata decoder prints: ``{"type", "version", "data"}``."""
        return {"type": self.type_name, "version": self.version,
                "data": self.message.to_json(self.version)}

    def to_json_text(self) -> str:
        """``to_json()`` as compact JSON text (what ``dump-log`` and the Spark source print),
        without building the dicts."""
        cls = type(self.message)
        head = _JSON_HEADS.get(cls)
        if head is None:
            head = _JSON_HEADS[cls] = '{"type":"' + type_name(cls.__name__) + '","version":'
        version = self.version
        fn = cls._json_text.get(version)
        if fn is not None and type(version) is int:
            try:
                return f'{head}{version},"data":{fn(self.message)}}}'
            except Exception:  # a hand-built value of another type than the schema's
                pass
        if type(version) is not int:
            return jsontext.dumps(self.to_json())
        return f'{head}{version},"data":{self.message.to_json_text(version)}}}'


class ControlRecord(NamedTuple):
    """A decoded control record (LeaderChange, SnapshotHeader, ..., or ABORT/COMMIT markers)."""

    control_type: int
    message: Message | None
    version: int

    @property
    def type_name(self) -> str:
        return CONTROL_TYPE_NAMES.get(self.control_type, f"UNKNOWN({self.control_type})")

    def to_json(self) -> dict:
        data = self.message.to_json(self.version) if self.message is not None else {}
        return {"type": self.type_name, "version": self.version, "data": data}


def decode_metadata(value: bytes, *, prerelease: bool = False) -> MetadataRecord:
    """Decode a metadata record value (either dialect, chosen by its frame version).

    ``prerelease=True`` decodes the record shapes Kafka's trunk wrote for a few weeks in late 2023
    (PartitionRecord v1 with ELR fields) instead of failing on them.
    """
    if type(value) is not bytes:
        value = bytes(value)
    found = (_PRERELEASE_HEADERS if prerelease else _HEADERS).get(value[:3])
    if found is None:
        found = _read_header(value, prerelease)
    cls, version, frame, pos, dec = found
    try:
        msg, end = dec(value, pos)
    except DecodeError as e:
        raise e.within(f"{cls.__name__}(v{version})") from None
    if end != len(value):
        raise DecodeError(f"{len(value) - end} trailing bytes after {cls.__name__} v{version}",
                          offset=end, path=f"{cls.__name__}(v{version})")
    return _tuple_new(MetadataRecord, (msg, version, frame))


#: What :func:`_read_header` found, by the value's first three bytes, for headers of three
#: one-byte varints (all that Kafka writes): a record costs one dict look-up, not a parse.
_HEADERS: dict[bytes, tuple] = {}
_PRERELEASE_HEADERS: dict[bytes, tuple] = {}


def _read_header(value: bytes, prerelease: bool) -> tuple:
    """``(class, version, frame version, body position, decoder)`` of a metadata record value."""
    frame, pos = read_uvarint(value, 0)
    api_key, pos = read_uvarint(value, pos)
    version, pos = read_uvarint(value, pos)
    if frame == RELEASED_FRAME:
        cls = None
        if prerelease:
            cls = M.PRERELEASE_METADATA.get((api_key, version))
        if cls is None:
            cls = M.METADATA.get(api_key)
    elif frame == DRAFT_FRAME:
        cls = M.DRAFT_METADATA.get(api_key)
    else:
        raise UnknownFrameVersionError(
            f"metadata record frame version {frame} is unknown (0 = draft, 1 = released)",
            offset=0, path="frameVersion")
    if cls is None:
        raise UnknownRecordTypeError(
            f"metadata record type {api_key} is unknown in frame version {frame}",
            offset=1, path="recordType")
    dec = cls._decoders.get(version)
    if dec is None:
        if version not in cls._spec.versions:
            raise DecodeError(
                f"{cls.__name__} version {version} is unknown (known: {cls._spec.versions})",
                offset=pos - 1, path="recordVersion")
        dec = _compile(cls, version, "dec")
    found = (cls, version, frame, pos, dec)
    if pos == 3:
        (_PRERELEASE_HEADERS if prerelease else _HEADERS)[value[:3]] = found
    return found


def encode_metadata(message: Message, version: int, *, frame_version: int | None = None) -> bytes:
    """Frame a metadata record. The frame follows the message's dialect unless given."""
    spec = type(message)._spec
    if spec is None or spec.kind != "metadata":
        raise EncodeError(f"{type(message).__name__} is not a metadata record")
    if frame_version is None:
        frame_version = DRAFT_FRAME if spec.extra.get("dialect") == "draft" else RELEASED_FRAME
    out = bytearray(uvarint_bytes(frame_version))
    out += uvarint_bytes(spec.api_key)
    out += uvarint_bytes(version)
    message.encode_into(out, version)
    return bytes(out)


def encode_record(record: MetadataRecord) -> bytes:
    return encode_metadata(record.message, record.version, frame_version=record.frame_version)


def control_key(control_type: int) -> bytes:
    return _CONTROL_KEY.pack(0, control_type)


def decode_control(key: bytes | None, value: bytes | None) -> ControlRecord:
    if key is None or len(key) < 4:
        raise DecodeError("control record key must be 4 bytes (version, type)", offset=0,
                          path="key")
    key_version, ctype = _CONTROL_KEY.unpack_from(key, 0)
    if key_version != 0:
        raise DecodeError(f"control record key version {key_version} is unknown", offset=0,
                          path="key.version")
    if ctype in (0, 1):  # transaction markers: int16 version, int32 coordinator epoch
        if value is not None and len(value) == 1:
            raise DecodeError("transaction marker value is truncated inside its version",
                              offset=0, path="value.version")
        version = struct.unpack_from(">h", value or b"\0\0")[0]
        return ControlRecord(ctype, None, version)
    cls = M.CONTROL.get(ctype)
    if cls is None:
        raise UnknownRecordTypeError(f"control record type {ctype} is unknown", offset=2,
                                     path="key.type")
    if value is None or len(value) < 2:
        raise DecodeError("control record value is missing its version", offset=0, path="value")
    (version,) = struct.unpack_from(">h", value, 0)
    msg, end = cls.decode_from(value, 0, version) if version in cls._spec.versions else \
        _bad_version(cls, version)
    if end != len(value):
        raise DecodeError(f"{len(value) - end} trailing bytes after {cls.__name__}", offset=end)
    return ControlRecord(ctype, msg, version)


def _bad_version(cls: type[Message], version: int):
    raise DecodeError(f"{cls.__name__} version {version} is unknown (known: {cls._spec.versions})",
                      offset=0, path="value.version")


def encode_control(message: Message, version: int) -> tuple[bytes, bytes]:
    """(key, value) of a control record carrying ``message``."""
    ctype = type(message)._spec.extra.get("control_type")
    if ctype is None:
        raise EncodeError(f"{type(message).__name__} is not a control record")
    if getattr(message, "version", version) != version:
        message = message.replace(version=version)
    return control_key(ctype), message.encode(version)
