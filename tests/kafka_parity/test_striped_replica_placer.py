"""StripedReplicaPlacerTest (Kafka 4.2.1), driven through the kit's placer with Kafka's
MockRandom: the same draws in the same order give the same assignments."""

from __future__ import annotations

from collections import Counter

import pytest

from kraft_testkit.controller.java_random import MockRandom
from kraft_testkit.controller.placement import (UsableBroker, _BrokerList, _RackList,
                                                place_replicas)
from kraft_testkit.protocol.error_codes import ErrorCode, KafkaApiError



def B(broker_id: int, rack: str | None, fenced: bool) -> UsableBroker:
    return UsableBroker(broker_id, rack, fenced)


def invalid_rf(call) -> str:
    with pytest.raises(KafkaApiError) as e:
        call()
    assert e.value.code == ErrorCode.INVALID_REPLICATION_FACTOR
    return e.value.message


@pytest.mark.kafka("StripedReplicaPlacerTest#testBrokerList")
def test_broker_list():
    empty = _BrokerList()
    assert len(empty.brokers) == 0 and empty.next(1) == -1
    brokers = _BrokerList()
    brokers.brokers.extend([0, 1, 2, 3])
    assert [brokers.next(0) for _ in range(6)] == [0, 1, 2, 3, -1, -1]
    assert [brokers.next(1) for _ in range(5)] == [1, 2, 3, 0, -1]


@pytest.mark.kafka("StripedReplicaPlacerTest#testAvoidFencedReplicaIfPossibleOnSingleRack")
def test_avoid_fenced_replica_if_possible_on_single_rack():
    racks = _RackList(MockRandom(), [B(3, None, False), B(1, None, True), B(0, None, False),
                                     B(4, None, False), B(2, None, False)])
    assert (racks.total, racks.unfenced, racks.names) == (5, 4, [None])
    invalid_rf(lambda: racks.place(0))
    invalid_rf(lambda: racks.place(-1))
    assert [list(racks.place(4)) for _ in range(5)] == [
        [3, 4, 0, 2], [4, 0, 2, 3], [0, 2, 3, 4], [2, 3, 4, 0], [0, 4, 3, 2]]


@pytest.mark.kafka("StripedReplicaPlacerTest#testMultiPartitionTopicPlacementOnSingleUnfencedBroker")
def test_multi_partition_topic_placement_on_single_unfenced_broker():
    placed = place_replicas(MockRandom(), [B(0, None, False), B(1, None, True)], 3, 1)
    assert placed == [(0,), (0,), (0,)]


@pytest.mark.kafka("StripedReplicaPlacerTest#testPlacementOnFencedReplicaOnSingleRack")
def test_placement_on_fenced_replica_on_single_rack():
    racks = _RackList(MockRandom(), [B(3, None, False), B(1, None, True), B(2, None, False)])
    assert (racks.total, racks.unfenced, racks.names) == (3, 2, [None])
    assert [list(racks.place(3)) for _ in range(4)] == [
        [3, 2, 1], [2, 3, 1], [3, 2, 1], [2, 3, 1]]


@pytest.mark.kafka("StripedReplicaPlacerTest#testRackListWithMultipleRacks")
def test_rack_list_with_multiple_racks():
    racks = _RackList(MockRandom(), [B(11, "1", False), B(10, "1", False), B(30, "3", False),
                                     B(31, "3", False), B(21, "2", False), B(20, "2", True)])
    assert (racks.total, racks.unfenced, racks.names) == (6, 5, ["1", "2", "3"])
    assert [list(racks.place(4)) for _ in range(3)] == [
        [11, 21, 31, 10], [21, 30, 10, 20], [31, 11, 21, 30]]


@pytest.mark.kafka("StripedReplicaPlacerTest#testRackListWithInvalidRacks")
def test_rack_list_with_invalid_racks():
    racks = _RackList(MockRandom(), [
        B(11, "1", False), B(10, "1", False), B(30, "3", True), B(31, "3", True),
        B(20, "2", True), B(21, "2", True), B(41, "4", False), B(40, "4", True)])
    assert (racks.total, racks.unfenced, racks.names) == (8, 3, ["1", "2", "3", "4"])
    assert [list(racks.place(4)) for _ in range(3)] == [
        [41, 11, 21, 30], [10, 20, 31, 41], [41, 21, 30, 11]]


@pytest.mark.kafka("StripedReplicaPlacerTest#testAllBrokersFenced")
def test_all_brokers_fenced():
    assert invalid_rf(lambda: place_replicas(
        MockRandom(), [B(11, "1", True), B(10, "1", True)], 1, 1)) \
        == "All brokers are currently fenced."


@pytest.mark.kafka("StripedReplicaPlacerTest#testNotEnoughBrokers")
def test_not_enough_brokers():
    assert invalid_rf(lambda: place_replicas(
        MockRandom(), [B(11, "1", False), B(10, "1", False)], 1, 3)) == (
        "The target replication factor of 3 cannot be reached because only 2 broker(s) are "
        "registered.")


@pytest.mark.kafka("StripedReplicaPlacerTest#testNonPositiveReplicationFactor")
def test_non_positive_replication_factor():
    assert invalid_rf(lambda: place_replicas(
        MockRandom(), [B(11, "1", False), B(10, "1", False)], 1, 0)) \
        == "Invalid replication factor 0: the replication factor must be positive."


@pytest.mark.kafka("StripedReplicaPlacerTest#testSuccessfulPlacement")
def test_successful_placement():
    placed = place_replicas(MockRandom(), [B(0, None, False), B(3, None, False),
                                           B(2, None, False), B(1, None, False)], 5, 3)
    assert placed == [(2, 3, 0), (3, 0, 1), (0, 1, 2), (1, 2, 3), (1, 0, 2)]


@pytest.mark.kafka("StripedReplicaPlacerTest#testEvenDistribution")
def test_even_distribution():
    placed = place_replicas(MockRandom(), [B(i, None, False) for i in range(4)], 200, 2)
    assert Counter(placed) == {
        (0, 1): 14, (0, 2): 22, (0, 3): 14, (1, 0): 17, (1, 2): 17, (1, 3): 16,
        (2, 0): 13, (2, 1): 17, (2, 3): 20, (3, 0): 20, (3, 1): 19, (3, 2): 11}


@pytest.mark.kafka("StripedReplicaPlacerTest#testRackListAllBrokersFenced")
def test_rack_list_all_brokers_fenced():
    racks = _RackList(MockRandom(), [B(0, None, True), B(1, None, True), B(2, None, True)])
    assert (racks.total, racks.unfenced, racks.names) == (3, 0, [None])
    assert invalid_rf(lambda: racks.place(3)) == "All brokers are currently fenced."


@pytest.mark.kafka("StripedReplicaPlacerTest#testRackListNotEnoughBrokers")
def test_rack_list_not_enough_brokers():
    racks = _RackList(MockRandom(), [B(11, "1", False), B(10, "1", False)])
    assert invalid_rf(lambda: racks.place(3)) == (
        "The target replication factor of 3 cannot be reached because only 2 broker(s) are "
        "registered.")


@pytest.mark.kafka("StripedReplicaPlacerTest#testRackListNonPositiveReplicationFactor")
def test_rack_list_non_positive_replication_factor():
    racks = _RackList(MockRandom(), [B(11, "1", False), B(10, "1", False)])
    assert invalid_rf(lambda: racks.place(-1)) \
        == "Invalid replication factor -1: the replication factor must be positive."
