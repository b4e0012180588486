"""Random sequences of replication commands and broker state changes, many seeds: after every
step the replayed image keeps the invariants (checked by ``apply``), and what a response claims
is what replay shows."""

from __future__ import annotations

import random

import pytest
from replication_helpers import (
    alter_isr,
    apply,
    broker_epoch,
    cluster,
    creatable,
    create_request,
    ctx,
    elect,
    fence,
    reassign,
    register,
    shutting_down,
    unfence,
)

from kraft_testkit.controller import replication as R
from kraft_testkit.metadata import NO_LEADER
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E

BROKERS = (0, 1, 2, 3, 4, 5)


class Walk:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.config = {"unclean.leader.election.enable": str(self.rng.random() < 0.3).lower()}
        racks = {b: "rack" + str(b % 3) for b in BROKERS}
        self.image = cluster(BROKERS, racks=racks)
        self.controller_rng = random.Random(seed + 1000)
        self.restarts = 0

    def ctx(self):
        c = ctx(self.image, **self.config)
        c.rng = self.controller_rng
        return c

    def run(self, result_or_records):
        self.image = apply(self.image, result_or_records)

    def topics(self):
        return list(self.image.topics)

    def some_partition(self):
        topics = self.topics()
        if not topics:
            return None
        topic = self.rng.choice(topics)
        if not topic.partitions:
            return None
        pid = self.rng.choice(sorted(topic.partitions))
        return topic, pid, topic.partitions[pid]

    # ------------------------------------------------------------ steps

    def create(self):
        name = f"t{self.rng.randrange(8)}"
        result = R.create_topics(self.ctx(), create_request(
            creatable(name, self.rng.randint(1, 4), self.rng.randint(1, 3))))
        before = self.image
        self.run(result)
        (topic,) = result.response.topics
        if topic.error_code == E.NONE:
            assert self.image.topic(name).id == topic.topic_id
            assert len(self.image.topic(name).partitions) == topic.num_partitions
        else:
            assert self.image.topic(name) == before.topic(name)

    def delete(self):
        topics = self.topics()
        if topics:
            name = self.rng.choice(topics).name
            self.run(R.delete_topics(self.ctx(), M.DeleteTopicsRequest(topic_names=[name])))
            assert self.image.topic(name) is None

    def grow(self):
        found = self.some_partition()
        if found:
            topic = found[0]
            CP = M.CreatePartitionsRequest
            self.run(R.create_partitions(self.ctx(), CP(topics=[CP.CreatePartitionsTopic(
                name=topic.name, count=len(topic.partitions) + 1, assignments=None)])))

    def fence(self):
        live = [b for b in BROKERS if not self.image.cluster.brokers[b].fenced]
        if live:
            b = self.rng.choice(live)
            self.run([*R.handle_broker_fenced(self.ctx(), b), fence(self.image, b)])
            assert R.partitions_led_by(self.image, b) == 0

    def unfence(self):
        down = [b for b in BROKERS if self.image.cluster.brokers[b].fenced]
        if down:
            b = self.rng.choice(down)
            reg = self.image.cluster.brokers[b]
            records = []
            if reg.in_controlled_shutdown:  # a restart: register again with a new epoch
                self.restarts += 1
                records.append(register(b, rack=reg.rack, fenced=True).replace(
                    broker_epoch=broker_epoch(b) + 1000 * self.restarts))
                self.run(records)
            self.run([*R.handle_broker_unfenced(self.ctx(), b), unfence(self.image, b)])

    def shutdown(self):
        live = [b for b in BROKERS if not self.image.cluster.brokers[b].fenced
                and not self.image.cluster.brokers[b].in_controlled_shutdown]
        if live:
            b = self.rng.choice(live)
            self.run([*R.handle_broker_in_controlled_shutdown(self.ctx(), b),
                      shutting_down(self.image, b)])
            assert R.partitions_led_by(self.image, b) == 0
            self.run([*R.handle_broker_fenced(self.ctx(), b), fence(self.image, b)])

    def alter_isr(self):
        found = self.some_partition()
        if not found or found[2].leader == NO_LEADER:
            return
        topic, pid, reg = found
        others = [r for r in reg.replicas if r != reg.leader and self.rng.random() < 0.6]
        isr = [reg.leader, *others]
        result = R.alter_partition(self.ctx(), alter_isr(self.image, topic.name, pid, isr))
        self.run(result)
        p = result.response.topics[0].partitions[0]
        after = self.image.topic(topic.id).partitions[pid]
        if p.error_code == E.NONE:
            assert (p.leader_id, p.isr, p.leader_epoch, p.partition_epoch) == \
                (after.leader, after.isr, after.leader_epoch, after.partition_epoch)
        elif p.error_code == E.NEW_LEADER_ELECTED:
            assert after.leader != reg.leader and after.adding_replicas == ()
        else:
            assert p.error_code == E.INELIGIBLE_REPLICA and after == reg

    def reassign(self):
        found = self.some_partition()
        if found:
            topic, pid, _ = found
            target = None if self.rng.random() < 0.3 else \
                self.rng.sample(BROKERS, self.rng.randint(1, 3))
            result = R.alter_partition_reassignments(self.ctx(), reassign(topic.name, pid, target))
            self.run(result)
            code = result.response.responses[0].partitions[0].error_code
            assert code in (E.NONE, E.NO_REASSIGNMENT_IN_PROGRESS, E.INVALID_REPLICA_ASSIGNMENT)

    def elect(self):
        kind = self.rng.choice((R.ELECTION_PREFERRED, R.ELECTION_UNCLEAN))
        self.run(R.elect_leaders(self.ctx(), elect(kind, None)))

    def balance(self):
        self.run(R.balance_partition_leaders(self.ctx())[0])

    STEPS = ("create", "create", "delete", "grow", "fence", "unfence", "unfence", "shutdown",
             "alter_isr", "alter_isr", "alter_isr", "reassign", "reassign", "elect", "balance")


@pytest.mark.parametrize("seed", range(60))
def test_random_walk_keeps_invariants(seed):
    walk = Walk(seed)
    for _ in range(70):
        getattr(walk, walk.rng.choice(Walk.STEPS))()
    listing = R.list_partition_reassignments(walk.image, M.ListPartitionReassignmentsRequest())
    for topic in listing.topics:
        for p in topic.partitions:
            reg = walk.image.topic(topic.name).partitions[p.partition_index]
            assert R.is_reassigning(reg) and p.replicas == reg.replicas


def test_same_seed_same_records():
    def records(seed):
        walk = Walk(seed)
        for _ in range(40):
            getattr(walk, walk.rng.choice(Walk.STEPS))()
        return walk.image.write()
    assert records(3) == records(3)
