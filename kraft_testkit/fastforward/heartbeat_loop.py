"""A broker's heartbeats, computed from the controller channel's draws and the leader's
timeline.

The broker heartbeats when its interval (``broker.heartbeat.interval.ms`` after the last
answer) runs out, on the controller channel (its own links, see ``broker/channel.py``). The
active controller records the heartbeat when it arrives (the broker's lease then runs
``broker.session.timeout.ms`` from that instant) and answers once everything it had written
by then is committed (``QuorumController.submit``: a heartbeat that lands between a NoOp's
append and its commit waits for the commit). So each round trip is a function of the two
links' n-th draws and of the controller's written and committed offsets in run order, and
the lease deadlines a later fault reads (and with them the offsets and timestamps of the
fencing batches) are known without stepping. tests/cluster checks it against stepping.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from kraft_testkit.fastforward.observer_loop import LeaderStep, LinkClock, NotModelled


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """One heartbeat: sent, received and recorded by the controller (the lease runs from
    there), answered, and the answer received (the next one is due an interval later)."""

    sent_ms: int
    arrived_ms: int
    answered_ms: int | None
    received_ms: int | None


def predict_heartbeats(leader: Sequence[LeaderStep], to_leader: LinkClock,
                       to_broker: LinkClock, *, due_ms: int, interval_ms: int,
                       until_ms: int) -> list[Heartbeat]:
    """The heartbeats of a broker whose next one is due at ``due_ms``, for every one sent by
    ``until_ms`` (the last may still be unanswered). ``leader`` holds every event of the
    active controller in run order, with its written and committed offsets."""
    keys = [(s.at_ms, s.tie) for s in leader]
    beats: list[Heartbeat] = []
    while due_ms <= until_ms:
        arrived, tie = to_leader.arrival(due_ms)
        if arrived > until_ms:
            beats.append(Heartbeat(due_ms, arrived, None, None))
            return beats
        # what the controller had written and committed just before the heartbeat's event:
        # that event may go on to do due work (a NoOp) after it answered
        i = bisect_left(keys, (arrived, tie))
        if i == 0:
            raise NotModelled("the heartbeat arrives before the leader's timeline starts")
        wait_for = leader[i - 1].written_offset
        if leader[i - 1].committed_offset >= wait_for:
            answered = arrived
        else:
            answered = next((s.at_ms for s in leader[i:] if s.committed_offset >= wait_for),
                            None)
            if answered is None or answered > until_ms:
                beats.append(Heartbeat(due_ms, arrived, None, None))
                return beats
        received, _ = to_broker.arrival(answered)
        beats.append(Heartbeat(due_ms, arrived, answered, received))
        due_ms = received + interval_ms
    return beats
