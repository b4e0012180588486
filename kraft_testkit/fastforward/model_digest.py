"""A digest of everything the idle model computed, to show that a faster model computes the
same (tests/cluster/test_fastforward_model_output.py, benchmarks/bench_quorum_model.py).

It covers more than ``warp.py`` reads: every event with all its fields, the leader's steps,
the NoOps and drains, the messages in flight at the end, every loop's final state (its timer
as the model carries it included; a broker's replica loop when it follows or leads replicated
partitions) and the links' counters, FIFO instants and ties (the replica-fetch links too).
"""

from __future__ import annotations

import hashlib
from typing import Any

from kraft_testkit.fastforward.prediction import QuorumPrediction


def _clock(clock: Any) -> tuple | None:
    return None if clock is None else (clock.sent, clock._last_at, clock._last_tie)  # noqa: SLF001


def fingerprint(pred: QuorumPrediction) -> str:
    """16 hex digits of a SHA-256 over the whole prediction (see the module)."""
    h = hashlib.sha256()
    for e in pred.events:
        h.update(repr((e.at_ms, e.tie, e.node, e.kind, e.peer, e.narrow, e.defer)).encode())
    h.update(repr([(s.at_ms, s.tie, s.end_offset, s.high_watermark, s.woke,
                    s.written_offset, s.committed_offset) for s in pred.steps]).encode())
    h.update(repr((pred.leader, pred.horizon_ms, pred.why_stopped, pred.end_offset,
                   pred.high_watermark, pred.noops, pred.drains, pred.in_flight)).encode())
    for n in sorted(pred.loops):
        lp = pred.loops[n]
        h.update(repr((n, lp.voter, lp.end_offset, lp.high_watermark, lp.raft_wake,
                       None if lp.timer is None else tuple(lp.timer[:2]) + tuple(lp.timer[3:]),
                       lp.next_beat, lp.beat_deadline, lp.logic_wake, lp.isr_check,
                       _clock(lp.to_leader), _clock(lp.to_node), _clock(lp.beat_to_leader),
                       _clock(lp.beat_to_node))).encode())
    h.update(repr(sorted((k, v[1][:2]) for k, v in pred.flights.items())).encode())
    # the brokers' replica loops, where a broker follows or leads replicated partitions (left
    # out otherwise, so that the digests recorded before them still hold)
    for n in sorted(pred.loops):
        rep = pred.loops[n].rep
        if rep is not None and (rep.leaders or rep.caught_up):
            h.update(repr((n, rep.next_fetch, rep.leaders, sorted(rep.caught_up.items())))
                     .encode())
    for key in sorted(pred.links, key=repr):
        h.update(repr((key, _clock(pred.links[key]))).encode())
    return h.hexdigest()[:16]


def compact_fingerprint(pred: QuorumPrediction) -> str:
    """What a compact prediction carries for the warp to set from, over and above the
    events: the held answers and heartbeat events, the leader's records, parked fetches, wake-ups, commits, commit
    latencies, waiting and last heartbeats, the loops' state and counters and the links. Two
    ways of computing one compact stretch (``fast_brokers.py`` and the heap alone) must agree
    on it. Left out: the model's sequence numbers (a message in flight keeps its place by
    instant and tie) and the loops' timers as the model carries them (a fast loop's holds its
    logic's wake-up alone; the warp arms each node's timer from the node's own state)."""
    h = hashlib.sha256()
    for e in pred.events:
        h.update(repr((e.at_ms, e.tie, e.node, e.kind, e.peer, e.carried, e.held, e.logic))
                 .encode())
    h.update(repr((pred.leader, pred.horizon_ms, pred.why_stopped, pred.stop_tie,
                   pred.end_offset, pred.high_watermark, pred.noops, pred.drains,
                   sorted((at, tie, kind, arg) for at, tie, _, kind, arg in pred.in_flight)))
             .encode())
    for n in sorted(pred.loops):
        lp = pred.loops[n]
        h.update(repr((n, lp.voter, lp.end_offset, lp.high_watermark, lp.raft_wake,
                       lp.next_beat, lp.beat_deadline, lp.logic_wake, lp.isr_check, lp.held,
                       lp.logic, None if lp.rep is None else lp.rep.next_fetch,
                       _clock(lp.to_leader), _clock(lp.to_node), _clock(lp.beat_to_leader),
                       _clock(lp.beat_to_node))).encode())
    h.update(repr((sorted(pred.records.items()), pred.parked, pred.leader_wakes,
                   pred.follower_fetches, pred.follower_answers, pred.omitted, pred.commits,
                   pred.latencies, pred.waiting, sorted(pred.beats.items()),
                   pred.check_deadline, pred.begins)).encode())
    for key in sorted(pred.links, key=repr):
        h.update(repr((key, _clock(pred.links[key]))).encode())
    return h.hexdigest()[:16]
