"""The brokers' metadata fetch loops, computed instead of stepped, in idle stretches.

While the cluster is idle (:mod:`kraft_testkit.fastforward.idle`) a broker's fetch request in
flight to the leader is taken out of the heap: the broker is *detached*. Its loop then runs
as cheap guard events at the instants stepping would have delivered its messages (the links'
draws by position: :class:`~kraft_testkit.fastforward.observer_loop.LinkClock`):

- at the leader, the fetch updates the leader's record of the broker (the leader's own
  ``_update_replica``), and is answered at once when the broker is behind the leader's log
  end, else held ("ghost parked") until a leader event appends or moves the high watermark;
- at the broker, the answer is noted (offset, log end, high watermark) and the next fetch
  leaves at once, as the broker's Raft client would send it.

No broker code runs meanwhile. Before any event of the broker's own (its timer, any other
message), at a fetch that reaches the leader in a millisecond where the leader has work due
(node code does due work in the first event of that millisecond), and at the end of the run,
the broker is *materialized*: every noted answer is built from the leader's log as the
leader would have sent it and handed to the broker's machine at its own instant (its Raft
append, listener deliveries, image, logic and timer run as stepping runs them), the fetches
it sends are swallowed (they were accounted for), the links' counters and FIFO instants are
set where stepping left them, and the one message in flight (or the parked fetch) is put
back. A window's NoOp answers are handed over as one when nothing that depends on the instant
happens between them (``_can_batch``). What it saves is the leader's events for the brokers'
fetches and the per-event wire codec and invariants of the brokers' (benchmarks/README.md has
the figures and what is left).

Anything the model does not cover raises :class:`InexactFastForward` rather than going on.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.errors import KraftError
from kraft_testkit.fastforward.answers import directory, fetch_part, only_noops, read_until
from kraft_testkit.fastforward.idle import is_idle, why_not_idle
from kraft_testkit.fastforward.observer_loop import LinkClock
from kraft_testkit.metadata.snapshot_generator import batch_bytes
from kraft_testkit.protocol.records import iter_batches
from kraft_testkit.raft import errors as E
from kraft_testkit.raft import rpc
from kraft_testkit.raft.replica_state import _Parked
from kraft_testkit.sim.errors import InvalidArgument
from kraft_testkit.sim.network import Packet
from kraft_testkit.sim.node import Effects


class InexactFastForward(KraftError):
    """The fast-forward met something it cannot reproduce exactly (a bug, or a case to step)."""


class _Detached:
    """One broker's computed loop."""

    def __init__(self, broker: int, request: Any, packet: Packet, to_leader: LinkClock,
                 to_broker: LinkClock, offset: int, hw: int) -> None:
        self.broker = broker
        self.request = request  # the fetch the broker sent last (its envelope, with its cid)
        self.packet = packet
        self.to_leader = to_leader
        self.to_broker = to_broker
        self.offset = offset  # the broker's log end as its loop left it
        self.hw = hw
        self.answers: list[tuple[int, ...]] = []  # (at, offset, end, hw, log start) to replay
        self.phase = "to_leader"  # or "parked", "to_broker"
        self.guard: list | None = None  # the heap entry standing for the message in flight
        self.deadline = 0  # when parked
        self.answer: tuple[int, ...] | None = None  # in flight: (offset, end, hw, log start)
        self.timer_entry: list | None = None


class BrokerLoops:
    """Runs a cluster with its brokers' fetch loops computed where it can (see the module)."""

    CHECK_EVERY = 16  # events between two looks for brokers to detach

    def __init__(self, cluster: Any) -> None:
        self.c = cluster
        self.sim = cluster.sim
        self.net = cluster.sim.network
        self.sched = cluster.sim.scheduler
        self.detached: dict[int, _Detached] = {}
        self.leader: int | None = None
        self._wrapped: Any = None
        self._ours: set[Any] = {self._at_leader, self._at_broker}  # idle traffic too
        self._due: set[int] = set()  # ghost-parked brokers to put back at the next boundary
        self._links_ok: bool | None = None  # profiles do not change inside run_for
        self.batched = True  # fill a window's answers in with one (see _can_batch)
        self.stats = {"detached": 0, "computed": 0, "materialized": 0, "stepped_at_due": 0,
                      "batched": 0}

    # ------------------------------------------------------------------ running

    def run_for(self, ms: int) -> None:
        """``cluster.run_for(ms)``, with the brokers' loops computed in idle stretches."""
        if type(ms) is not int or ms < 0:
            raise InvalidArgument(f"run_for needs an int >= 0 of ms, got {ms!r}")
        sim, sched = self.sim, self.sched
        end = sched.now_ms + ms
        n = 0
        hooks = self.net._hooks  # noqa: SLF001
        hooks.append(self._before_delivery)
        try:
            while (at := sched.next_at()) is not None and at <= end:
                if n % self.CHECK_EVERY == 0:
                    self._detach_what_can()
                n += 1
                sim.step()
                if self._due:
                    for b in sorted(self._due):
                        if b in self.detached:
                            self._materialize(b)
                    self._due.clear()
        except BaseException as e:
            # Bring the brokers back as far as possible, but let the first error be the one
            # the caller sees (a failed fill-in must not hide it).
            hooks.remove(self._before_delivery)
            try:
                self.materialize_all()
            except KraftError:
                pass
            if isinstance(e, InexactFastForward):
                raise self._with_replay(e) from None
            raise
        hooks.remove(self._before_delivery)
        try:
            self.materialize_all()
        except InexactFastForward as e:
            raise self._with_replay(e) from None
        if sim.check_invariants and sim._invariants:  # noqa: SLF001 - the fill-in is an event
            sim._check_event()  # noqa: SLF001
        sched.advance_to(end)

    def _with_replay(self, e: InexactFastForward) -> InexactFastForward:
        return InexactFastForward(f"{e}; replay with {self.sim.replay_hint} "
                                  "(fast_forward=False steps the same run)")

    def _before_delivery(self, src: int, dst: int, msg: object) -> None:
        """Any message for a detached broker: materialize it first (its own event)."""
        if dst in self.detached:
            self._materialize(dst)

    def materialize_all(self) -> None:
        for b in list(self.detached):
            self._materialize(b)
        self._unwrap_leader()

    # ------------------------------------------------------------------ detaching

    def _detach_what_can(self) -> None:
        c = self.c
        if len(self.detached) == len(c.broker_ids):
            return
        if self._links_ok is None:
            self._links_ok = not any(r.startswith("the link ")
                                     for r in why_not_idle(c, allowed=self._ours))
        if not self._links_ok or not is_idle(c, links=False, allowed=self._ours):
            return
        leader = c.active_controller.id
        if self.leader is not None and self.leader != leader:
            raise InexactFastForward(f"the leader moved from {self.leader} to {leader}")
        arrive = self.net._arrive_cb  # noqa: SLF001
        flights: dict[int, list[list]] = {}
        for entry in self.sched._heap:  # noqa: SLF001
            if entry[3] is arrive:
                p = entry[4]
                flights.setdefault(p.src, []).append(entry)
                flights.setdefault(p.dst, []).append(entry)
        for b in c.broker_ids:
            if b in self.detached:
                continue
            mine = flights.get(b, [])
            if len(mine) != 1:
                continue
            entry = mine[0]
            p = entry[4]
            if p.src != b or p.dst != leader or type(p.msg.body).__name__ != "FetchRequest" \
                    or p.link is not self.net._link(b, leader):  # noqa: SLF001
                continue
            process = self.sim.process(b)
            if process._timer is None:  # noqa: SLF001
                continue
            self._detach(b, leader, entry)

    def _detach(self, b: int, leader: int, entry: list) -> None:
        packet = entry[4]
        replica = self.c.replica(b)
        part = rpc.fetch_partition(packet.msg.body)
        if part.fetch_offset != replica.log_end_offset:
            return  # not at its log end (a snapshot download...): leave it stepped
        if not only_noops(self.c.replica(leader).log, replica._next,  # noqa: SLF001
                          self.c.replica(leader).log_end_offset):
            return  # records the broker has yet to apply, beyond NoOps: step them
        # Only now watch the leader: a broker left stepped needs no wrapper on its events.
        self.leader = leader
        self._wrap_leader(leader)
        d = _Detached(b, packet.msg, packet, LinkClock.of(self.net, b, leader),
                      LinkClock.of(self.net, leader, b), part.fetch_offset, replica.hw)
        self.sched.cancel(entry)
        d.guard = self.sched.call_at(entry[0], self._at_leader, d, entry[1])
        process = self.sim.process(b)
        timer = process._timer  # noqa: SLF001
        timer[3] = fire = self._own_timer(b, timer)
        self._ours.add(fire)
        d.timer_entry = timer
        self.detached[b] = d
        self.stats["detached"] += 1

    def _own_timer(self, b: int, entry: list) -> Any:
        def fire(arg: object) -> None:
            process = self.sim.process(b)
            self._materialize(b)
            if process._timer is entry:  # noqa: SLF001 - still due now: it fires
                process._fire_timer(arg)  # noqa: SLF001
        return fire

    # ------------------------------------------------------------------ the computed loop

    def _leader_timer_at(self) -> int | None:
        """When the leader's pending timer event is due (None: none pending)."""
        timer = self.sim.process(self.leader)._timer  # noqa: SLF001
        return None if timer is None or timer[3] is None else timer[0]

    def _leader_wake(self) -> int:
        """When the leader's node asked to be woken next (after its last event)."""
        return self.sim.process(self.leader).machine._wake  # noqa: SLF001

    def _at_leader(self, d: _Detached) -> None:
        """The broker's fetch reaches the leader (a guard event at its instant and tie)."""
        now = self.sched.now_ms
        d.guard = None
        r = self.c.replica(self.leader)
        due = self._leader_timer_at()
        parks = d.offset >= r.log_end_offset
        deadline = now + self.c.raft_config.fetch_max_wait_ms
        if due == now or (parks and self._leader_wake() >= deadline):
            # the leader has work due in this millisecond (this event would do it), or the
            # parked fetch could reach its max wait: step this fetch for real
            self.stats["stepped_at_due"] += 1
            self._materialize(d.broker, deliver_request=True)
            return
        self.stats["computed"] += 1
        r._update_replica(d.broker, directory(d.request), d.offset, now)  # noqa: SLF001
        if parks:
            d.phase, d.deadline = "parked", deadline
            self._sync_leader_wake()
            return
        self._answer(d, now, r.log_end_offset, r.hw)

    def _answer(self, d: _Detached, now: int, end: int, hw: int) -> None:
        at, tie = d.to_broker.arrival(now)
        start = self.c.replica(self.leader).log_start_offset
        d.phase, d.answer = "to_broker", (d.offset, end, hw, start)
        d.guard = self.sched.call_at(at, self._at_broker, d, tie)

    def _after_leader_event(self, before: tuple[int, int], out: Any) -> Any:
        """After each leader event: answer the ghost-parked fetches it woke, and leave the
        leader's wake-ups as the parked fetches would have (returns the event's effects)."""
        r = self.c.replica(self.leader)
        if not r.is_leader:
            raise InexactFastForward(f"leader {self.leader} stepped down in a stretch")
        state = (r.log_end_offset, r.hw)
        now = self.sched.now_ms
        if state != before:
            for d in self.detached.values():
                if d.phase == "parked":
                    r._update_replica(d.broker, directory(d.request), d.offset, now)  # noqa: SLF001
                    self._answer(d, now, *state)
        return self._sync_leader_wake(out)

    def _ghost_deadline(self) -> int | None:
        deadlines = [d.deadline for d in self.detached.values() if d.phase == "parked"]
        return min(deadlines) if deadlines else None

    def _sync_leader_wake(self, out: Any = None) -> Any:
        """Stepping keeps a parked fetch's deadline among the leader's wake-ups: the Raft
        client's (``_timer_at``, the node's ``_raft_wake``) and, when it comes first, the
        node's timer. Lower them to the ghost-parked deadlines as stepping would have; a
        fetch whose deadline became the leader's next wake-up is put back at the next event
        boundary (materialized), so the leader's own code answers it at its max wait."""
        g = self._ghost_deadline()
        if g is None:
            return out
        node = self.sim.process(self.leader).machine
        r = node.raft
        if r._timer_at is None or g < r._timer_at:  # noqa: SLF001
            r._timer_at = g  # noqa: SLF001
        if g < node._raft_wake:  # noqa: SLF001
            node._raft_wake = g  # noqa: SLF001
        if g <= node._wake:  # noqa: SLF001 - it comes first: the node's timer moves
            if g < node._wake:  # noqa: SLF001 (only inside a leader event: a ghost parks
                node._wake = g  # noqa: SLF001  before the node's next wake-up)
                if out is None:
                    out = Effects()
                out.timer_ms = g
            self._due.update(d.broker for d in self.detached.values()
                             if d.phase == "parked" and d.deadline == g)
        return out

    def _at_broker(self, d: _Detached) -> None:
        """The answer reaches the broker: note it; its next fetch leaves at once."""
        now = self.sched.now_ms
        d.guard = None
        process = self.sim.process(d.broker)
        timer = process._timer  # noqa: SLF001
        offset, end = d.answer[0], d.answer[1]
        if (timer is not None and timer[0] <= now) or \
                not only_noops(self.c.replica(self.leader).log, offset, end):
            # its own work is due in this event, or the answer brings records it reacts to
            self.stats["stepped_at_due"] += 1
            self._materialize(d.broker, deliver_answer=True)
            return
        hw, start = d.answer[2], d.answer[3]
        d.answers.append((now, offset, end, hw, start))
        d.answer = None
        d.offset = max(d.offset, end)
        d.hw = max(d.hw, min(hw, d.offset))
        at, tie = d.to_leader.arrival(now)
        d.phase = "to_leader"
        d.guard = self.sched.call_at(at, self._at_leader, d, tie)

    # ------------------------------------------------------------------ materializing

    def _response(self, d: _Detached, cid: int, offset: int, end: int, hw: int,
                  start: int) -> Any:
        """The answer as the leader built it: its batches [offset, end), high watermark and
        log start then."""
        r = self.c.replica(self.leader)
        log = r.log
        if log.start_offset > offset:
            raise InexactFastForward("the leader's log start moved past a computed fetch")
        records = read_until(log, offset, end, min(fetch_part(d.request).partition_max_bytes,
                                                    r.config.fetch_max_bytes))
        if records:
            body = rpc.fetch_response(E.NONE, r.epoch, r.id, hw, start, records)
        else:
            body = rpc.fetch_response(E.NONE, r.epoch, r.id, hw, start)
        return rpc.response(cid, body)

    def _wire(self, msg: Any) -> tuple[Any, bytes | None]:
        codec = self.net.codec
        if codec is None:
            return msg, None
        data = codec.encode(msg)
        return codec.decode(data), data

    def _materialize(self, b: int, *, deliver_request: bool = False,
                     deliver_answer: bool = False) -> None:
        d = self.detached.pop(b)
        self.stats["materialized"] += 1
        net, sched = self.net, self.sched
        process = self.sim.process(b)
        if d.timer_entry is not None and d.timer_entry[3] is not None:
            d.timer_entry[3] = process._timer_cb  # noqa: SLF001
        if d.guard is not None:
            sched.cancel(d.guard)
        leader = self.leader
        real_send = net.send
        sent: list[Any] = []
        now = sched.now_ms

        def swallow(src: int, dst: int, msg: Any) -> None:
            if src == b and dst == leader and type(msg.body).__name__ == "FetchRequest":
                sent.append(msg)
                self.sim.trace.record(sched.now_ms, "send", src, dst, "FetchRequest")
            elif sched.now_ms == now:
                real_send(src, dst, msg)
            else:
                raise InexactFastForward(f"broker {b} sent {type(msg.body).__name__} while "
                                         f"its answers were replayed")

        net.send = swallow
        answers = d.answers
        if len(answers) > 1 and self.batched and self._can_batch(d, process):
            # one answer carrying the window's batches, at the last answer's instant
            first, last = answers[0], answers[-1]
            answers = [(last[0], first[1], last[2], last[3], last[4])]
            replica = process.machine.raft
            replica._cid = (replica._cid + len(d.answers) - 1) & 0x7FFFFFFF  # noqa: SLF001
            self.stats["batched"] += len(d.answers)
        try:
            for i, (at, offset, end, hw, start) in enumerate(answers):
                msg, _ = self._wire(self._response(d, d.request.correlation_id, offset, end, hw,
                                                   start))
                sched.now_ms = at
                process.receive(Packet(leader, b, msg, None, process.incarnation))
                if len(sent) != 1:
                    raise InexactFastForward(f"broker {b} sent {len(sent)} fetches for one answer")
                d.request = sent.pop()
                if fetch_part(d.request).fetch_offset != max(offset, end):
                    raise InexactFastForward(f"broker {b}'s fetch offset differs from the model")
                timer = process._timer  # noqa: SLF001
                nxt = answers[i + 1][0] if i + 1 < len(answers) else now
                if timer is not None and timer[0] < nxt:
                    raise InexactFastForward(f"broker {b}'s timer at {timer[0]} ms would have "
                                             f"fired in the stretch")
        finally:
            sched.now_ms = now
            net.send = real_send
        self._set_link(b, leader, d.to_leader)
        self._set_link(leader, b, d.to_broker)
        link_up = net._link(b, leader)  # noqa: SLF001
        link_down = net._link(leader, b)  # noqa: SLF001
        leader_process = self.sim.process(leader)
        if d.phase == "to_leader":
            msg, data = self._wire(d.request)
            packet = Packet(b, leader, d.request if data is not None else msg, data,
                            leader_process.incarnation, link_up)
            if deliver_request:
                net._arrive_cb(packet)  # noqa: SLF001 - this very event is its arrival
            else:
                sched.call_at(d.guard[0], net._arrive_cb, packet, d.guard[1])  # noqa: SLF001
        elif d.phase == "parked":
            msg, _ = self._wire(d.request)
            r = self.c.replica(leader)
            r._lead.parked.append(_Parked(b, msg.correlation_id, b,  # noqa: SLF001
                                          rpc.fetch_partition(msg.body), d.deadline))
        else:
            resp = self._response(d, d.request.correlation_id, *d.answer)
            msg, data = self._wire(resp)
            packet = Packet(leader, b, resp if data is not None else msg, data,
                            process.incarnation, link_down)
            if deliver_answer:
                net._arrive_cb(packet)  # noqa: SLF001
            else:
                sched.call_at(d.guard[0], net._arrive_cb, packet, d.guard[1])  # noqa: SLF001
        if not self.detached:
            self._unwrap_leader()

    def _can_batch(self, d: _Detached, process: Any) -> bool:
        """Whether the window's answers may be handed over as one, at the last one's instant.

        Nothing of the broker's is observable between them (it is detached: no event of its
        own ran), so one answer is exact when every per-answer step that depends on the
        instant does nothing in the window: the broker's timer would not have fired between
        two answers (each answer pushes its fetch deadline ``fetch_timeout_ms`` on), the
        snapshot generator takes no snapshot (neither its interval nor its bytes run out) and
        starts from a known instant, the log cleaner is not due, and the leader's read of the
        whole range is not cut by the fetch size."""
        node = process.machine
        replica = node.raft
        answers = d.answers
        last_at = answers[-1][0]
        gap = min(replica.config.fetch_timeout_ms, replica.config.request_timeout_ms)
        if any(b[0] - a[0] >= gap for a, b in zip(answers, answers[1:])):
            return False
        if replica._clean_at <= last_at:  # noqa: SLF001
            return False
        gen = node._fan_out.generator  # noqa: SLF001
        leader_log = self.c.replica(self.leader).log
        final_hw = min(answers[-1][3], answers[-1][2])
        if gen is not None:
            if gen.last_ms is None or (gen.max_interval_ms and
                                       gen.last_ms + gen.max_interval_ms <= last_at):
                return False
            batches = leader_log.batches_between(replica._next,  # noqa: SLF001
                                                 max(final_hw, replica._next))  # noqa: SLF001
            if any(getattr(b, "records", None) is None for b in batches):
                return False  # settled below a leader's snapshot: sizes unknown here
            window = sum(batch_bytes(b) for b in batches)
            if gen.bytes_since + window >= gen.max_bytes:
                return False
        first_offset, final_end = answers[0][1], answers[-1][2]
        max_bytes = min(fetch_part(d.request).partition_max_bytes,
                        self.c.replica(self.leader).config.fetch_max_bytes)
        records = read_until(leader_log, first_offset, final_end, max_bytes)
        covered = first_offset
        for _, batch in iter_batches(records):
            covered = batch.last_offset + 1
        return covered >= final_end

    def _set_link(self, src: int, dst: int, clock: LinkClock) -> None:
        link = self.net._link(src, dst)  # noqa: SLF001
        link.sent, link.last_at, link.last_tie = clock.sent, clock._last_at, clock._last_tie

    # ------------------------------------------------------------------ the leader's events

    def _wrap_leader(self, leader: int) -> None:
        if self._wrapped is not None:
            return
        node = self.sim.process(leader).machine
        on_message, on_timer = node.on_message, node.on_timer
        replica = self.c.replica(leader)

        def message(src: int, msg: object, now_ms: int) -> Any:
            before = (replica.log_end_offset, replica.hw)
            return self._after_leader_event(before, on_message(src, msg, now_ms))

        def timer(now_ms: int) -> Any:
            before = (replica.log_end_offset, replica.hw)
            return self._after_leader_event(before, on_timer(now_ms))

        node.on_message, node.on_timer = message, timer
        self._wrapped = node

    def _unwrap_leader(self) -> None:
        node, self._wrapped = self._wrapped, None
        if node is not None:
            del node.on_message, node.on_timer
        self.leader = None
