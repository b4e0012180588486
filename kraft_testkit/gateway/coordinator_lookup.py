"""FindCoordinator for a coordinator that lives on an internal topic's partition leaders.

The group coordinator (``__consumer_offsets``) and the transaction coordinator
(``__transaction_state``) are found the same way in Kafka: the key's partition
(``partition_for``), whose live leader that has loaded the partition is the coordinator; the
topic is created on the first lookup. One function serves both so the two cannot drift.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraft_testkit.protocol.error_codes import ErrorCode

from . import autojump
from .context import Pending, RequestContext
from .forwarding import ControllerCall
from .groups.coordinator import partition_for

E = ErrorCode
Found = list[tuple[str, int, int]]


def locate(ctx: RequestContext, coord: Any, topic_name: str, keys: list[str],
           answer: Callable[[Found], Any]) -> Any:
    """``answer([(key, node, error)])`` once every key's coordinator is a live leader that has
    loaded its partition; until then (topic being created, no live leader yet) a Pending that
    stepping mode runs time for, bounded as a Metadata wait. ``coord`` has ``topic(node)``,
    ``leads(node, topic_id, partition)``, ``create_request()`` and ``creating``."""
    if coord.topic(ctx.node) is None and ctx.cluster.metadata.topic(topic_name) is None \
            and coord.creating is None:
        coord.creating = ControllerCall(ctx, coord.create_request(), None)

    def located() -> Found:
        topic = coord.topic(ctx.node)
        out = []
        for k in keys:
            leader, ok = -1, False
            if topic is not None:
                p = partition_for(k, len(topic.partitions))
                leader = topic.partitions[p].leader
                ok = leader >= 0 and not autojump.down(ctx.cluster, leader) and \
                    coord.leads(leader, topic.id, p)
            out.append((k, leader if ok else -1, E.NONE if ok else E.COORDINATOR_NOT_AVAILABLE))
        return out

    def poll() -> Any:
        if coord.creating is not None and coord.creating.poll() is not None:
            coord.creating = None
        found = located()
        return answer(found) if all(e == E.NONE for _, _, e in found) else None

    found = poll() if ctx.cluster.broker(ctx.node) is not None else None
    if found is not None:
        return found
    return Pending(poll, lambda: answer(located()),
                   virtual_deadline_ms=ctx.now_ms + autojump.wait_bound_ms(ctx.cluster))
