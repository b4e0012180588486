"""ProducerIdControlManagerTest (Kafka 4.2.1): AllocateProducerIds through the kit's command on
an image with brokers 0-3 registered at epoch 100, each block's ProducerIdsRecord replayed."""

from __future__ import annotations

import random

import pytest

from kraft_testkit.config import NodeConfig
from kraft_testkit.controller.producer_ids import allocate_producer_ids
from kraft_testkit.controller.result import ControllerContext
from kraft_testkit.metadata import MetadataImage
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E
from kraft_testkit.protocol.uuid import Uuid

LONG_MAX = 2**63 - 1


class Manager:
    def __init__(self) -> None:
        self.image = MetadataImage.EMPTY.replay([
            M.RegisterBrokerRecord(
                broker_id=i, broker_epoch=100, incarnation_id=Uuid((1 + i).to_bytes(16, "big")),
                end_points=[M.RegisterBrokerRecord.BrokerEndpoint(
                    name="PLAINTEXT", host=f"broker-{i:02d}.example.org", port=9092,
                    security_protocol=0)])
            for i in range(4)])

    def generate(self, broker_id: int, broker_epoch: int):
        ctx = ControllerContext(self.image, 0, random.Random(0), NodeConfig(), "c", 3000)
        return allocate_producer_ids(ctx, M.AllocateProducerIdsRequest(
            broker_id=broker_id, broker_epoch=broker_epoch))

    def replay(self, broker_id: int, next_id: int, broker_epoch: int = 100) -> None:
        self.image = self.image.replay([M.ProducerIdsRecord(
            broker_id=broker_id, broker_epoch=broker_epoch, next_producer_id=next_id)])


@pytest.mark.kafka("ProducerIdControlManagerTest#testInitialResult")
def test_initial_result():
    result = Manager().generate(1, 100)
    assert (result.response.producer_id_start, result.response.producer_id_len) == (0, 1000)
    assert result.records[0].message.next_producer_id == 1000


@pytest.mark.kafka("ProducerIdControlManagerTest#testMonotonic",
       deliberate="the kit's image takes a ProducerIdsRecord that goes backwards, where Kafka's "
                  "controller-side replay throws; the kit's controller never writes one. No switch")
def test_monotonic():
    m = Manager()
    m.replay(1, 42)
    assert m.generate(1, 100).response.producer_id_start == 42
    assert m.generate(3, 100).response.producer_id_start == 42
    m.replay(1, 50)  # gaps are fine
    assert m.generate(1, 100).response.producer_id_start == 50


@pytest.mark.kafka("ProducerIdControlManagerTest#testUnknownBrokerOrEpoch")
def test_unknown_broker_or_epoch():
    m = Manager()
    for broker_id, epoch in ((99, 0), (1, 99)):
        result = m.generate(broker_id, epoch)
        assert result.response.error_code == E.STALE_BROKER_EPOCH and result.records == ()


@pytest.mark.kafka("ProducerIdControlManagerTest#testMaxValue")
def test_max_value():
    m = Manager()
    m.replay(1, LONG_MAX - 1)
    result = m.generate(1, 100)
    assert result.response.error_code == E.UNKNOWN_SERVER_ERROR and result.records == ()


@pytest.mark.kafka("ProducerIdControlManagerTest#testGenerateProducerIds")
def test_generate_producer_ids():
    m = Manager()
    for i in range(100):
        m.image = m.image.replay(m.generate(i % 4, 100).records)
    # Kafka's nextProducerBlock: (broker 3, 100000, 1000); the kit's image keeps the start
    assert m.image.producer_ids.next_producer_id == 100_000
