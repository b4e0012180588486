"""FetchSessionHandlerTest (Kafka 4.2.1, clients): the fetcher's side of KIP-227 sessions, on
the kit's ``broker/fetch_session.py``. Kafka's ``Builder`` (``add`` then ``build``) is
``FetchSessionHandler.build`` over the wanted partitions in order; a ``FetchResponse`` is
(error, session id, its partitions resolved to names, its topic ids). Version 12 is the
topic-name dialect (ids all ZERO), 17 the kit's (topic ids)."""

from __future__ import annotations

import random

import pytest

from kraft_testkit.broker.fetch_session import (
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    FetchMetadata,
    FetchSessionHandler,
    PartitionData,
    TopicIdPartition,
    find_missing,
    next_epoch,
)
from kraft_testkit.protocol.error_codes import ErrorCode as E
from kraft_testkit.protocol.uuid import Uuid

LATEST = 17
RNG = random.Random(227)


def rid() -> Uuid:
    return Uuid.random(RNG)


def pd(tid: Uuid, fetch_offset: int, log_start: int, max_bytes: int) -> PartitionData:
    return PartitionData(tid, fetch_offset, log_start, max_bytes)


def ids_for(version: int, *names: str) -> dict[str, Uuid]:
    """Kafka's addTopicId: a random id from v13 on, ZERO before."""
    return {n: rid() if version >= 13 else Uuid.ZERO for n in names}


def respond(h: FetchSessionHandler, version: int, session_id: int, entries, error=E.NONE,
            throttle: int = 0) -> bool:
    """handleResponse of FetchResponse.of(error, throttle, session_id, respMap(entries));
    entries: (topic, partition, topic id)."""
    parts, ids = [], []
    for topic, partition, tid in entries:
        name = h.session_topic_names.get(tid) if version >= 13 else topic
        parts.append((name, partition))
        if tid not in ids:
            ids.append(tid)
    return h.handle_response(error, session_id, parts, ids, version, throttle)


@pytest.mark.kafka("FetchSessionHandlerTest#testFindMissing")
def test_find_missing():
    f0, f1, b0, b1, z0, z1 = ("foo", 0), ("foo", 1), ("bar", 0), ("bar", 1), ("baz", 0), \
        ("baz", 1)
    assert find_missing([f0], {f0}) == []
    assert find_missing([f0], {f1}) == [f0]
    assert find_missing([f0, f1], {z0}) == [f0, f1]
    assert set(find_missing([f0, f1, b0, b1], {b0, z0, z1})) == {b1, f0, f1}
    assert find_missing([f0, f1, b0, b1, z1], {f0, f1, b0, b1, z0, z1}) == []


@pytest.mark.kafka("FetchSessionHandlerTest#testSessionless")
@pytest.mark.parametrize("version", [12, LATEST])
def test_sessionless(version):
    h = FetchSessionHandler(1)
    foo = ids_for(version, "foo")["foo"]
    data = h.build({("foo", 0): pd(foo, 0, 100, 200), ("foo", 1): pd(foo, 10, 110, 210)})
    want = {("foo", 0): pd(foo, 0, 100, 200), ("foo", 1): pd(foo, 10, 110, 210)}
    assert list(data.to_send.items()) == list(want.items())
    assert list(data.session_partitions.items()) == list(want.items())
    assert data.metadata == FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)
    respond(h, version, INVALID_SESSION_ID, [("foo", 0, foo), ("foo", 1, foo)])
    data2 = h.build({("foo", 0): pd(foo, 0, 100, 200)})
    assert data2.metadata == FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)
    assert list(data2.to_send.items()) == [(("foo", 0), pd(foo, 0, 100, 200))]
    assert list(data2.session_partitions.items()) == [(("foo", 0), pd(foo, 0, 100, 200))]


@pytest.mark.kafka("FetchSessionHandlerTest#testIncrementals")
@pytest.mark.parametrize("version", [12, LATEST])
def test_incrementals(version):
    h = FetchSessionHandler(1)
    ids = ids_for(version, "foo", "bar")
    foo, bar = ids["foo"], ids["bar"]
    f0, f1, b0 = ("foo", 0), ("foo", 1), ("bar", 0)
    data = h.build({f0: pd(foo, 0, 100, 200), f1: pd(foo, 10, 110, 210)})
    assert list(data.to_send) == [f0, f1] and data.metadata == FetchMetadata(0, INITIAL_EPOCH)
    respond(h, version, 123, [("foo", 0, foo), ("foo", 1, foo)])
    # an incremental request which adds one partition and modifies another
    data2 = h.build({f0: pd(foo, 0, 100, 200), f1: pd(foo, 10, 120, 210),
                     b0: pd(bar, 20, 200, 200)})
    assert not data2.metadata.is_full
    assert list(data2.session_partitions.items()) == [
        (f0, pd(foo, 0, 100, 200)), (f1, pd(foo, 10, 120, 210)), (b0, pd(bar, 20, 200, 200))]
    assert list(data2.to_send.items()) == [(b0, pd(bar, 20, 200, 200)),
                                           (f1, pd(foo, 10, 120, 210))]
    respond(h, version, 123, [("foo", 1, foo)])
    # INVALID_FETCH_SESSION_EPOCH: the next request closes the session and asks for a new one
    respond(h, version, INVALID_SESSION_ID, [], error=E.INVALID_FETCH_SESSION_EPOCH)
    data4 = h.build({f0: pd(foo, 0, 100, 200), f1: pd(foo, 10, 120, 210),
                     b0: pd(bar, 20, 200, 200)})
    assert data4.metadata.is_full
    assert data4.metadata == FetchMetadata(data2.metadata.session_id, INITIAL_EPOCH)
    assert list(data4.to_send) == list(data4.session_partitions) == [f0, f1, b0]


@pytest.mark.kafka("FetchSessionHandlerTest#testIncrementalPartitionRemoval")
@pytest.mark.parametrize("version", [12, LATEST])
def test_incremental_partition_removal(version):
    h = FetchSessionHandler(1)
    ids = ids_for(version, "foo", "bar")
    foo, bar = ids["foo"], ids["bar"]
    f0, f1, b0 = ("foo", 0), ("foo", 1), ("bar", 0)
    data = h.build({f0: pd(foo, 0, 100, 200), f1: pd(foo, 10, 110, 210),
                    b0: pd(bar, 20, 120, 220)})
    assert data.metadata.is_full and list(data.to_send) == [f0, f1, b0]
    respond(h, version, 123, [("foo", 0, foo), ("foo", 1, foo), ("bar", 0, bar)])
    # an incremental request which removes two partitions
    data2 = h.build({f1: pd(foo, 10, 110, 210)})
    assert not data2.metadata.is_full and data2.metadata == FetchMetadata(123, 1)
    assert list(data2.session_partitions.items()) == [(f1, pd(foo, 10, 110, 210))]
    assert data2.to_send == {}
    assert set(data2.to_forget) == {TopicIdPartition(foo, "foo", 0),
                                    TopicIdPartition(bar, "bar", 0)}
    # FETCH_SESSION_ID_NOT_FOUND: the next request is a session-establishing full one
    respond(h, version, INVALID_SESSION_ID, [], error=E.FETCH_SESSION_ID_NOT_FOUND)
    data3 = h.build({f0: pd(foo, 0, 100, 200)})
    assert data3.metadata.is_full and data3.metadata == FetchMetadata(0, INITIAL_EPOCH)
    assert list(data3.session_partitions) == list(data3.to_send) == [f0]


@pytest.mark.kafka("FetchSessionHandlerTest#testTopicIdReplaced")
@pytest.mark.parametrize("starts,ends", [(True, True), (True, False), (False, True),
                                         (False, False)])
def test_topic_id_replaced(starts, ends):
    tp = ("foo", 0)
    h = FetchSessionHandler(1)
    id1 = rid() if starts else Uuid.ZERO
    data = h.build({tp: pd(id1, 0, 100, 200)})
    assert data.metadata.is_full and data.can_use_topic_ids == starts
    respond(h, LATEST if starts else 12, 123, [("foo", 0, id1)])
    id2 = rid() if ends else Uuid.ZERO
    data2 = h.build({tp: pd(id2, 0, 100, 200)})
    if starts and ends:
        assert data2.to_replace == [TopicIdPartition(id1, "foo", 0)]
        assert list(data2.to_send.items()) == [(tp, pd(id2, 0, 100, 200))]
        assert h.session_topic_names == {id2: "foo"}
    elif starts or ends:
        assert data2.to_replace == []
        assert list(data2.to_send.items()) == [(tp, pd(id2, 0, 100, 200))]
        assert h.session_topic_names == ({id2: "foo"} if ends else {})
    else:
        assert data2.to_replace == [] and data2.to_send == {}
        assert h.session_topic_names == {}
    assert list(data2.session_partitions.items()) == [(tp, pd(id2, 0, 100, 200))]
    assert data2.metadata == FetchMetadata(123, 1)
    assert data2.can_use_topic_ids == ends


@pytest.mark.kafka("FetchSessionHandlerTest#testSessionEpochWhenMixedUsageOfTopicIDs")
@pytest.mark.parametrize("starts", [True, False])
def test_session_epoch_when_mixed_usage_of_topic_ids(starts):
    foo = rid() if starts else Uuid.ZERO
    bar = Uuid.ZERO if starts else rid()
    h = FetchSessionHandler(1)
    data = h.build({("foo", 0): pd(foo, 0, 100, 200)})
    assert data.metadata.is_full and data.can_use_topic_ids == starts
    respond(h, LATEST if starts else 12, 123, [("foo", 0, foo)])
    data2 = h.build({("foo", 0): pd(foo, 10, 110, 210), ("bar", 1): pd(bar, 0, 100, 200)})
    assert data2.metadata == FetchMetadata(123, 1) and not data2.can_use_topic_ids


@pytest.mark.kafka("FetchSessionHandlerTest#testIdUsageWithAllForgottenPartitions")
@pytest.mark.parametrize("use_ids", [True, False])
def test_id_usage_with_all_forgotten_partitions(use_ids):
    tid = rid() if use_ids else Uuid.ZERO
    h = FetchSessionHandler(1)
    data = h.build({("foo", 0): pd(tid, 0, 100, 200)})
    assert data.metadata.is_full and data.can_use_topic_ids == use_ids
    respond(h, LATEST if use_ids else 12, 123, [("foo", 0, tid)])
    data2 = h.build({})
    assert data2.to_forget == [TopicIdPartition(tid, "foo", 0)]
    assert data2.metadata == FetchMetadata(123, 1) and data2.can_use_topic_ids == use_ids


@pytest.mark.kafka("FetchSessionHandlerTest#testOkToAddNewIdAfterTopicRemovedFromSession")
def test_ok_to_add_new_id_after_topic_removed_from_session():
    tid = rid()
    h = FetchSessionHandler(1)
    data = h.build({("foo", 0): pd(tid, 0, 100, 200)})
    assert data.metadata.is_full and data.can_use_topic_ids
    respond(h, LATEST, 123, [("foo", 0, tid)])
    data2 = h.build({})
    assert data2.to_send == {} and data2.session_partitions == {}
    respond(h, LATEST, 123, [])
    data3 = h.build({("foo", 0): pd(rid(), 0, 100, 200)})
    assert data3.metadata == FetchMetadata(123, 2) and data3.can_use_topic_ids


@pytest.mark.kafka("FetchSessionHandlerTest#testVerifyFullFetchResponsePartitions")
@pytest.mark.parametrize("version", [12, LATEST])
def test_verify_full_fetch_response_partitions(version):
    h = FetchSessionHandler(1)
    ids = ids_for(version, "foo", "bar")
    foo, bar = ids["foo"], ids["bar"]
    three = [("foo", 0, foo), ("foo", 1, foo), ("bar", 0, bar)]
    names = {foo: "foo", bar: "bar"}

    def named(entries):  # responseData(topicNames, version): the test's own name map
        return ([(names.get(t, n) if version >= 13 else n, p) for n, p, t in entries],
                list(dict.fromkeys(t for _, _, t in entries)))

    issue = h.verify_full(*named(three), version)
    assert "extraPartitions=" in issue and "omittedPartitions=" not in issue
    h.build({("foo", 0): pd(foo, 0, 100, 200), ("foo", 1): pd(foo, 10, 110, 210),
             ("bar", 0): pd(bar, 20, 120, 220)})
    assert h.verify_full(*named(three), version) is None
    issue3 = h.verify_full(*named(three[:2]), version)
    assert "extraPartitions=" not in issue3 and "omittedPartitions=" in issue3


@pytest.mark.kafka("FetchSessionHandlerTest#testVerifyFullFetchResponsePartitionsWithTopicIds")
def test_verify_full_fetch_response_partitions_with_topic_ids():
    h = FetchSessionHandler(1)
    ids = ids_for(LATEST, "foo", "bar", "extra2")
    names = {v: k for k, v in ids.items()}

    def named(entries):
        return ([(names[t], p) for _, p, t in entries],
                list(dict.fromkeys(t for _, _, t in entries)))

    with_extra = [("foo", 0, ids["foo"]), ("extra2", 1, ids["extra2"]), ("bar", 0, ids["bar"])]
    issue = h.verify_full(*named(with_extra), LATEST)
    assert "extraPartitions=" in issue and "omittedPartitions=" not in issue
    h.build({("foo", 0): pd(ids["foo"], 0, 100, 200), ("bar", 0): pd(ids["bar"], 20, 120, 220)})
    issue2 = h.verify_full(*named(with_extra), LATEST)
    assert "extraPartitions=" in issue2 and "omittedPartitions=" not in issue2
    assert h.verify_full(*named([("foo", 0, ids["foo"]), ("bar", 0, ids["bar"])]),
                         LATEST) is None


@pytest.mark.kafka("FetchSessionHandlerTest#testTopLevelErrorResetsMetadata")
def test_top_level_error_resets_metadata():
    h = FetchSessionHandler(1)
    foo = rid()
    data = h.build({("foo", 0): pd(foo, 0, 100, 200), ("foo", 1): pd(foo, 10, 110, 210)})
    assert data.metadata == FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)
    respond(h, LATEST, 123, [("foo", 0, foo), ("foo", 1, foo)])
    data2 = h.build({("unknown", 0): pd(rid(), 0, 100, 200)})
    assert not data2.metadata.is_full
    assert data2.metadata == FetchMetadata(123, next_epoch(INITIAL_EPOCH))
    assert not respond(h, LATEST, 123, [("unknown", 0, rid())], error=E.UNKNOWN_TOPIC_ID)
    data3 = h.build({})
    assert data3.metadata == FetchMetadata(123, INITIAL_EPOCH)

