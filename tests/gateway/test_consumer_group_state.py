"""The consumer group state pieces Kafka 4.2.1 fixes byte for byte: the records of
``__consumer_offsets`` (GroupCoordinatorRecordHelpers over the group-coordinator JSON schemas at
18d5ecd939c8), the XXH3 hash under the group's metadata hash (KIP-1101), Java's hash order the
assignors inherit, and replay giving back what was written."""

from __future__ import annotations

from kraft_testkit.gateway.groups.consumer import records as R
from kraft_testkit.gateway.groups.consumer.group import ConsumerGroup, Member
from kraft_testkit.gateway.groups.consumer.java_order import string_order, uuid_hash
from xxhash import xxh3_64_intdigest as xxh3_64
from kraft_testkit.protocol.uuid import Uuid


def _llvm_buffer(size: int) -> bytes:
    out, x = bytearray(), 1
    for _ in range(size):
        x ^= (x << 13) & (2**64 - 1)
        x ^= x >> 7
        x ^= (x << 17) & (2**64 - 1)
        out.append(x & 0xFF)
    return bytes(out)


def test_xxh3_matches_the_published_vectors_of_every_length_class():
    """The hash the metadata hash uses is hash4j's XXH3-64 (seed 0): llvm/unittests/Support/xxhashTest.cpp's
    xxh3 vectors, 0-16, 17-128, 129-240 and long inputs."""
    data = _llvm_buffer(2243)
    vectors = {0: 0x2D06800538D394C2, 1: 0xD0D496E05C553485, 3: 0x6EA2D59ACA5C3778,
               4: 0xBF65290914E80242, 8: 0xABC1413DA6CD0209, 9: 0x8BC89400BFED51F6,
               16: 0x7E46916754D7C9B8, 17: 0xED4BE912BA5F836D, 33: 0x9013FB74CA603E0C,
               65: 0x79C42431727F1012, 97: 0x8FFC6A3111FE19DA, 128: 0x06A146EE9A2DA378,
               129: 0xBC7138129BF065DA, 403: 0xCEFEB3FFA532AD8C, 512: 0xCDFA6B6268E3650F,
               1025 + 1023: 0x330CE110CBB79EAE, 2049: 0x3BA6AFA0249FEF9A,
               2243: 0x0979F786A24EDDE7}
    assert {n: xxh3_64(data[:n]) for n in vectors} == vectors
    assert xxh3_64(b"a") == 0xE6C632B61E964E1F


def test_records_are_kafkas_bytes():
    # key: int16 type then the v0 key (not flexible); value: int16 version 0 then the flexible
    # value, MetadataHash a tagged field written only when not 0
    key, value = R.epoch_record("g", 3, 5)
    assert key == bytes.fromhex("0003" "0001") + b"g"
    assert value == bytes.fromhex("0000" "00000003" "01" "00" "08" "0000000000000005")
    assert R.epoch_record("g", 3, 0)[1] == bytes.fromhex("0000" "00000003" "00")
    key, value = R.target_epoch_record("g", 7)
    assert (key, value) == (bytes.fromhex("00060001") + b"g", bytes.fromhex("00000000000700"))
    tid = Uuid(bytes(range(16)))
    key, value = R.target_member_record("g", "m", {tid: frozenset({2, 0})})
    assert key == bytes.fromhex("00070001") + b"g" + bytes.fromhex("0001") + b"m"
    assert value == bytes.fromhex("0000" "02") + bytes(range(16)) + \
        bytes.fromhex("03" "00000000" "00000002" "00" "00")
    m = Member("m", member_epoch=4, previous_member_epoch=3, state=1,
               assigned={tid: frozenset({1})}, pending_revocation={tid: frozenset({0})})
    _, value = R.current_assignment_record("g", m)
    assert value == bytes.fromhex("0000" "00000004" "00000003" "01" "02") + bytes(range(16)) + \
        bytes.fromhex("02" "00000001" "00" "02") + bytes(range(16)) + \
        bytes.fromhex("02" "00000000" "00" "00")
    assert R.member_tombstones("g", "m")[0] == (bytes.fromhex("00080001") + b"g" +
                                                bytes.fromhex("0001") + b"m", None)


def test_replay_gives_back_the_group():
    tid = Uuid(bytes(range(16)))
    a = Member("a", member_epoch=2, previous_member_epoch=1, client_id="c", client_host="/h",
               subscribed_topic_names=("t",), rebalance_timeout_ms=300, server_assignor="range",
               assigned={tid: frozenset({0, 1})})
    recs = [R.member_record("g", a), R.epoch_record("g", 2, 9),
            R.target_member_record("g", "a", {tid: frozenset({0, 1})}),
            R.target_epoch_record("g", 2), R.current_assignment_record("g", a)]
    groups: dict = {}
    for rec in recs:
        R.apply(groups, rec)
    g = groups["g"]
    assert (g.group_epoch, g.metadata_hash, g.assignment_epoch) == (2, 9, 2)
    assert g.members["a"] == a and g.state == "Stable"
    assert g.partition_epochs == {(tid, 0): 2, (tid, 1): 2}
    for rec in R.member_tombstones("g", "a"):
        R.apply(groups, rec)
    assert groups["g"].members == {} and groups["g"].state == "Empty"
    for rec in R.group_tombstones(ConsumerGroup("g")):
        R.apply(groups, rec)
    assert groups == {}


def test_java_hash_order():
    # HashMap<String, ...> of "A".."C": buckets 1, 2, 3 of 16; "Aa"/"BB" collide (insertion)
    assert string_order(["C", "A", "B"]) == ["A", "B", "C"]
    assert string_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert uuid_hash(bytes(16)) == 0
    assert uuid_hash(bytes(7) + b"\x01" + bytes(8)) == 1
