"""The followers' metadata fetch loops in a compact prediction, out of the model's heap.

Most of an idle cluster's events are the followers' fetch loops with the active controller: an
answer reaches the broker or voter (it appends, learns the high watermark and fetches again in
the same event), the fetch reaches the leader and is parked until the next drain or
high-watermark move. In a compact prediction neither event is kept (the answer joins
``Loop.held``, the fetch only moves the leader's record of the follower), so the model only
has to get their instants and what they carry right. Here each follower's loop (a
:class:`FastLoop`: a voter or broker on Fixed or Uniform links) has exactly one thing pending,
an answer on its way, a fetch on its way or a fetch parked at the leader, and is advanced
*leanly* (a few assignments and the link's two draws per message, no heap entry, no event
object) up to the model's next heap event, as long as nothing else can happen at that instant
(a quiet broker's heartbeats are a second stream of its loop: ``fast_beats.py``):

- a fetch is lean before the leader's next wake-up instant (its one timer: a drain, the NoOp
  task, a parked fetch's max wait, check-quorum, a lease, a dead voter's request), where the
  first leader event of the instant does the due work and order decides what a later one sees
  (a heartbeat at the NoOp's instant waits for the NoOp when a fetch came before it);
- an answer is lean before the broker's logic wakes (a due heartbeat leaves in the first event
  its logic runs in; a heartbeat in flight times out; a replica fetch or an ISR check that can
  act is due: the replica messages between brokers stay heap events), and before its Raft
  fetch timeout (unreachable: the loop is fast only where an answer always comes sooner);
- a voter's fetch is lean only where it is parked and cannot move the high watermark; any
  other voter fetch may wake every parked fetch, so it ends the lean window, and so does the
  fetch a voter's answer with new records brings (``_voter_bounds``; the voters' loops go first
  in each pass, so a lean answer's fetch lowers the window before any other loop passes it);
- a lean park whose max wait becomes the leader's next wake-up moves its timer into the heap:
  the window ends there, and the pass looks at the heap again before any full event;
- the earliest event of all, a broker's answer or fetch past the window, is lean where only
  the window's bounds kept it out and its own conditions hold (``_first_lean``).

Anything else, the earliest first, runs as the full event of the model
(``quorum_model._at_leader``, ``follower_model._at_follower``, ``replica_loops._at_replica``),
which knows a fast loop: it parks the fetch or sends the answer into the loop, not the heap,
and a broker's timer holds its logic's wake-up alone. The leader's parked fetches of fast loops are woken with the others
(``_poll``), their max waits count in its wake-up, and the leader's order of parked fetches is
kept by where each was parked (``pos``). Everything a compact prediction returns is the same as
with every message a heap event: tests/cluster/test_fastforward_fast_brokers.py compares
``model_digest.compact_fingerprint`` of both over many stretches.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.fastforward.fast_loop import (
    _IDLE,
    ANSWER,
    FETCH,
    PARKED,
    PRE,
    FastLoop,
    _draw,
    _plain,
)
from kraft_testkit.fastforward.observer_loop import NotModelled
from kraft_testkit.sim.node import NEVER

class FastBrokers:
    """Methods of the model (``quorum_model._Model``) for the fast broker loops."""

    def _fast_start(self) -> None:
        """Take the eligible brokers' fetch loops out of the heap and the parked list (a
        compact prediction, before it runs)."""
        self.fast: list[FastLoop] = []
        self.fast_of: dict[int, FastLoop] = {}
        self.fast_parked: list[FastLoop] = []
        self.fast_next = _IDLE
        self.fast_stop = NEVER  # the earliest heartbeat timeout of a fast loop
        self.fast_lean = _IDLE  # the lean path's limit (_fast_until sets it for each window)
        self.fast_last = -1  # the last leader event a lean fetch made
        self.no_lean = set(self.voter_ids)  # fetches _park_alone leaves to the full event
        max_wait, wait = self.cfg.fetch_max_wait_ms, self.fetch_wait
        self.max_wait = max_wait
        pending: dict[int, list] = {}
        beats: dict[int, list] = {}  # a heartbeat or its answer on its way
        for entry in self.heap:
            if entry[3] in ("fetch", "answer"):
                pending.setdefault(entry[4][0], []).append(entry)
            elif entry[3] in ("beat", "beat_answer"):
                beats.setdefault(entry[4][0], []).append(entry)
        for i, p in enumerate(self.parked):
            p.pos = PRE + i
        for n, loop in sorted(self.pred.loops.items()):
            if not loop.voter and loop.beat_to_leader is None:
                continue  # (the model refuses other observers than brokers)
            up, down = _plain(loop.to_leader), _plain(loop.to_node)
            if up is None or down is None or up[1] + down[1] + max_wait >= wait:
                continue  # an answer might come after the broker's fetch timeout
            rec = self.records.get(n)
            mine = pending.get(n, [])
            parked = [p for p in self.parked if p.node == n]
            if rec is None or len(mine) + len(parked) != 1:
                continue
            fb = FastLoop(n, loop, rec, PARKED, _IDLE, voter=loop.voter, up_low=up[0])
            if parked:
                p = parked[0]
                fb.end, fb.deadline, fb.pos = p.offset, p.deadline, p.pos
                latest = p.deadline + down[1]
            else:
                entry = mine[0]
                fb.at, fb.tie = entry[0], entry[1]
                fb.key = entry[0] << 32 | entry[1]
                if entry[3] == "answer":
                    fb.phase, fb.end, fb.hw = ANSWER, entry[4][1], entry[4][2]
                    latest = entry[0]
                else:
                    fb.phase, fb.end = FETCH, entry[4][1]
                    latest = entry[0] + max_wait + down[1]
            timer = loop.timer
            if latest >= loop.raft_wake or timer is None or \
                    timer[0] != min(loop.raft_wake, loop.logic_wake):
                continue  # its Raft timer could fire first, or its timer is elsewhere
            if parked:
                self.parked.remove(parked[0])
                self.fast_parked.append(fb)
            else:
                mine[0][3] = "dead"
            loop.fast = fb
            self.fast.append(fb)
            self.fast_of[n] = fb
            self.no_lean.add(n)
            self._rearm(loop, loop.logic_wake)  # its timer holds its logic's wake-up alone
            if loop.quiet and loop.logic is not None:  # its heartbeats in the loop too
                self._beats_start(fb, beats.get(n, []))
        # the voters' loops first: a lean answer's fetch bounds what the others do after it
        self.fast.sort(key=lambda fb: not fb.voter)
        self.fast_voters = [fb for fb in self.fast if fb.voter]
        if self.fast:
            self._fast_recount()
            self._fast_logic_ran(None)

    def _fast_recount(self) -> None:
        low = _IDLE
        for fb in self.fast:
            if fb.key < low:
                low = fb.key
            if fb.hkey < low:
                low = fb.hkey
        self.fast_next = low

    def _fast_rearm(self, loop: Any) -> None:
        """After a fast loop's full event at the broker: its timer holds its logic's wake-up
        alone (its heartbeats' stream holds it where they are in the loop too)."""
        if not loop.fast.beats:
            self._rearm(loop, loop.logic_wake)
        self._fast_logic_ran(loop)

    def _fast_logic_ran(self, loop: Any) -> None:
        """A fast loop's logic ran (its timer, a heartbeat's answer, an answer it acts on):
        the earliest instant one of their answers could stop the model, its heartbeat's
        timeout, over every fast loop (the lean path stays before it)."""
        stop = NEVER
        for fb in self.fast:
            if fb.loop.beat_deadline < stop:
                stop = fb.loop.beat_deadline
        self.fast_stop = stop

    # ------------------------------------------------------------------ advancing

    def _fast_until(self, limit: int) -> bool:
        """Run every fast loop's events before ``limit`` (instant << 32 | tie, the model's
        next heap event), lean where nothing else can happen at the instant, else as the full
        event, in order; False: the model stopped at one of them (``horizon`` and
        ``stop_tie`` set). A full event may put something in the heap before ``limit`` (a
        heartbeat leaves): the fast loops stop before it and the caller runs it first."""
        horizon = self.horizon << 32
        self.fast_limit = limit if limit < horizon else horizon
        heap, fast, voters = self.heap, self.fast, self.fast_voters
        while True:
            timer = self.timer
            lean = self.fast_limit
            if timer is not None and timer[0] << 32 < lean:
                lean = timer[0] << 32
            if self.fast_stop << 32 < lean:
                lean = self.fast_stop << 32
            # a voter's fetch that is not a lean park (it may move the high watermark and
            # wake every parked fetch, or be answered at once with records whose next fetch
            # may) ends the lean window, and so does the one a voter's answer brings: no lean
            # event of another loop may pass it
            for fb in voters:
                if fb.phase == FETCH:
                    if fb.key < lean and self._voter_bounds(fb.end):
                        lean = fb.key
                elif fb.phase == ANSWER and \
                        self._voter_bounds(max(fb.end, fb.loop.end_offset)):
                    soonest = (fb.at + fb.up_low) << 32
                    if soonest < lean:
                        lean = soonest
            # one pass: each loop's lean events, and the earliest event left
            self.fast_lean = lean  # a lean fetch parked with an earlier max wait lowers it
            low, first = _IDLE, None
            for fb in fast:
                key, hkey = fb.key, fb.hkey
                if key < self.fast_lean or hkey < self.fast_lean:
                    self._fast_lean(fb)
                    key, hkey = fb.key, fb.hkey
                if hkey < key:
                    key = hkey
                if key < low:
                    low, first = key, fb
            self.fast_next = low
            if heap:  # a lean park may have moved the leader's timer into the heap before it
                top = heap[0][0] << 32 | heap[0][1]
                if top < self.fast_limit:
                    self.fast_limit = top
            if low >= self.fast_limit:
                return True
            # the earliest event is not lean (its logic acts, or something else is due at the
            # instant): the model's full event, in order (unless only the window kept it out)
            if self._first_lean(first):
                continue
            tie = first.htie if first.hkey < first.key else first.tie
            if not self._fast_full(first):
                self.pred.stop_tie = tie
                return False
            if heap:
                top = heap[0][0] << 32 | heap[0][1]
                if top < self.fast_limit:
                    self.fast_limit = top

    def _fast_lean(self, fb: FastLoop) -> None:
        """``fb``'s events before ``self.fast_lean`` (before the leader's next wake-up and
        any heartbeat timeout) that are lean, its fetch loop's and its heartbeats' in order;
        it stops at one that is not (an answer its logic acts on, a heartbeat the leader
        must hold). The model's commonest step (two thirds of an idle hour's events): the
        counters are added once on the way out. (The links' draws written out here instead of
        :func:`_draw` saved nothing measurable: the model 0.550-0.568 against 0.558-0.582
        cpu-s per virtual hour, ``bench_quorum_model.py --cases 3+10:1 --compact``.)"""
        loop = fb.loop
        held, fetch_wait, clean_at = loop.held, self.fetch_wait, loop.clean_at
        up, down = loop.to_leader, loop.to_node
        answers = fetches = 0
        try:
            while True:
                lean = self.fast_lean
                key = fb.key
                if fb.hkey < key:
                    if fb.hkey >= lean or not self._beat_lean(fb):
                        return
                    continue
                if key >= lean:
                    return
                at = fb.at
                if fb.phase == ANSWER:  # what _at_follower does with an answer it holds
                    if at >= loop.raft_wake:
                        raise NotModelled(f"broker {fb.node}'s fetch timed out")
                    if at >= loop.logic_wake:
                        return  # its logic acts: the full event
                    end = loop.end_offset
                    if fb.end > end:
                        end = fb.end
                    hw = fb.hw if fb.hw < end else end
                    hw0 = loop.high_watermark
                    if hw > hw0:  # the logic runs at the commit (_replica_tick): a replica
                        rep = loop.rep  # fetch or an ISR check that acts is a wake-up of its
                        # logic (the answer was not lean), so this one only moves the instants
                        if rep is not None and rep.next_fetch is not None and \
                                at >= rep.next_fetch:
                            rep.next_fetch = at + rep.fetch_interval
                        isr = loop.isr_check
                        if isr is not None and at >= isr:
                            loop.isr_check = at + loop.isr_interval
                        loop.high_watermark = hw
                    else:
                        hw = hw0
                    loop.end_offset = end
                    held.append((at, end, hw))
                    wake = at + fetch_wait
                    loop.raft_wake = wake if wake < clean_at else clean_at
                    answers += 1
                    fb.phase, fb.end = FETCH, end
                    _draw(fb, up, at)
                    at, key = fb.at, fb.key
                    if fb.voter and key < self.fast_lean and self._voter_bounds(end):
                        self.fast_lean = key  # its fetch ends the lean window
                else:  # a fetch at the leader, nothing due there: parked, or answered at once
                    offset, rec = fb.end, fb.rec
                    if fb.voter and not self._voter_parks(fb.node, offset, at):
                        return  # the full event (it may move the high watermark, or be
                        # answered at once, or check-quorum is the leader's next wake-up)
                    fetches += 1
                    if at > self.fast_last:
                        self.fast_last = at
                    if offset == self.end:
                        rec[0] = rec[2] = at
                        rec[1] = offset
                        fb.phase, fb.key, fb.pos = PARKED, _IDLE, key
                        fb.deadline = deadline = at + self.max_wait
                        self.fast_parked.append(fb)
                        if deadline < self.parked_min:
                            self.parked_min = deadline
                            timer = self.timer
                            if timer is None or deadline < timer[0]:
                                self._rearm(self, deadline)  # the leader's wake-up moved
                                if deadline << 32 < self.fast_lean:
                                    self.fast_lean = deadline << 32
                        continue  # its heartbeats' stream may have more before the limit
                    if offset > self.end:
                        raise NotModelled(f"node {fb.node} fetches past the leader's log end")
                    rec[0] = at
                    rec[1] = offset
                    fb.phase, fb.end, fb.hw = ANSWER, self.end, self.hw
                    _draw(fb, down, at)
                    at = fb.at
        finally:
            self.follower_answers += answers
            self.follower_fetches += fetches
            self.omitted += answers + fetches

    def _first_lean(self, fb: FastLoop) -> bool:
        """The earliest event of all, a broker's answer or fetch past the lean window, run
        lean where only the window's bounds kept it out (a voter's fetch to come, a lean
        park's max wait: they guard the events after them, and none comes before this one)
        and its own conditions hold: the answer's broker's logic and timers, the fetch
        before the leader's next wake-up instant. A third of the brokers' full events were
        such. False: the full event."""
        key = fb.key
        if fb.voter or fb.hkey < key or key >= self.fast_stop << 32:
            return False
        loop, at = fb.loop, fb.at
        if fb.phase == ANSWER:
            if at >= loop.raft_wake or at >= loop.beat_deadline or at >= loop.logic_wake or \
                    (loop.rep is not None and self._isr_blocked(loop, at) is not None):
                return False
        elif self.timer is not None and at >= self.timer[0]:
            return False
        self.fast_lean = key + 1  # this event alone (the next pass sets the window again)
        self._fast_lean(fb)
        return True

    def _voter_bounds(self, offset: int) -> bool:
        """Whether a voter's fetch at ``offset`` is the full event: not at the log end (it is
        answered at once), or it may move the high watermark."""
        return offset != self.end or (offset > self.hw and offset > self.lead.epoch_start)

    def _voter_parks(self, n: int, offset: int, at: int) -> bool:
        """A voter's fetch at the log end that cannot move the high watermark, taken as
        ``_update_replica`` takes it (its progress and the check-quorum deadline, which is
        not the leader's next wake-up) before it is parked; False: the full event."""
        if self._voter_bounds(offset):
            return False
        timer = self.timer
        if timer is None or timer[0] >= self.check_deadline:
            return False
        self.progress[n] = offset
        check = at + self.check_ms
        if check > self.check_deadline:  # (the two voters' lean fetches run loop by loop)
            self.check_deadline = check
        return True

    def _fast_full(self, fb: FastLoop) -> bool:
        """The earliest fast event, not lean: the model's full event (an answer at or past
        the broker's logic wake-up or ISR check, or past where the lean path stops; a fetch
        where the leader has work due; a heartbeat: ``fast_beats.py``)."""
        if fb.hkey < fb.key:
            return self._beat_full(fb)
        at, tie = fb.at, fb.tie
        key, fb.key = fb.key, _IDLE  # the full event sends the next message into the loop
        if fb.phase == ANSWER:
            done = self._at_follower([at, tie, 0, "answer", (fb.node, fb.end, fb.hw)])
        else:
            fb.phase = PARKED  # until _at_leader parks or answers it
            if at > self.fast_last:
                self.fast_last = at
            done = self._at_leader([at, tie, 0, "fetch", (fb.node, fb.end)])
            if not done:
                fb.phase = FETCH
        if not done:  # stopped before it: it is still on its way
            fb.key = key
        return done

    # ------------------------------------------------------------------ the full events' hooks

    def _fast_park(self, fb: FastLoop, at: int, tie: int, offset: int, deadline: int) -> None:
        """The leader's full event parked the fast loop's fetch."""
        fb.phase, fb.key, fb.end, fb.deadline, fb.pos = PARKED, _IDLE, offset, deadline, \
            at << 32 | tie
        self.fast_parked.append(fb)

    def _fast_answered(self, fb: FastLoop, at: int, end: int, hw: int) -> None:
        """The leader answered the fast loop's fetch at ``at``."""
        fb.phase, fb.end, fb.hw = ANSWER, end, hw
        _draw(fb, fb.loop.to_node, at)
        if fb.key < self.fast_next:
            self.fast_next = fb.key

    def _fast_fetched(self, fb: FastLoop, at: int, end: int) -> None:
        """The broker's full event sent its next fetch."""
        fb.phase, fb.end = FETCH, end
        _draw(fb, fb.loop.to_leader, at)
        if fb.key < self.fast_next:
            self.fast_next = fb.key

    def _fast_wake_parked(self, at: int, wake_all: bool, sends: list) -> int:
        """The leader's poll: the fast loops' parked fetches it answers now (all when woken,
        else those whose max wait ran out); returns the earliest max wait left."""
        still, low = [], NEVER
        end = self.end
        hw, first = self.hw, self.fast_next
        for fb in self.fast_parked:
            if wake_all or fb.deadline <= at:
                if fb.voter:  # _update_replica at the same offset: check-quorum renewed
                    self.check_deadline = at + self.check_ms
                rec = fb.rec
                rec[0] = at
                rec[1] = fb.end
                if fb.end >= end:
                    rec[2] = at
                fb.phase, fb.end, fb.hw = ANSWER, end, hw  # the answer leaves now
                _draw(fb, fb.loop.to_node, at)
                key = fb.key
                if key < first:
                    first = key
            else:
                still.append(fb)
                if fb.deadline < low:
                    low = fb.deadline
        self.fast_parked = still
        self.fast_next = first
        return low

    # ------------------------------------------------------------------ the end

    def _fast_finish(self, pred: Any) -> None:
        """What the prediction reports of the fast loops: their messages in flight, their
        parked fetches in the leader's order, and the leader's last event and wake-ups."""
        pred.fast_loops = len(self.fast)
        pred.fast_beats = sum(fb.beats for fb in self.fast)
        for fb in self.fast:
            fb.loop.fast = None  # no cycle left: the stretch's loops go by refcount, not GC
            if fb.beats:
                self._beats_in_flight(fb, pred.in_flight)
            if fb.phase == ANSWER:
                pred.in_flight.append((fb.at, fb.tie, 0, "answer", (fb.node, fb.end, fb.hw)))
            elif fb.phase == FETCH:
                pred.in_flight.append((fb.at, fb.tie, 0, "fetch", (fb.node, fb.end)))
        pred.in_flight.sort()
        both = [(p.pos, p.node, p.deadline) for p in self.parked] + \
            [(fb.pos, fb.node, fb.deadline) for fb in self.fast_parked]
        both.sort()
        pred.parked = [(n, d) for _, n, d in both]
        last = self.leader_wakes[0] if self.leader_wakes is not None else -1
        if self.fast_last > last:
            last = self.fast_last
        if last >= 0:  # the wake-ups its last event left (a lean fetch's too)
            pred.leader_wakes = (last, *self._leader_wake_now())

