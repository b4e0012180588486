"""Bridge between our generated message classes and kio's entity dataclasses (test helper).

kio (https://pypi.org/project/kio/) is an independent implementation of Kafka's protocol: one
frozen dataclass per api, version and struct, a native (Rust) reader and a pure-Python writer.
This module pairs our classes with kio's, compares the two declarations structurally, builds
Hypothesis strategies of *our* message values (walking kio's dataclass alongside, so values stay
inside what kio can represent), and converts our values into kio entities.

Where kio's value model is narrower than the wire (documented so nobody mistakes it for a bug of
ours):

* ``error_code`` fields are a closed ``ErrorCode`` enum: values are drawn from it;
* ``datetime_i64`` fields become datetimes: kio rejects negative values (``OutOfBoundValue``) and
  goes through float seconds, exact to the millisecond only up to 2**32 s (year 2106): values
  are drawn from 0 to that bound;
* ``timedelta_i64`` goes through a float: values are kept within +-2**48 ms;
* a uuid of all zeros is ``None`` in kio;
* unknown tagged fields are dropped by kio: none are generated.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import io
import pkgutil
import uuid as _uuid
from functools import cache
from typing import Any

from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    classify_field,
    is_optional,
)

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.codegen import Message
from kraft_testkit.protocol.schema import FieldSpec, snake_case
from kraft_testkit.protocol.uuid import Uuid

#: kio's semantic kafka_type -> the wire type it rides on
KIO_WIRE_TYPE = {"error_code": "int16", "timedelta_i32": "int32", "timedelta_i64": "int64",
                 "datetime_i64": "int64"}
ERROR_CODES = sorted(e.value for e in ErrorCode)
INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    "uint16": (0, (1 << 16) - 1),
    "uint32": (0, (1 << 32) - 1),
}
MAX_DATETIME_MS = ((1 << 32) - 1) * 1000  # 2106-02-07: beyond, kio's float seconds lose ms
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


# ---------------------------------------------------------------- pairing


def kio_module(cls: type[Message]) -> tuple[str, str]:
    """``(kio schema package, module in each version folder)`` of one of our root classes."""
    spec = cls._spec
    name = spec.name
    if spec.kind == "request":
        return snake_case(name.removesuffix("Request")), "request"
    if spec.kind == "response":
        return snake_case(name.removesuffix("Response")), "response"
    if spec.kind == "header":
        return snake_case(name), "header"
    return snake_case(name), "data"


@cache
def kio_versions(cls: type[Message]) -> tuple[int, ...]:
    package, _ = kio_module(cls)
    try:
        pkg = importlib.import_module(f"kio.schema.{package}")
    except ImportError:
        return ()
    return tuple(sorted(int(m.name[1:]) for m in pkgutil.iter_modules(pkg.__path__)
                        if m.name[:1] == "v" and m.name[1:].isdigit()))


def kio_class(cls: type[Message], version: int) -> type | None:
    package, module = kio_module(cls)
    try:
        mod = importlib.import_module(f"kio.schema.{package}.v{version}.{module}")
    except ImportError:
        return None
    return getattr(mod, cls._spec.name, None)


def our_versions(cls: type[Message]) -> tuple[int, ...]:
    return tuple(cls.valid_versions())


def candidate_classes() -> list[type[Message]]:
    """Our RPCs (requests, responses), headers and control records: what kio may also have."""
    out = []
    for name, cls in sorted(M.BY_NAME.items()):
        if cls._spec.kind in ("request", "response", "header") or cls in M.CONTROL.values():
            out.append(cls)
    return out


def common_pairs() -> list[tuple[type[Message], int, type]]:
    """Every (our class, version, kio class) both sides declare."""
    out = []
    for cls in candidate_classes():
        for v in our_versions(cls):
            if v in kio_versions(cls):
                k = kio_class(cls, v)
                if k is not None:
                    out.append((cls, v, k))
    return out


def gaps() -> list[tuple[type[Message], tuple[int, ...]]]:
    """Our classes with versions kio lacks (all of them when kio lacks the message)."""
    out = []
    for cls in candidate_classes():
        missing = tuple(v for v in our_versions(cls) if v not in kio_versions(cls))
        if missing:
            out.append((cls, missing))
    return out


def _sub(cls: type[Message], f: FieldSpec) -> type[Message]:
    root = cls._root
    return root if f.element_type == root._struct_name else root.STRUCTS[f.element_type]


def _present(cls: type[Message], v: int) -> list[tuple[int, FieldSpec]]:
    return [(i, f) for i, f in enumerate(cls._field_specs) if v in f.versions]


def _is_tagged(cls: type[Message], f: FieldSpec, v: int) -> bool:
    return v in cls._flexible and v in f.tagged


# ---------------------------------------------------------------- declarations


def declaration_diffs(cls: type[Message], v: int, k: type, path: str = "") -> list[str]:
    """Wire-relevant differences between our declaration and kio's at version ``v``.

    Compared: flexibility, field order and count, wire type, array-ness, nullability, tags and
    the default of tagged fields (a tagged field equal to its default is not written). Field
    names are not compared (kio renames ``ThrottleTimeMs`` to ``throttle_time`` and the like).
    """
    path = path or cls.__name__
    diffs = []
    if (v in cls._flexible) != k.__flexible__:
        diffs.append(f"{path}: flexible ours={v in cls._flexible} kio={k.__flexible__}")
    ours = _present(cls, v)
    theirs = dataclasses.fields(k)
    if len(ours) != len(theirs):
        diffs.append(f"{path}: fields ours={[f.name for _, f in ours]} "
                     f"kio={[x.name for x in theirs]}")
    for (i, f), kf in zip(ours, theirs):
        p = f"{path}.{f.name}"
        kind = classify_field(kf)
        tag = kf.metadata.get("tag")
        our_tag = f.tag if _is_tagged(cls, f, v) else None
        if tag != our_tag:
            diffs.append(f"{p}: tag ours={our_tag} kio={tag}")
        if f.is_array != kind.is_array:
            diffs.append(f"{p}: array ours={f.is_array} kio={kind.is_array}")
        if f.is_struct:
            if not isinstance(kind, (EntityField, EntityTupleField)):
                diffs.append(f"{p}: struct in ours, {kf.metadata.get('kafka_type')} in kio")
                continue
            diffs += declaration_diffs(_sub(cls, f), v, kind.type_, p)
        else:
            kt = kf.metadata.get("kafka_type")
            if KIO_WIRE_TYPE.get(kt, kt) != f.element_type:
                diffs.append(f"{p}: type ours={f.type} kio={kt}")
        # kio types every uuid as ``UUID | None`` (zero = None), a timestamp as ``datetime |
        # None`` (-1 = None), and tagged fields carry their nullability in the default; only
        # plain fields' nullability is comparable.
        if f.element_type != "uuid" and kf.metadata.get("kafka_type") != "datetime_i64" \
                and our_tag is None and (v in f.nullable) != is_optional(kf):
            diffs.append(f"{p}: nullable ours={v in f.nullable} kio={is_optional(kf)}")
        if our_tag is not None:
            ours_default = cls._defaults[i]
            kio_default = get_tagged_field_default(kf)
            sub_k = kind.type_ if isinstance(kind, (EntityField, EntityTupleField)) else None
            conv = convert_field(ours_default, f, kf, _sub(cls, f) if f.is_struct else None,
                                 v, sub_k)
            if conv != kio_default:
                diffs.append(f"{p}: tagged default ours={ours_default!r} kio={kio_default!r}")
    return diffs


# ---------------------------------------------------------------- our values -> kio entities


def _convert_scalar(x: Any, kafka_type: str) -> Any:
    if kafka_type == "error_code":
        return ErrorCode(x)
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=x)
    if kafka_type == "datetime_i64":
        return EPOCH + datetime.timedelta(milliseconds=x)
    if kafka_type == "uuid":
        return None if x == Uuid.ZERO else _uuid.UUID(bytes=bytes(x))
    return x


def convert_field(x: Any, f: FieldSpec, kf: dataclasses.Field, sub: type[Message] | None,
                  v: int, sub_k: type | None) -> Any:
    if x is None:
        return None
    if f.is_struct:
        if f.is_array:
            return tuple(to_kio(e, sub, v, sub_k) for e in x)
        return to_kio(x, sub, v, sub_k)
    kt = kf.metadata["kafka_type"]
    if f.is_array:
        return tuple(_convert_scalar(e, kt) for e in x)
    return _convert_scalar(x, kt)


def to_kio(msg: Message, cls: type[Message], v: int, k: type) -> Any:
    """The kio entity ``k`` holding the same field values as our ``msg`` (at version ``v``)."""
    kwargs = {}
    for (i, f), kf in zip(_present(cls, v), dataclasses.fields(k)):
        kind = classify_field(kf)
        sub_k = kind.type_ if isinstance(kind, (EntityField, EntityTupleField)) else None
        kwargs[kf.name] = convert_field(msg[i], f, kf, _sub(cls, f) if f.is_struct else None,
                                        v, sub_k)
    return k(**kwargs)


# ---------------------------------------------------------------- kio codec


def kio_encode(k: type, entity: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(k)(buf, entity)
    return buf.getvalue()


def kio_decode(k: type, data: bytes) -> Any:
    entity, size = entity_reader(k)(data, 0)
    if size != len(data):
        raise AssertionError(f"kio read {size} of {len(data)} bytes of {k.__name__}")
    return entity


# ---------------------------------------------------------------- strategies


def _scalar_strategy(t: str, kafka_type: str | None) -> st.SearchStrategy:
    if kafka_type == "error_code":
        return st.sampled_from(ERROR_CODES)
    if kafka_type == "datetime_i64":
        return st.one_of(st.sampled_from([0, 1_700_000_000_123]), st.integers(0, MAX_DATETIME_MS))
    if kafka_type == "timedelta_i64":
        return st.integers(-(1 << 48), 1 << 48)
    if t in INT_RANGES:
        lo, hi = INT_RANGES[t]
        return st.one_of(st.sampled_from([lo, -1, 0, 1, hi] if lo < 0 else [0, 1, hi]),
                         st.integers(lo, hi))
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False, allow_infinity=False)
    if t == "string":
        return st.text(max_size=6)
    if t in ("bytes", "records"):
        return st.binary(max_size=12)
    if t == "uuid":
        raw = st.binary(min_size=16, max_size=16)  # plain bytes too: the constructor makes Uuids
        return st.one_of(st.just(Uuid.ZERO), raw.map(Uuid), raw)
    raise AssertionError(f"no strategy for {t}")


@cache
def message_strategy(cls: type[Message], v: int, k: type) -> st.SearchStrategy[Message]:
    """Values of our ``cls`` at version ``v``: every field present, nested structs, nulls where
    the field is nullable, tagged fields either at their default (not written) or not."""
    kwargs = {}
    for (i, f), kf in zip(_present(cls, v), dataclasses.fields(k)):
        kind = classify_field(kf)
        if f.is_struct:
            elem = st.deferred(lambda f=f, kind=kind: message_strategy(_sub(cls, f), v,
                                                                        kind.type_))
        else:
            elem = _scalar_strategy(f.element_type, kf.metadata.get("kafka_type"))
        # lists on purpose: the constructor must normalise them (to tuples, uuids to Uuid)
        s = st.lists(elem, max_size=3) if f.is_array else elem
        if v in f.nullable:
            s = st.one_of(st.none(), s)
        if _is_tagged(cls, f, v):
            s = st.one_of(st.just(cls._defaults[i]), s)
        kwargs[f.py_name] = s
    return st.fixed_dictionaries(kwargs).map(lambda kw: cls(**kw))
