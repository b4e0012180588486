"""InitProducerId (22) for idempotent producers, as a KRaft broker serves it: producer ids come
from blocks the broker obtains from the active controller (AllocateProducerIds, sent for the
serving broker with its registration epoch), one id per request, epoch 0.

A transactional producer's InitProducerId goes to the transaction coordinator
(``gateway/txn``), which takes its ids from the same blocks (:func:`allocator`).
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

from .context import Pending, RequestContext
from .forwarding import ControllerCall

_R = M.InitProducerIdResponse


def init_producer_id(ctx: RequestContext, req: Any) -> Any:
    if req.transactional_id is not None:
        return _R(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                  producer_id=-1, producer_epoch=-1)
    blocks = ctx.gateway.producer_id_blocks
    block = blocks.get(ctx.node)
    if block is not None and block[0] < block[1]:
        return _take(blocks, ctx.node)
    logic = ctx.cluster.broker(ctx.node).logic
    call = ControllerCall(ctx, M.AllocateProducerIdsRequest(
        broker_id=ctx.node, broker_epoch=logic.broker_epoch), None)
    call.poll()

    def poll() -> Any:
        answer = call.poll()
        if answer is None:
            return None
        if answer.error_code:
            return _R(throttle_time_ms=0, error_code=answer.error_code, producer_id=-1,
                      producer_epoch=-1)
        blocks[ctx.node] = [answer.producer_id_start,
                            answer.producer_id_start + answer.producer_id_len]
        return _take(blocks, ctx.node)

    def expire() -> Any:
        call.expire()
        return _R(throttle_time_ms=0, error_code=ErrorCode.REQUEST_TIMED_OUT, producer_id=-1,
                  producer_epoch=-1)

    return Pending(poll, expire, virtual_deadline_ms=call.deadline_ms)


def allocator(ctx: RequestContext) -> Any:
    """A poll function giving (error, producer id) once the serving broker has an id (None
    meanwhile): from its block, else from a new block the controller allocates."""
    blocks = ctx.gateway.producer_id_blocks
    state: dict[str, Any] = {"call": None, "done": None}

    def poll() -> tuple[int, int] | None:
        if state["done"] is not None:
            return state["done"]
        block = blocks.get(ctx.node)
        if state["call"] is None and block is not None and block[0] < block[1]:
            state["done"] = (0, _take(blocks, ctx.node).producer_id)
            return state["done"]
        if state["call"] is None:
            logic = ctx.cluster.broker(ctx.node).logic
            state["call"] = ControllerCall(ctx, M.AllocateProducerIdsRequest(
                broker_id=ctx.node, broker_epoch=logic.broker_epoch), None)
        answer = state["call"].poll()
        if answer is None:
            return None
        if answer.error_code:
            state["done"] = (answer.error_code, -1)
        else:
            blocks[ctx.node] = [answer.producer_id_start,
                                answer.producer_id_start + answer.producer_id_len]
            state["done"] = (0, _take(blocks, ctx.node).producer_id)
        return state["done"]
    return poll


def _take(blocks: dict, node: int) -> Any:
    block = blocks[node]
    pid = block[0]
    block[0] += 1
    return _R(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)
