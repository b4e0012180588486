"""``to_json_text`` (generated per version) prints exactly what ``json.dumps`` of ``to_json``
prints, for every message and struct version, for golden Kafka records and for hand-built
messages whose values are of another type than the schema's (those take the generic path).

The decoders' uuid interning is checked here too: shared objects, equal values, bounded table.
"""

from __future__ import annotations

import json
import math

import pytest
from _protocol_support import (
    ALL_CLASS_VERSION_IDS,
    ALL_CLASS_VERSIONS,
    message_strategy,
    requires_golden,
    rich_sample,
    segment_bytes,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraft_testkit.protocol import frames, jsontext, log
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol import uuid as uuid_module
from kraft_testkit.protocol.errors import UnsupportedVersionError
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.tools.dump_log import payload_json


def reference(msg, version: int) -> str:
    return json.dumps(msg.to_json(version), separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize(("cls", "version"), ALL_CLASS_VERSIONS, ids=ALL_CLASS_VERSION_IDS)
def test_text_is_json_dumps_of_to_json_for_every_version(cls, version):
    for seed in range(3):
        msg = rich_sample(cls, version, seed=seed)
        assert msg.to_json_text(version) == reference(msg, version)
        # the generated function itself handles it (no fallback to the generic path)
        assert type(msg)._json_text[version](msg) == reference(msg, version)
    empty = cls()  # defaults: null fields, empty arrays, tagged fields left out
    assert empty.to_json_text(version) == reference(empty, version)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_text_is_json_dumps_of_to_json_for_random_messages(data):
    cls, version = data.draw(st.sampled_from(ALL_CLASS_VERSIONS))
    msg = data.draw(message_strategy(cls, version, with_unknown_tags=True))
    assert msg.to_json_text(version) == reference(msg, version)


def test_special_values_print_as_json_dumps_prints_them():
    quota = M.ClientQuotaRecord
    for value in (math.nan, math.inf, -math.inf, 1e16, 5e-324, -0.0):
        rec = quota(entity=[quota.EntityData(entity_type="client-id", entity_name=None)],
                    key="producer_byte_rate", value=value, remove=False)
        assert rec.to_json_text(0) == reference(rec, 0)
    topic = M.TopicRecord(name='quo"te\\ \n\u2028 ünïcode \x01', topic_id=Uuid.METADATA_TOPIC_ID)
    assert topic.to_json_text(0) == reference(topic, 0)


def test_values_of_another_type_take_the_generic_path():
    # built by hand, not decoded: a bool, a float and a list where the schema says int32
    reg = M.RegisterBrokerRecord(broker_id=True, broker_epoch=2.5, rack=None)
    assert reg.to_json_text(0) == reference(reg, 0)
    assert '"brokerId":true' in reg.to_json_text(0)
    part = M.PartitionRecord(partition_id=0, replicas=(1, True, 3))
    assert part.to_json_text(0) == reference(part, 0)


def test_unsupported_version_is_a_typed_error():
    with pytest.raises(UnsupportedVersionError):
        M.TopicRecord(name="t").to_json_text(99)


def test_metadata_record_text_wraps_type_and_version():
    rec = frames.MetadataRecord(M.TopicRecord(name="orders", topic_id=Uuid.METADATA_TOPIC_ID), 0)
    text = rec.to_json_text()
    assert text == json.dumps(rec.to_json(), separators=(",", ":"), ensure_ascii=False)
    assert text.startswith('{"type":"TOPIC_RECORD","version":0,"data":{"name":"orders"')


@requires_golden
@pytest.mark.parametrize("folder", ["A", "B", "C"])
def test_golden_records_print_as_before(folder):
    n = 0
    for b in log.iter_log(segment_bytes(folder), prerelease=folder == "A"):
        for r in b.records:
            payload = r.payload
            if payload is None:
                continue
            if isinstance(payload, frames.MetadataRecord):
                expected = json.dumps(payload.to_json(), separators=(",", ":"),
                                      ensure_ascii=False)
            elif payload.message is not None:
                expected = reference(payload.message, payload.version)
            else:
                expected = json.dumps({"version": payload.version})
            assert payload_json(payload) == expected
            n += 1
    assert n > 10


def test_json_dumps_helper_matches_json_dumps():
    obj = {"a": [1, 2.5, None, True, "ü\n"], "b": {"c": float("nan")}}
    assert jsontext.dumps(obj) == json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# ------------------------------------------------------------------ uuid interning


def test_decoded_uuids_are_interned_and_equal():
    topic_id = Uuid(bytes(range(16)))
    raw = M.TopicRecord(name="t", topic_id=topic_id).encode(0)
    a, b = M.TopicRecord.decode(raw, 0), M.TopicRecord.decode(raw, 0)
    assert a.topic_id == topic_id and type(a.topic_id) is Uuid
    assert a.topic_id is b.topic_id


def test_uuid_table_is_bounded(monkeypatch):
    monkeypatch.setattr(uuid_module, "_CACHE_MAX", 8)
    uuid_module._CACHE.clear()  # earlier tests in this worker may have filled it past 8
    ids = [Uuid(bytes([k]) * 16) for k in range(1, 30)]
    for u in ids:
        raw = M.TopicRecord(name="t", topic_id=u).encode(0)
        assert M.TopicRecord.decode(raw, 0).topic_id == u
        assert len(uuid_module._CACHE) <= 8


def test_uuid_array_table_is_bounded_and_shares_equal_runs(monkeypatch):
    monkeypatch.setattr(uuid_module, "_CACHE_MAX", 8)
    uuid_module._CACHE.clear()  # earlier tests in this worker may have filled them past 8
    uuid_module._ARRAYS.clear()
    decoded = []
    for k in range(1, 30):
        dirs = (Uuid(bytes([k]) * 16), Uuid(bytes([k + 100]) * 16))
        raw = M.PartitionRecord(partition_id=k, replicas=(1, 2), directories=dirs).encode(2)
        got = M.PartitionRecord.decode(raw, 2)
        assert got.directories == dirs and type(got.directories) is tuple
        assert len(uuid_module._ARRAYS) <= 8
        decoded.append((raw, got))
    raw, first = decoded[-1]
    assert M.PartitionRecord.decode(raw, 2).directories is first.directories
