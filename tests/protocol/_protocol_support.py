"""Shared helpers of the protocol tests: where the golden logs live, the list of every declared
(message class, version), and one Hypothesis strategy builder driven by the classes' field specs.

Imported by the test modules of this folder as a plain module (pytest puts this folder on
``sys.path``; the leading underscore keeps pytest from collecting it).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest
from hypothesis import strategies as st

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.codegen import Message
from kraft_testkit.protocol.schema import FieldSpec
from kraft_testkit.protocol.uuid import Uuid

# ------------------------------------------------------------------ golden files

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "apache-kafka-pr15553-023aafc"
FOLDERS = {
    "A": GOLDEN / "A_mv16_3brokers",
    "B": GOLDEN / "B_mv18_3brokers_restart",
    "C": GOLDEN / "C_mv18_3brokers",
}
SEGMENT = "__cluster_metadata-0/00000000000000000000.log"
DECODED_JSON = "decoded-00000000000000000000.log.json"

requires_golden = pytest.mark.skipif(
    not (GOLDEN / "B_mv18_3brokers_restart" / SEGMENT).is_file(),
    reason=f"golden Kafka logs not found at {GOLDEN} (they ship in tests/golden)",
)


def segment_path(folder: str) -> Path:
    return FOLDERS[folder] / SEGMENT


@functools.cache
def segment_bytes(folder: str) -> bytes:
    return segment_path(folder).read_bytes()


# ------------------------------------------------------------------ every declared class


def _all_classes() -> list[type[Message]]:
    seen: dict[int, type[Message]] = {}
    for table in (M.BY_NAME.values(), M.DRAFT_METADATA.values(), M.PRERELEASE_METADATA.values()):
        for cls in table:
            seen.setdefault(id(cls), cls)
    return sorted(seen.values(), key=class_id)


def class_id(cls: type[Message]) -> str:
    """A readable unique id: ``TopicRecord``, ``draft:TopicRecord``, ``prerelease-...:...``."""
    dialect = cls._spec.extra.get("dialect")
    return f"{dialect}:{cls.__name__}" if dialect else cls.__name__


ALL_CLASSES = _all_classes()
ALL_CLASS_VERSIONS = [(cls, v) for cls in ALL_CLASSES for v in cls.valid_versions()]
ALL_CLASS_VERSION_IDS = [f"{class_id(c)}-v{v}" for c, v in ALL_CLASS_VERSIONS]


def is_flexible(cls: type[Message], version: int) -> bool:
    return version in cls._flexible


def max_declared_tag(cls: type[Message]) -> int:
    """The highest tag any field of ``cls`` declares in any version (-1 when none)."""
    return max((f.tag for f in cls._field_specs if f.tag is not None), default=-1)


# ------------------------------------------------------------------ strategies

_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}

uuids = st.binary(min_size=16, max_size=16).map(Uuid)


def _scalar(t: str) -> st.SearchStrategy:
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        return st.integers(lo, hi)
    if t == "bool":
        return st.booleans()
    if t == "float64":
        # NaN is never equal to itself; infinities are not JSON.
        return st.floats(allow_nan=False, allow_infinity=False)
    if t == "string":
        return st.text(max_size=12)
    if t in ("bytes", "records"):
        return st.binary(max_size=24)
    if t == "uuid":
        return uuids
    raise AssertionError(f"no strategy for type {t!r}")


def unknown_tags(cls: type[Message], *, max_size: int = 2) -> st.SearchStrategy:
    """Sorted, distinct tags above every tag ``cls`` declares, with arbitrary payloads."""
    lo = max_declared_tag(cls) + 1
    return st.lists(
        st.tuples(st.integers(lo, (1 << 31) - 1), st.binary(max_size=8)),
        max_size=max_size, unique_by=lambda t: t[0],
    ).map(lambda tags: tuple(sorted(tags)))


@functools.cache
def message_strategy(cls: type[Message], version: int, *, with_unknown_tags: bool = False,
                     max_list: int = 3) -> st.SearchStrategy:
    """Instances of ``cls`` (a root message or one of its structs) valid at ``version``.

    Fields the version lacks keep their default; nullable fields may be null; flexible versions
    may carry unknown tagged fields in every struct when ``with_unknown_tags``.
    """
    kwargs: dict[str, st.SearchStrategy] = {}
    for f, default in zip(cls._field_specs, cls._defaults):
        if version not in f.versions:
            kwargs[f.py_name] = st.just(default)
            continue
        kwargs[f.py_name] = _field_strategy(cls, f, version, with_unknown_tags, max_list)
    if with_unknown_tags and is_flexible(cls, version):
        kwargs["_unknown_tags"] = unknown_tags(cls)
    return st.builds(cls, **kwargs)


def _field_strategy(cls: type[Message], f: FieldSpec, version: int, with_unknown_tags: bool,
                    max_list: int) -> st.SearchStrategy:
    if f.is_struct:
        sub = cls._root.STRUCTS[f.element_type]
        elem = st.deferred(lambda: message_strategy(sub, version,
                                                    with_unknown_tags=with_unknown_tags,
                                                    max_list=max(1, max_list - 1)))
    else:
        elem = _scalar(f.element_type)
    strat = st.lists(elem, max_size=max_list).map(tuple) if f.is_array else elem
    if version in f.nullable:
        strat = st.none() | strat
    return strat


def strip_unknown_tags(msg: Message) -> Message:
    """``msg`` with the unknown tagged fields of every struct in it dropped (as JSON does)."""
    values = {}
    for f, value in zip(type(msg)._field_specs, msg):
        if f.is_struct and value is not None:
            value = (tuple(strip_unknown_tags(x) for x in value) if f.is_array
                     else strip_unknown_tags(value))
        values[f.py_name] = value
    return type(msg)(**values)


# ------------------------------------------------------------------ a deterministic rich sample


def rich_sample(cls: type[Message], version: int, seed: int = 0, depth: int = 0) -> Message:
    """A deterministic instance of ``cls`` at ``version`` with every present field set (mostly to
    non-default values: two-element arrays, non-empty strings, extreme ints), so its encoding
    walks every field's code path."""
    import random

    rng = random.Random(f"{cls.__qualname__}-{version}-{seed}-{depth}")
    kwargs = {}
    for f in cls._field_specs:
        if version not in f.versions:
            continue
        if f.is_struct:
            sub = cls._root.STRUCTS[f.element_type]
            one = lambda k: rich_sample(sub, version, seed + k, depth + 1)  # noqa: E731
        else:
            one = lambda k, t=f.element_type: _rich_scalar(t, rng)  # noqa: E731
        kwargs[f.py_name] = tuple(one(k) for k in range(2)) if f.is_array else one(0)
    return cls(**kwargs)


def _rich_scalar(t: str, rng) -> object:
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        return rng.choice([lo, hi, rng.randint(lo, hi), 1])
    if t == "bool":
        return True
    if t == "float64":
        return rng.choice([math.pi, -1.5e300, 0.25])
    if t == "string":
        return rng.choice(["x", "héllo", "kafka-" + str(rng.randint(0, 999))])
    if t in ("bytes", "records"):
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 9)))
    if t == "uuid":
        return Uuid(bytes(rng.randrange(256) for _ in range(16)))
    raise AssertionError(t)
