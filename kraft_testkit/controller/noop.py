"""NoOpRecords: the active controller's heartbeat in the log (KIP-835).

Kafka's active controller appends a NoOpRecord every ``metadata.max.idle.interval.ms`` (500 by
default; 0 turns it off) once metadata.version supports the record (3.3-IV1), so the high
watermark keeps moving and every node can tell that its metadata is current. Kafka schedules
each one an interval after the previous one ran, whatever else was written meanwhile (the
golden log has a NoOp 82 ms after a broker registration).
"""

from __future__ import annotations

from ..config import NodeConfig
from ..metadata import MetadataImage
from ..metadata import versions as V
from ..protocol import messages as M
from .features import metadata_version
from .result import ControllerContext, ControllerResult, record


def noop_interval_ms(config: NodeConfig, image: MetadataImage) -> int | None:
    """The NoOp period, or None when NoOps are off (interval 0, or before 3.3-IV1)."""
    interval = config.metadata_max_idle_interval_ms
    if interval <= 0 or not V.is_noop_record_supported(metadata_version(image)):
        return None
    return interval


def next_noop_ms(ctx: ControllerContext, last_write_ms: int) -> int | None:
    """When the next NoOp is due, given when the previous one was written (or when this
    controller became active); None when NoOps are off."""
    interval = noop_interval_ms(ctx.config, ctx.image)
    return None if interval is None else last_write_ms + interval


def maybe_noop(ctx: ControllerContext, last_write_ms: int) -> ControllerResult[None] | None:
    """A NoOpRecord if one is due at ``ctx.now_ms``, else None.

    ``last_write_ms``: when the previous NoOp was written (or activation), for Kafka's fixed
    period; pass the time of the last write of any kind to write NoOps only when idle.
    """
    due = next_noop_ms(ctx, last_write_ms)
    if due is None or ctx.now_ms < due:
        return None
    return ControllerResult((record(M.NoOpRecord(), 0),), None, atomic=False)
