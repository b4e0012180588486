"""A quiet broker's heartbeats inside its fast loop (``fast_brokers.py``), out of the heap.

In a compact prediction a broker that hosts nothing has its heartbeat events held
(``Loop.logic``, set by ``held_events.py``): its timer sends the heartbeat, the heartbeat
reaches the leader, the answer reaches the broker. Where the broker's fetch loop is fast and
its controller links are Fixed or Uniform, this cycle is the loop's second stream (``hphase``:
due, on its way, waiting at the leader, answer on its way; ``hkey`` its next event), run in
order with the fetch stream (both read and move the broker's state: a heartbeat reports the
high watermark the answers before it brought, an answer is lean only before the heartbeat
falls due):

- the timer (a due heartbeat leaves) and the answer (the next one is due an interval later)
  are the broker's own events: they run whenever they come first, as
  ``follower_model._follower_timer`` and ``_at_follower`` would, and stop the model where those
  stop it (its Raft timer, a heartbeat timed out);
- the heartbeat at the leader is lean before the leader's next wake-up instant when the
  controller answers it at once (nothing written is uncommitted) and its lease was not the
  leader's wake-up: the lease renewed, the answer on its way. Otherwise it is the model's full
  event (``_at_leader``), which holds it in ``waiting`` or answers it into the loop.

Its timer is then the loop's (no heap entry): a due heartbeat's instant and the node's tie
there. ``model_digest.compact_fingerprint`` of a prediction made so equals the heap-only one's
(tests/cluster/test_fastforward_fast_brokers.py).
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.fastforward.fast_loop import _IDLE, FastLoop, _plain
from kraft_testkit.fastforward.follower_model import ANSWER, ARRIVE, SEND
from kraft_testkit.sim.node import NEVER
from kraft_testkit.sim.streams import tie_at

DUE, BEAT, WAITING, BACK = 1, 2, 3, 4  # the heartbeat: due, to the leader, held there, answered


class FastBeats:
    """Methods of the model (``quorum_model._Model``) for the heartbeats in fast loops."""

    def _beats_start(self, fb: FastLoop, pending: list) -> None:
        """Take a quiet broker's heartbeat into its fast loop (``_fast_start``): its due
        timer, or its heartbeat on its way, held at the leader or answered (``pending``: the
        heap entries of its heartbeat's messages)."""
        loop = fb.loop
        if _plain(loop.beat_to_leader) is None or _plain(loop.beat_to_node) is None or \
                len(pending) + any(w[0] == fb.node for w in self.waiting) + \
                (loop.next_beat is not None) != 1:
            return
        fb.beats = True
        if loop.next_beat is not None:
            self._beat_due(fb)
        elif pending:
            entry = pending[0]
            entry[3], kind = "dead", entry[3]
            fb.hphase = BEAT if kind == "beat" else BACK
            fb.hat, fb.htie, fb.hkey = entry[0], entry[1], entry[0] << 32 | entry[1]
        else:
            fb.hphase = WAITING
        if loop.timer is not None:  # the loop holds its timer: a due heartbeat's instant
            loop.timer[3] = "dead"
            loop.timer = None

    def _beat_due(self, fb: FastLoop) -> None:
        at = fb.loop.next_beat
        fb.hphase, fb.hat, fb.htie = DUE, at, tie_at(fb.loop.timer_key, at)
        fb.hkey = at << 32 | fb.htie

    # ------------------------------------------------------------------ the events

    def _beat_lean(self, fb: FastLoop) -> bool:
        """``fb``'s next heartbeat event, lean; False: it is not (the full event runs it)."""
        phase, at, loop = fb.hphase, fb.hat, fb.loop
        if phase == DUE:  # _follower_timer: the heartbeat leaves
            if at >= loop.raft_wake or loop.next_beat is None or at < loop.next_beat:
                return False
            loop.logic.append((SEND, at, loop.high_watermark - 1))
            self.omitted += 1
            loop.next_beat = None
            loop.beat_deadline = deadline = at + loop.beat_timeout
            self._replica_tick(loop, at)
            self._logic_wake(loop)
            self._beat_sent(fb, at)
            if deadline < self.fast_stop:
                self.fast_stop = deadline
                if deadline << 32 < self.fast_lean:
                    self.fast_lean = deadline << 32
            return True
        if phase == BACK:  # _at_follower: the next heartbeat is due an interval later
            if at >= loop.raft_wake or at >= loop.beat_deadline:
                return False
            loop.logic.append((ANSWER, at, 0))
            self.omitted += 1
            loop.next_beat = at + loop.beat_interval
            old, loop.beat_deadline = loop.beat_deadline, NEVER
            self._replica_tick(loop, at)
            self._logic_wake(loop)
            self._beat_due(fb)
            if old == self.fast_stop:
                self._fast_logic_ran(loop)
            return True
        # BEAT: at the leader, answered at once, its lease not the leader's wake-up
        n, timer, leases = fb.node, self.timer, self.leases
        old = leases.get(n, NEVER)
        if self.written > self.hw - 1 or timer is None or old <= timer[0]:
            return False
        self._lease_renewed(n, at)
        self.pred.beats[n] = at
        self.pred.latencies.append(0)
        loop.logic.append((ARRIVE, at, 0))
        self.omitted += 1
        if at > self.fast_last:
            self.fast_last = at
        self._beat_answered(fb, at)
        return True

    def _beat_full(self, fb: FastLoop) -> bool:
        """``fb``'s next heartbeat event as the model's full event, in order; False: the model
        stopped there."""
        if fb.hphase == BEAT:
            key, fb.hphase, fb.hkey = fb.hkey, WAITING, _IDLE  # until answered into the loop
            done = self._at_leader([fb.hat, fb.htie, 0, "beat", (fb.node,)])
            if not done:
                fb.hphase, fb.hkey = BEAT, key
            return done
        if self._beat_lean(fb):
            return True
        return self._stop(fb.hat, f"node {fb.node}'s own timer")

    # ------------------------------------------------------------------ the full events' hooks

    def _beat_sent(self, fb: FastLoop, at: int) -> None:
        """The broker's heartbeat left at ``at``."""
        self._beat_on_its_way(fb, BEAT, fb.loop.beat_to_leader, at)

    def _beat_answered(self, fb: FastLoop, at: int) -> None:
        """The leader answered the broker's heartbeat at ``at``."""
        self._beat_on_its_way(fb, BACK, fb.loop.beat_to_node, at)

    def _beat_on_its_way(self, fb: FastLoop, phase: int, clock: Any, at: int) -> None:
        fb.hphase = phase
        fb.hat, fb.htie = a_at, a_tie = clock.arrival(at)
        fb.hkey = key = a_at << 32 | a_tie
        if key < self.fast_next:
            self.fast_next = key

    def _beats_in_flight(self, fb: FastLoop, in_flight: list[Any]) -> None:
        """The prediction's end: ``fb``'s heartbeat or answer still on its way."""
        if fb.hphase == BEAT:
            in_flight.append((fb.hat, fb.htie, 0, "beat", (fb.node,)))
        elif fb.hphase == BACK:
            in_flight.append((fb.hat, fb.htie, 0, "beat_answer", (fb.node,)))
