"""Producer id blocks: AllocateProducerIds, after Kafka's ``ProducerIdControlManager``.

Brokers ask the controller for blocks of 1000 producer ids; the controller hands out the block
starting at the image's next id and records where the next block starts (ProducerIdsRecord), so
no id is ever given twice, across failovers too. The caller must be a registered broker with its
current epoch: Kafka's ``checkBrokerEpoch`` answers STALE_BROKER_EPOCH both for a wrong epoch
and for a broker id with no registration (it does not use BROKER_ID_NOT_REGISTERED here).
"""

from __future__ import annotations

from ..protocol import messages as M
from ..protocol.error_codes import ErrorCode
from .result import ControllerContext, ControllerResult, record

BLOCK_SIZE = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
_LONG_MAX = 2**63 - 1


def allocate_producer_ids(ctx: ControllerContext, request: M.AllocateProducerIdsRequest
                          ) -> ControllerResult[M.AllocateProducerIdsResponse]:
    """The next block for ``request.broker_id``, or an error with no record."""
    registration = ctx.image.cluster.broker(request.broker_id)
    if registration is None or registration.epoch != request.broker_epoch:
        return ControllerResult.of(
            M.AllocateProducerIdsResponse(error_code=int(ErrorCode.STALE_BROKER_EPOCH)))
    first = max(ctx.image.producer_ids.next_producer_id, 0)  # -1 (none handed out) -> 0
    if first > _LONG_MAX - BLOCK_SIZE:
        # Kafka: "Exhausted all producerIds as the next block's end producerId has exceeded
        # the int64 type limit"
        return ControllerResult.of(
            M.AllocateProducerIdsResponse(error_code=int(ErrorCode.UNKNOWN_SERVER_ERROR)))
    next_block = record(M.ProducerIdsRecord(broker_id=request.broker_id,
                                            broker_epoch=request.broker_epoch,
                                            next_producer_id=first + BLOCK_SIZE), 0)
    return ControllerResult.of(
        M.AllocateProducerIdsResponse(error_code=0, producer_id_start=first,
                                      producer_id_len=BLOCK_SIZE), next_block)
