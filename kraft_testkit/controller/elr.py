"""Eligible leader replicas (KIP-966): what a partition change needs to know about ELR.

After Kafka 4.x's ``ReplicationControlManager``: ELR is used when the
eligible.leader.replicas.version feature is at least 1 and metadata.version has the ELR records
(4.0-IV1); every partition change then compares the ISR with the topic's effective
min.insync.replicas. The ELR rules themselves live in :mod:`.partition_change`.
"""

from __future__ import annotations

from collections.abc import Sequence

from .features import elr_enabled
from .partition_change import Elr
from .result import ControllerContext
from .topic_configs import min_insync_replicas


def effective_min_isr(ctx: ControllerContext, topic: str) -> int:
    """4.2.1 ``ReplicationControlManager#getTopicEffectiveMinIsr``: the topic's
    min.insync.replicas, but never more than partition 0's replication factor."""
    configured = min_insync_replicas(ctx.image, ctx.config, ctx.node_id, topic)
    image = ctx.image.topic(topic)
    first = image.partitions.get(0) if image is not None else None
    return configured if first is None else min(configured, len(first.replicas))


def elr_for(ctx: ControllerContext, topic: str, unclean_shutdown: Sequence[int] = ()) -> Elr:
    """The ELR settings of a change to a partition of ``topic``."""
    if not elr_enabled(ctx.image):
        return Elr(False)
    return Elr(True, effective_min_isr(ctx, topic), tuple(unclean_shutdown))
