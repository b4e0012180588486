"""The index of colliding topic names ('.' read as '_') is carried from image to image over
the topics that changed, as Kafka's ``ReplicationControlManager.topicsWithCollisionChars``
is kept up to date: it must always say what a fresh look at every topic says."""

from __future__ import annotations

import random

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.controller.collision_index import CollisionIndex, collision_index
from kraft_testkit.protocol.error_codes import KafkaApiError


def test_deleted_names_stop_colliding_and_new_ones_start():
    c = Cluster(1, 1, seed=3)
    c.create_topic("a.b", 1, 1)
    c.create_topic("x_y", 1, 1)
    with pytest.raises(KafkaApiError, match="collides with existing topic: a.b"):
        c.create_topic("a_b", 1, 1)
    c.delete_topic("a.b")
    c.create_topic("a_b", 1, 1)              # free again
    with pytest.raises(KafkaApiError, match="collides with existing topic: a_b"):
        c.create_topic("a.b", 1, 1)
    with pytest.raises(KafkaApiError, match="collides with existing topic: x_y"):
        c.create_topic("x.y", 1, 1)


def test_carried_index_equals_a_fresh_one_over_random_changes():
    rng = random.Random(11)
    c = Cluster(1, 1, seed=11)
    alive: set[str] = set()
    for _ in range(40):
        name = rng.choice(["p.q", "p_q", "r.s.t", "r_s.t", "u_v", "w"])
        if name in alive and rng.random() < 0.5:
            c.delete_topic(name)
            alive.discard(name)
        else:
            try:
                c.create_topic(name, 1, 1)
                alive.add(name)
            except KafkaApiError:
                pass
        image = c.metadata
        assert collision_index(image).names == CollisionIndex(image.topics).names
