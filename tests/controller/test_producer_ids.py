"""AllocateProducerIds against Kafka's ProducerIdControlManager."""

from __future__ import annotations

import pytest
from admin_helpers import apply, base_image, context, messages, roundtrip
from hypothesis import given, settings
from hypothesis import strategies as st

from kraft_testkit.controller.producer_ids import BLOCK_SIZE, allocate_producer_ids
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E


def allocate(image, broker_id: int, epoch: int):
    return allocate_producer_ids(context(image), M.AllocateProducerIdsRequest(
        broker_id=broker_id, broker_epoch=epoch))


def test_first_block_starts_at_zero_and_replay_advances():
    image = base_image()
    assert image.producer_ids.next_producer_id == -1
    result = allocate(image, 1, 101)
    assert (result.response.error_code, result.response.producer_id_start,
            result.response.producer_id_len) == (0, 0, BLOCK_SIZE)
    assert messages(result) == [M.ProducerIdsRecord(broker_id=1, broker_epoch=101,
                                                    next_producer_id=1000)]
    image = apply(image, result)
    assert image.producer_ids.next_producer_id == 1000
    second = allocate(image, 2, 102)
    assert second.response.producer_id_start == 1000
    assert apply(image, second).producer_ids.next_producer_id == 2000
    assert roundtrip(second.response, 0) == second.response


@pytest.mark.parametrize("broker_id,epoch", [(1, 100), (1, 999), (9, 109), (9, -1)])
def test_wrong_epoch_or_unregistered_broker_is_stale_broker_epoch(broker_id, epoch):
    # Kafka's checkBrokerEpoch answers STALE_BROKER_EPOCH for an unknown broker id too
    result = allocate(base_image(), broker_id, epoch)
    assert (result.response.error_code, result.response.producer_id_start,
            result.response.producer_id_len) == (E.STALE_BROKER_EPOCH, 0, 0)
    assert result.records == ()


def test_exhausted_id_space():
    image = base_image().replay([M.ProducerIdsRecord(broker_id=1, broker_epoch=101,
                                                     next_producer_id=2**63 - 1001)])
    assert allocate(image, 1, 101).response.error_code == 0  # ends exactly at Long.MAX
    image = base_image().replay([M.ProducerIdsRecord(broker_id=1, broker_epoch=101,
                                                     next_producer_id=2**63 - 1000)])
    result = allocate(image, 1, 101)
    assert result.response.error_code == E.UNKNOWN_SERVER_ERROR and result.records == ()


@settings(max_examples=30, deadline=None)
@given(callers=st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=12))
def test_blocks_never_overlap(callers):
    image = base_image()
    starts = []
    for broker_id in callers:
        result = allocate(image, broker_id, 100 + broker_id)
        starts.append(result.response.producer_id_start)
        image = apply(image, result)
    assert starts == [i * BLOCK_SIZE for i in range(len(callers))]
    assert image.producer_ids.next_producer_id == len(callers) * BLOCK_SIZE
