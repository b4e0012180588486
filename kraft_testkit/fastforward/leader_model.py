"""The active controller's events in the idle model (``quorum_model``), as a mixin of it
beside ``follower_model``: a follower's fetch at the leader (its record of the follower, the
high watermark a voter's fetch may move, a parked fetch or an answer), a broker's heartbeat
(its lease renewed, answered once what the controller wrote before it commits), and the
leader's own timer (a drain, the NoOp task, the parked fetches' max waits, check-quorum);
each runs what node code runs in such an event, in order (``quorum_model``'s module text).
"""

from __future__ import annotations

import heapq

from kraft_testkit.fastforward.follower_model import ARRIVE, Computed
from kraft_testkit.fastforward.observer_loop import LeaderStep, NotModelled
from kraft_testkit.fastforward.prediction import Parked
from kraft_testkit.sim.node import NEVER


class LeaderEvents:
    """Methods of the model (``quorum_model._Model``) for the leader's events."""

    def _update_replica(self, n: int, offset: int, at: int) -> None:
        if n not in self.voter_ids:
            return  # an observer's progress is recorded, it moves nothing here
        moved = self.progress[n] != offset
        self.progress[n] = offset
        self._observed(n, offset, at)
        # check-quorum: with three voters (the model refuses others) one follower's fetch and
        # the leader make the majority, so every voter fetch renews the deadline
        self.check_deadline = at + self.check_ms
        if moved:
            self._move_hw(at)

    def _move_hw(self, at: int) -> None:
        # three voters: the leader's own log end is the highest, the majority's the next
        new_hw = max(self.progress.values())
        if new_hw > self.lead.epoch_start and new_hw > self.hw:
            self.hw = new_hw
            self.wake_parked = True
            self.pred.commits.append((at, new_hw))

    def _observed(self, n: int, offset: int, at: int) -> None:
        """The leader's record of follower ``n`` (what ``_update_replica`` keeps of it)."""
        rec = self.records.get(n)
        if rec is None:
            raise NotModelled(f"the leader has no record of node {n}")
        rec[0] = at
        rec[1] = offset
        if offset >= self.end:
            rec[2] = at

    def _poll(self, at: int) -> int:
        if self.pending and at >= self.drain_at:
            self.pending, self.drain_at = False, NEVER
            self.end += 1
            self.pred.drains.append(at)
            self.wake_parked = True
            self._move_hw(at)
        parked = self.parked
        if parked or self.fast_parked:
            wake_all, self.wake_parked = self.wake_parked, False
            if wake_all or self.parked_min <= at:
                still = []
                sends, voters = self.sends, self.voter_ids
                fast_low = self._fast_wake_parked(at, wake_all, sends) if self.fast_parked \
                    else NEVER
                for p in parked:
                    if wake_all or p.deadline <= at:
                        if p.node in voters:
                            self._update_replica(p.node, p.offset, at)
                        else:  # an observer's record: it moves nothing else here
                            self._observed(p.node, p.offset, at)
                        sends.append(("answer", p.node, self.end, self.hw))
                    else:
                        still.append(p)
                self.parked = still
                low = min((p.deadline for p in still), default=NEVER)
                self.parked_min = low if low < fast_low else fast_low
        else:
            self.wake_parked = False
        check = self.check_deadline
        if at >= check:
            raise NotModelled("check-quorum would resign the leader")
        drain = self.drain_at
        low = self.parked_min
        if drain < low:
            low = drain
        if self.begin_at <= at:  # a dead voter's request timed out: asked again
            self._begin_due(at)
        if self.begin_at < low:
            low = self.begin_at
        return check if check < low else low

    def _leader_wake_now(self) -> tuple[int, int]:
        """The leader's Raft and node wake-ups in its present state (what its last event
        left: ``_at_leader``'s formula)."""
        low = min(self.parked_min, self.drain_at, self.begin_at)
        wake = min(self.check_deadline, low)
        raft_wake = min(wake, self.clean_at)
        return raft_wake, min(raft_wake, self.noop_last + self.interval, self.other_dues,
                              self.lease_min)

    def _park_alone(self, at: int, tie: int, arg: tuple) -> bool:
        """The common event, shortened: a broker's fetch at the log end when nothing else is
        due (no drain, parked deadline, NoOp, check-quorum or heartbeat waiting): it is
        parked, and the leader's wake-ups move only by its deadline. False: run it in full."""
        n, offset = arg
        end = self.end
        if offset != end or n in self.no_lean or self.waiting or end > self.budget_end:
            return False
        drain, check = self.drain_at, self.check_deadline
        deadline = at + self.cfg.fetch_max_wait_ms
        parked_min = self.parked_min if self.parked_min < deadline else deadline
        if drain <= at or check <= at or parked_min <= at or self.begin_at <= at or \
                at >= self.noop_last + self.interval:
            return False
        self.follower_fetches += 1
        event = None
        if self.compact:
            self.omitted += 1
        else:
            event = Computed(at, tie, self.leader, "fetch", n)
            self.pred.events.append(event)
        rec = self.records.get(n)
        if rec is None:
            raise NotModelled(f"the leader has no record of broker {n}")
        rec[0] = rec[2] = at
        rec[1] = offset
        self.parked.append(Parked(n, offset, deadline, at << 32 | tie))
        self.parked_min = parked_min
        if self.record_steps:  # nothing moved: the step repeats the last one's offsets
            self.pred.steps.append(LeaderStep(at, tie, end, self.hw, False, self.written,
                                              self.hw - 1))
        wake = parked_min if parked_min < drain else drain
        if check < wake:
            wake = check
        if self.begin_at < wake:
            wake = self.begin_at
        clean_at = self.clean_at
        raft_wake = wake if wake < clean_at else clean_at
        node_wake = min(raft_wake, self.noop_last + self.interval, self.other_dues,
                        self.lease_min)
        self.leader_wakes = (at, raft_wake, node_wake)
        if event is not None:
            event.narrow = (raft_wake, node_wake)
        self._rearm(self, node_wake)
        return True

    def _at_leader(self, entry: list) -> bool:
        at, tie, _, kind, arg = entry
        if kind == "timer":
            if entry is not self.timer:
                return True  # re-armed elsewhere since
            self.timer = None
        if at >= self.lease_min:
            return self._stop(at, "a broker's lease")
        self.wake_parked = False
        if kind == "fetch" and self._park_alone(at, tie, arg):
            return True
        self.sends = sends = []
        event = None
        if self.compact and kind != "beat":  # the compact path sets the leader from the model
            self.omitted += 1
        elif kind == "beat" and (logic := self.pred.loops[arg[0]].logic) is not None:
            logic.append((ARRIVE, at, 0))  # held with the broker's other logic events
            self.omitted += 1
        else:
            event = Computed(at, tie, self.leader, kind, None if kind == "timer" else arg[0])
            self.pred.events.append(event)
        end0, hw0, written0, pending0 = self.end, self.hw, self.written, self.pending
        waiting0 = len(self.waiting)
        if kind == "fetch":
            n, offset = arg
            if offset > end0:
                raise NotModelled(f"node {n} fetches past the leader's log end")
            if n in self.voter_ids:
                self._update_replica(n, offset, at)
            else:
                self._observed(n, offset, at)
            self.follower_fetches += 1
            if offset >= self.end:
                deadline = at + self.cfg.fetch_max_wait_ms
                fb = self.fast_of.get(n)
                if fb is not None:
                    self._fast_park(fb, at, tie, offset, deadline)
                else:
                    self.parked.append(Parked(n, offset, deadline, at << 32 | tie))
                if deadline < self.parked_min:
                    self.parked_min = deadline
            else:
                sends.append(("answer", n, self.end, self.hw))
        elif kind == "beat":
            n = arg[0]
            self._lease_renewed(n, at)
            self.pred.beats[n] = at
            if self.written <= self.hw - 1:
                sends.append(("beat_answer", n))
                self.pred.latencies.append(0)
            else:
                self.waiting.append((n, self.written, at))
        poll = self._poll
        if kind != "beat":
            wake = poll(at)
            while wake <= at:  # the replica looks again at once while something is due
                wake = poll(at)
        if at >= self.noop_last + self.interval:  # the controller's NoOp task
            self.written += 1
            self.noop_last = at
            self.pred.noops.append(at)
            if not self.pending:
                self.pending, self.drain_at = True, at + self.cfg.append_linger_ms
        wake = poll(at)
        while wake <= at:
            wake = poll(at)
        if self.waiting:  # heartbeats answered once what was written before them commits
            still = []
            latencies = self.pred.latencies
            for w in self.waiting:
                if w[1] <= self.hw - 1:
                    sends.append(("beat_answer", w[0]))
                    latencies.append(at - w[2])
                else:
                    still.append(w)
            self.waiting = still
        end, hw = self.end, self.hw
        if end > self.budget_end:
            raise NotModelled("a snapshot by bytes would fall due")
        if sends:
            loops, heap, seq, push = self.pred.loops, self.heap, self.seq, heapq.heappush
            for send in sends:
                loop = loops[send[1]]
                if send[0] == "answer":
                    if loop.fast is not None:
                        self._fast_answered(loop.fast, at, send[2], send[3])
                        continue
                    a_at, a_tie = loop.to_node.arrival(at)
                    push(heap, [a_at, a_tie, seq(), "answer", send[1:]])
                elif loop.fast is not None and loop.fast.beats:
                    self._beat_answered(loop.fast, at)  # into its fast loop (fast_beats.py)
                else:
                    a_at, a_tie = loop.beat_to_node.arrival(at)
                    push(heap, [a_at, a_tie, seq(), "beat_answer", (send[1],)])
        if self.record_steps:
            woke = (end, hw) != self.last_step
            self.last_step = (end, hw)
            self.pred.steps.append(LeaderStep(at, tie, end, hw, woke, self.written, hw - 1))
        clean_at = self.clean_at
        raft_wake = wake if wake < clean_at else clean_at
        node_wake = min(raft_wake, self.noop_last + self.interval, self.other_dues,
                        self.lease_min)
        if event is not None and not self.compact and (kind == "fetch" or kind == "beat") and \
                end == end0 and hw == hw0 and self.written == written0 and \
                self.pending == pending0 and \
                len(self.waiting) == waiting0 + (kind == "beat" and not sends) and \
                all(send[1] == arg[0] for send in sends):
            # a broker's fetch or heartbeat, or a voter's fetch: only the leader's record of
            # the sender moved (for a voter: its end offset, fetch times, check-quorum)
            event.narrow = (raft_wake, node_wake)
        self.leader_wakes = (at, raft_wake, node_wake)
        self._rearm(self, node_wake)
        return True
