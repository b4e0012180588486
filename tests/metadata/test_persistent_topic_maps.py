"""The images' topic maps are persistent: a one-topic change copies a few entries, not the
cluster (Kafka's ``ImageTopicsDelta`` over ``ImmutableMap``; issue 23 item 1), and they read
as the dicts they replaced (order, equality, pickling, immutability)."""

from __future__ import annotations

import copy
import pickle
import random

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.metadata.pmap import PersistentMap


def _unshared(old: PersistentMap, new: PersistentMap) -> int:
    """How many of ``new``'s shard and chunk dicts are not ``old``'s (what a derive copied)."""
    mine = {id(d) for d in old._shards + old._chunks}  # noqa: SLF001
    return sum(id(d) not in mine for d in new._shards + new._chunks)  # noqa: SLF001


def test_one_change_copies_a_shard_and_a_chunk_not_the_map():
    m = PersistentMap((f"t{i:05d}", i) for i in range(10_000))
    put = m.derive([("t00042", -1)])
    assert put["t00042"] == -1 and m["t00042"] == 42
    assert _unshared(m, put) == 2          # its shard and its chunk
    added = m.derive([("new", 1)])
    assert list(added)[-1] == "new" and len(added) == 10_001
    assert _unshared(m, added) <= 2
    removed = m.derive([("t00007", None)])
    assert "t00007" not in removed and len(removed) == 9_999
    assert _unshared(m, removed) == 2
    assert m.derive([("absent", None)]) is m


def test_reads_as_the_dict_it_replaced_under_random_changes():
    """Same order, contents and equality as a dict copied and changed the same way."""
    rng = random.Random(23)
    model: dict[str, int] = {}
    m: PersistentMap[str, int] = PersistentMap()
    for step in range(3_000):
        changes = []
        for _ in range(rng.randint(1, 4)):
            key = f"k{rng.randrange(400)}"
            value = None if rng.random() < 0.3 else step
            changes.append((key, value))
        before = dict(model)
        for key, value in changes:
            if value is None:
                model.pop(key, None)
            else:
                model[key] = value
        nxt = m.derive(changes)
        assert dict(m) == before  # the old version is untouched
        m = nxt
        assert list(m.items()) == list(model.items())
        assert len(m) == len(model) and m == model
    assert all(m.get(k) == v and k in m for k, v in model.items())
    assert m.get("nope", 5) == 5 and "nope" not in m
    with pytest.raises(KeyError):
        m["nope"]  # noqa: B018


def test_immutable_pickles_and_copies():
    m = PersistentMap([("b", 2), ("a", 1)])
    for mutate in (lambda: m.__setitem__("c", 3), lambda: m.pop("a"), m.clear,
                   lambda: m.update({"c": 3}), lambda: m.__delitem__("a")):
        with pytest.raises(TypeError):
            mutate()
    back = pickle.loads(pickle.dumps(m))
    assert back == m and list(back) == ["b", "a"] and hash(back) == hash(m)
    assert copy.copy(m) is m and copy.deepcopy(m) is m
    assert m != PersistentMap([("a", 1)]) and m == {"a": 1, "b": 2}


def test_creating_one_topic_copies_no_whole_topic_map():
    """On every node, the image after one more topic shares all but a few of the topic maps'
    pieces with the image before it, however many topics the cluster holds."""
    c = Cluster(3, 3, seed=5)
    for i in range(300):
        c.create_topic(f"t{i:03d}", 1, 1)
    nodes = list(c.controllers) + list(c.brokers)
    before = {n: c.controller_node(n).image.topics for n in nodes}
    c.create_topic("one-more", 3, 3)
    c.run_until(lambda c: all(c.controller_node(n).image.topic("one-more") is not None for n in nodes),
                timeout_ms=10_000)
    for n in nodes:
        after = c.controller_node(n).image.topics
        assert len(after) == 301
        for old, new in ((before[n].topics_by_id, after.topics_by_id),
                         (before[n].topics_by_name, after.topics_by_name)):
            # 2-3 pieces (the new topic's shard and chunk) of the 21 at 300 topics; a copy of
            # the whole map, as before issue 23, would be all 21
            assert _unshared(old, new) <= 6, n
