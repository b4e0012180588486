"""A forwarded read goes back as soon as the controller answers, and so does a write that
changed nothing (validate-only, or failed); a forwarded write waits until the running brokers
replayed the commit (at most PROPAGATION_WAIT_MS), as docs/clients.md says.
Measured in virtual time while one broker is cut off from the controllers (so it never catches
up)."""

from __future__ import annotations

import pytest
from gateway_helpers import RawClient

from kraft_testkit.gateway.forwarding import PROPAGATION_WAIT_MS
from kraft_testkit.protocol import messages as M


def _behind(srv) -> int:
    """Cut the last broker off the controllers and let the controllers commit past it."""
    with srv.hold() as c:
        lagging = c.broker_ids[-1]
        c.sim.network.partition([lagging], list(c.controller_ids))
        c.run_for(2_000)  # NoOpRecords every metadata.max.idle.interval.ms
        assert c.broker(lagging).metadata_offset < c.metadata.provenance.offset
        return lagging


def _timed(srv, client: RawClient, body, version: int):
    before = srv.call(lambda c: c.now_ms)
    answer = client.request(body, version)
    return answer, srv.call(lambda c: c.now_ms) - before


@pytest.mark.kraft(brokers=3, seed=21)
def test_reads_answer_at_once_while_a_broker_lags(kraft_bootstrap, kraft_cluster):
    _behind(kraft_bootstrap)
    client = RawClient(kraft_bootstrap.address(kraft_cluster.broker_ids[0])[1])
    Q = M.DescribeQuorumRequest
    quorum, took = _timed(kraft_bootstrap, client, Q(topics=(Q.TopicData(
        topic_name="__cluster_metadata", partitions=(Q.PartitionData(partition_index=0),)),)), 2)
    assert quorum.topics[0].partitions[0].leader_id == kraft_cluster.active_controller.id
    assert took < 1_000, f"DescribeQuorum took {took} virtual ms"
    listed, took = _timed(kraft_bootstrap, client,
                          M.ListPartitionReassignmentsRequest(timeout_ms=30_000, topics=None), 0)
    assert listed.error_code == 0 and listed.topics == ()
    assert took < 1_000, f"ListPartitionReassignments took {took} virtual ms"


@pytest.mark.kraft(brokers=3, seed=21)
def test_a_write_still_waits_for_the_brokers_up_to_the_propagation_limit(kraft_bootstrap,
                                                                          kraft_cluster):
    lagging = _behind(kraft_bootstrap)
    client = RawClient(kraft_bootstrap.address(kraft_cluster.broker_ids[0])[1])
    C = M.CreateTopicsRequest
    created, took = _timed(kraft_bootstrap, client, C(topics=(C.CreatableTopic(
        name="w", num_partitions=1, replication_factor=1, assignments=(), configs=()),),
        timeout_ms=30_000, validate_only=False), 7)
    assert created.topics[0].error_code == 0
    assert took >= PROPAGATION_WAIT_MS  # the lagging broker never replays it
    assert kraft_bootstrap.call(lambda c: c.broker(lagging).image.topic("w")) is None


@pytest.mark.kraft(brokers=3, seed=21)
def test_a_write_that_changed_nothing_answers_at_once(kraft_bootstrap, kraft_cluster):
    kraft_bootstrap.call(lambda c: c.create_topic("exists", partitions=1, replication_factor=1))
    _behind(kraft_bootstrap)
    client = RawClient(kraft_bootstrap.address(kraft_cluster.broker_ids[0])[1])
    C = M.CreateTopicsRequest

    def create(name: str, validate_only: bool):
        return C(topics=(C.CreatableTopic(name=name, num_partitions=1, replication_factor=1,
                                          assignments=(), configs=()),),
                 timeout_ms=30_000, validate_only=validate_only)

    failed, took = _timed(kraft_bootstrap, client, create("exists", False), 7)
    assert failed.topics[0].error_code == 36  # TOPIC_ALREADY_EXISTS
    assert took < 1_000, f"a failed CreateTopics took {took} virtual ms"
    validated, took = _timed(kraft_bootstrap, client, create("new", True), 7)
    assert validated.topics[0].error_code == 0
    assert took < 1_000, f"a validate-only CreateTopics took {took} virtual ms"
    assert kraft_cluster.metadata.topic("new") is None
