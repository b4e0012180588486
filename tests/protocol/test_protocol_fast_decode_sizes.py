"""The fast decoders' size-dependent paths: compact lengths of one, two and three bytes (read
inline, inline, and by the varint reader), short fixed-width arrays through precompiled Structs
and long ones through a format built per array, one uuid inline and several through the helper.
Each size decodes to what the checked decoder gives, and truncations fail the same way.
"""

from __future__ import annotations

import pytest

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.errors import DecodeError
from kraft_testkit.protocol.uuid import Uuid

SIZES = [0, 1, 2, 63, 64, 65, 126, 127, 128, 300, 16382, 16383, 16384, 20000]


def both(cls, version, raw):
    cls.decode(cls().encode(version), version)  # generates both decoders
    return cls._decoders[version], cls._checked[version]


def outcome(fn, raw):
    try:
        return ("ok", fn(raw, 0))
    except DecodeError as e:
        return ("error", type(e), str(e), e.offset, e.path)


@pytest.mark.parametrize("n", SIZES)
def test_arrays_of_every_size_decode_as_the_checked_decoder_does(n):
    rec = M.PartitionRecord(partition_id=7, topic_id=Uuid(bytes(range(16))),
                            replicas=tuple(range(n)), isr=tuple(range(n // 2)),
                            directories=tuple(Uuid(k.to_bytes(16, "big")) for k in range(n)),
                            eligible_leader_replicas=tuple(range(n % 70)))
    raw = rec.encode(2)
    fast, checked = both(M.PartitionRecord, 2, raw)
    assert fast(raw, 0) == checked(raw, 0) == (rec, len(raw))
    assert M.PartitionRecord.decode(raw, 2) == rec
    for cut in {len(raw) - 1, len(raw) // 2, 40, 3}:
        if 0 < cut < len(raw):
            assert outcome(fast, raw[:cut]) == outcome(checked, raw[:cut])


@pytest.mark.parametrize("n", SIZES)
def test_strings_and_bytes_of_every_length_decode_as_the_checked_decoder_does(n):
    fr = M.FetchResponse
    msg = fr(responses=[fr.FetchableTopicResponse(topic_id=Uuid.METADATA_TOPIC_ID, partitions=[
        fr.PartitionData(partition_index=0, records=bytes(range(256)) * (n // 256) + bytes(n % 256),
                         aborted_transactions=None)])],
        node_endpoints=[fr.NodeEndpoint(node_id=1, host="h" * n, port=9092, rack=None)])
    raw = msg.encode(17)
    fast, checked = both(fr, 17, raw)
    assert fast(raw, 0) == checked(raw, 0) == (msg, len(raw))
    for cut in {len(raw) - 1, len(raw) - n // 2 - 3, 30}:
        if 0 < cut < len(raw):
            assert outcome(fast, raw[:cut]) == outcome(checked, raw[:cut])


def test_a_length_past_the_end_is_the_checked_decoders_error():
    reg = M.BrokerRegistrationRequest(cluster_id="c" * 200, log_dirs=[Uuid.METADATA_TOPIC_ID])
    raw = bytearray(reg.encode(4))
    fast, checked = both(M.BrokerRegistrationRequest, 4, bytes(raw))
    raw[4:6] = bytes([0xFF, 0x7F])  # the cluster id's length: 16383 - 1 bytes, far past the end
    first = outcome(fast, bytes(raw))
    assert first == outcome(checked, bytes(raw)) and first[0] == "error"
    assert first[4] == "ClusterId"


def test_decode_from_takes_a_bytearray_or_memoryview_like_bytes():
    """decode_from on a bytearray or memoryview decodes as on bytes (the fast decoders hash
    slices, which only bytes allow)."""
    from kraft_testkit.protocol import messages as M

    rec = M.TopicRecord(name="t", topic_id=M.TopicRecord().topic_id)
    raw = rec.encode(0)
    for data in (raw, bytearray(raw), memoryview(raw)):
        assert M.TopicRecord.decode_from(data, 0, 0) == (rec, len(raw))
