"""A broker's fetch answers in a warped stretch, applied as one run (the bulk half of the warp).

Between two events of a broker whose logic acts (its timer, a heartbeat's answer, an answer
that sends a due heartbeat) the broker's events in an idle stretch are fetch answers carrying
NoOps: each appends what it carries, moves the high watermark, hands the commits to the
listeners and sends the next fetch. :class:`AnswerRun` holds such answers back (the model
says which: ``Computed.defer``) and applies them at once with the bulk primitives of
``fastforward/noop_run.py`` (one append run, one commit run, equal to k separate ones), then
leaves the Raft client's fetch state (request id, connection, deadline, the cached request,
wake-ups) where the k answers would have. The fetches the broker would have sent go to the
leader as it would have built them (its request id and log end at each answer).
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.fastforward.bulk import InexactFastForward
from kraft_testkit.fastforward.noop_run import (
    NoOpBatches,
    append_fetched_noops,
    apply_commit_run,
    noop_batches_in_log,
)
from kraft_testkit.raft import rpc


class SharedRun:
    """The leader's NoOp batches of a stretch as one run, built once for every follower
    (``noop_run.NoOpBatches``: the same bytes and batch objects on every replica). The runs
    the leader appends in the stretch join it as they are (:meth:`add`): every node then
    holds the same bytes and replica batches, not a copy rebuilt from the leader's log."""

    def __init__(self, leader_log: Any) -> None:
        self.log = leader_log
        self.run: Any = None

    def add(self, run: NoOpBatches) -> None:
        """The run the leader just appended (``append_leader_noops``), at its log's end."""
        if not run.data:
            return
        cur = self.run
        if cur is not None and cur.end_offset == run.base_offset and cur.epoch == run.epoch:
            self.run = _join(cur, run)
        else:
            self.run = run

    def covering(self, start: int, end: int) -> Any:
        run = self.run
        log_end = self.log.end_offset
        if run is not None and start < run.base_offset:
            before = noop_batches_in_log(self.log, start, run.base_offset)
            run = _join(before, run) if before.epoch == run.epoch else None
        if run is not None and end > run.end_offset:
            # the leader appended since: build only the new batches (the run grows through
            # the stretch; rebuilding it from its base each time cost O(n^2))
            more = noop_batches_in_log(self.log, run.end_offset, max(end, log_end))
            run = _join(run, more) if more.epoch == run.epoch else None
        if run is None:
            run = noop_batches_in_log(self.log, start, max(end, log_end))
        self.run = run
        return run


def _join(a: NoOpBatches, b: NoOpBatches) -> NoOpBatches:
    """Run ``a`` followed by run ``b`` (one epoch, ``b`` starting at ``a``'s end)."""
    return NoOpBatches(a.base_offset, a.epoch, a.timestamps + b.timestamps,
                       a.leader + b.leader, a.replica + b.replica, a.data + b.data)


class AnswerRun:
    """The answers one broker was handed in a stretch and not applied yet."""

    def __init__(self, process: Any, leader: int, ticks_set: bool = False) -> None:
        self.process = process
        #: a broker whose logic events are held: its replica manager's instants are set from
        #: the model (``held_events.HeldEvents.settle``), its commits need not tick it
        self.ticks_set = ticks_set
        node = process.machine
        self.raft = node.raft
        self.leader = leader
        self.start_end = self.raft.log_end_offset
        self.end = self.start_end
        self.cid = self.raft._cid  # noqa: SLF001
        self.pairs: list[tuple[int, int]] = []  # (instant, high watermark) per answer
        self.body: Any = None
        self.last_epoch = self.raft.log.last_epoch

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def add(self, at: int, end: int, hw: int, epoch: int, build: bool = True) -> Any:
        """One answer (bringing the log to ``end``, the high watermark to ``hw``) at ``at``;
        returns the fetch the broker sends in reply, as its Raft client would build it
        (None with ``build=False``: :meth:`request` builds the last one when asked)."""
        if end > self.end or self.body is None:
            if end > self.end:
                self.end, self.last_epoch = end, epoch
            self.body = self.raft.fetch_request_body(self.end, self.last_epoch)
        hw = max(self.pairs[-1][1] if self.pairs else self.raft.hw, min(hw, self.end))
        self.pairs.append((at, hw))
        self.cid = (self.cid + 1) & 0x7FFFFFFF
        return rpc.request(self.cid, self.body) if build else None

    def extend(self, held: list, epoch: int) -> None:
        """The answers a compact prediction held, ``(instant, log end, high watermark)`` each
        (the high watermark as the broker keeps it), added as :meth:`add` would."""
        self.pairs += [(at, hw) for at, _, hw in held]
        self.cid = (self.cid + len(held)) & 0x7FFFFFFF
        end = held[-1][1]
        if end > self.end or self.body is None:
            if end > self.end:
                self.end, self.last_epoch = end, epoch
            self.body = None  # built once, when asked for (apply, request)

    def request(self) -> Any:
        """The last fetch the broker sent (after :meth:`add`)."""
        return rpc.request(self.cid, self.body)

    def apply(self, runs: SharedRun, acts: bool = False) -> tuple[int, tuple]:
        """Apply the held answers; returns the instant of the last one (the node's Raft
        wake-up is left as its poll reported it; the caller re-arms its timer) and, with
        ``acts`` (the broker's logic runs at the last one's commit: a due heartbeat or ISR
        check), what the logic sent there."""
        process, raft = self.process, self.raft
        node = process.machine
        if self.end > self.start_end:
            append_fetched_noops(process, runs.covering(self.start_end, self.end), self.end)
        sends: tuple = ()
        if self.pairs[-1][1] > raft.hw:  # some answer moved the high watermark
            done = apply_commit_run(process, self.pairs, acts=acts,
                                    ticked=len(self.pairs) if self.ticks_set else 0)
            if done.stopped is not None or done.applied != len(self.pairs):
                raise InexactFastForward(f"broker {raft.id}'s answers stopped: {done.stopped}")
            sends = done.sends
        if self.body is None:
            self.body = raft.fetch_request_body(self.end, self.last_epoch)
        last = self.pairs[-1][0]
        node._clock(last)  # noqa: SLF001 - its last answer set the clock
        wake = raft.after_fetch_answers(self.leader, last, self.cid, self.body, self.end,
                                        self.last_epoch)
        node._raft_wake = wake  # noqa: SLF001 - the poll after each answer reported it
        self.start_end = self.end
        self.pairs = []
        return last, sends

