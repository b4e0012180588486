"""Declarations of Kafka message shapes: the wire facts only (names, types, versions, tags).

Every message the kit speaks is declared once with :func:`message` and :func:`field`; the codec
(:mod:`kraft_testkit.protocol.codegen`) turns a declaration into an immutable class plus an
encoder and a decoder per version. The vocabulary mirrors Kafka's message schemas so a reader can
check a declaration against Kafka's by eye:

* ``versions`` / ``nullable`` / ``tagged`` / ``flexible`` take Kafka's version ranges:
  ``"0+"``, ``"1-3"``, ``"2"``, ``"none"``;
* ``type`` is ``bool``, ``int8``, ``int16``, ``uint16``, ``int32``, ``uint32``, ``int64``,
  ``float64``, ``string``, ``bytes``, ``records``, ``uuid``, ``[]<type>`` for arrays, or a struct
  name with its ``fields`` given (``"Topic"`` or ``"[]Topic"``);
* ``default`` is a Python value (``-1``, ``None`` for null, ``True``); without it the type's zero.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field as dc_field
from typing import Any

PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
     "string", "bytes", "records", "uuid"}
)
KINDS = frozenset({"metadata", "request", "response", "data", "header"})

_RANGE = re.compile(r"^(\d+)(?:(\+)|-(\d+))?$")
INF = 1 << 15


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class Versions:
    """An inclusive range of versions; ``none`` is the empty range (lo > hi)."""

    lo: int
    hi: int

    @classmethod
    def parse(cls, text: str | None) -> "Versions":
        if text is None or text == "none":
            return cls(1, 0)
        m = _RANGE.match(text.strip())
        if not m:
            raise ValueError(f"bad version range {text!r}")
        lo = int(m.group(1))
        if m.group(2):
            return cls(lo, INF)
        return cls(lo, int(m.group(3)) if m.group(3) else lo)

    def __contains__(self, v: int) -> bool:
        return self.lo <= v <= self.hi

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi >= INF:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str
    versions: Versions
    nullable: Versions
    tag: int | None
    tagged: Versions
    default: Any
    ignorable: bool
    flexible: Versions | None  # field-level override (RequestHeader.ClientId is never compact)
    fields: tuple["FieldSpec", ...]

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES

    @property
    def py_name(self) -> str:
        return snake_case(self.name)

    @property
    def json_name(self) -> str:
        return self.name[:1].lower() + self.name[1:]


@dataclass(frozen=True)
class MessageSpec:
    name: str
    kind: str
    api_key: int | None
    versions: Versions
    flexible: Versions
    fields: tuple[FieldSpec, ...]
    extra: dict = dc_field(default_factory=dict, compare=False)


def field(
    name: str,
    type: str,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    tag: int | None = None,
    tagged: str | None = None,
    default: Any = MISSING,
    ignorable: bool = False,
    flexible: str | None = None,
    fields: list[FieldSpec] | tuple[FieldSpec, ...] | None = None,
) -> FieldSpec:
    """Declare one field. ``tag``/``tagged`` make it a tagged field in those versions."""
    spec = FieldSpec(
        name=name,
        type=type,
        versions=Versions.parse(versions),
        nullable=Versions.parse(nullable),
        tag=tag,
        tagged=Versions.parse(tagged),
        default=default,
        ignorable=ignorable,
        flexible=Versions.parse(flexible) if flexible is not None else None,
        fields=tuple(fields or ()),
    )
    if spec.is_struct and not spec.fields:
        raise ValueError(f"field {name}: struct type {type!r} needs its fields")
    if (tag is None) != spec.tagged.empty:
        raise ValueError(f"field {name}: give both tag and tagged, or neither")
    return spec


def message(
    name: str,
    *,
    kind: str,
    versions: str,
    flexible: str,
    fields: list[FieldSpec],
    api_key: int | None = None,
    **extra: Any,
) -> MessageSpec:
    """Declare a message: a metadata record, an RPC request/response, a header or plain data."""
    if kind not in KINDS:
        raise ValueError(f"message {name}: kind must be one of {sorted(KINDS)}")
    return MessageSpec(name, kind, api_key, Versions.parse(versions), Versions.parse(flexible),
                       tuple(fields), dict(extra))


_SNAKE1 = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SNAKE2 = re.compile(r"(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(name: str) -> str:
    """``TopicId`` -> ``topic_id``, ``ISRChange`` -> ``isr_change``."""
    return _SNAKE1.sub("_", _SNAKE2.sub("_", name)).lower()
