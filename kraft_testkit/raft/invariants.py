"""Safety invariants of a Raft quorum, checked after every event of a simulation.

:class:`RaftInvariants` watches every replica of a :class:`~kraft_testkit.sim.Simulation` and
raises :class:`~kraft_testkit.sim.InvariantViolation` (seed, invariant, trace tail) when:

* ``single-leader``: two replicas lead the same epoch (ever, across restarts);
* ``monotonic-epoch``: a replica's epoch goes down (across restarts; a wiped disk is a new replica);
* ``monotonic-high-watermark``: a replica's high watermark goes down (within one incarnation);
* ``committed-prefix``: two replicas hold different batches below their high watermarks, or two
  listeners that applied the same prefix disagree on its state;
* ``committed-majority``: the most recent committed offset is not held by a majority of voters (a
  voter whose disk was wiped still counts for what it held: disk loss is not a protocol fault;
  with KIP-853 voter changes, of a voter set in effect at that offset or appended after it);
* ``leader-completeness``: a new leader of epoch E lacks a record committed before E (Raft's
  Leader Completeness: a stale candidate that wins an old epoch late need not hold what later
  epochs committed, and cannot commit anything once the others moved on);
* ``snapshot-at-log-start``: a log starts after 0 without a retained snapshot at or after its
  start (Kafka's consistency check when it opens the metadata log);
* ``durability``: a restarted replica lost a record it had acknowledged (reported as fetched, or
  counted toward the high watermark as leader) or that was committed;
* ``protocol``: a replica saw a message no correct peer would send (two leaders in one epoch, a
  truncation below the high watermark...).

Work per event is small: a replica is looked at only when its epoch, role, high watermark or log
bounds changed, and each committed batch is compared once per replica.

Liveness is a property of a whole run, not of an event: :meth:`kraft_testkit.quorum.Quorum.converge`
heals the faults and requires one leader and identical replicas within a bound.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from kraft_testkit.raft.committed_record import CommittedRecord
from kraft_testkit.raft.replica import LEADER, RaftReplica
from kraft_testkit.sim.errors import InvariantViolation

INVARIANTS = ("single-leader", "monotonic-epoch", "monotonic-high-watermark", "committed-prefix",
              "committed-majority", "leader-completeness", "snapshot-at-log-start", "durability",
              "protocol")

_machine = attrgetter("machine")


def _need(m: RaftReplica) -> tuple[int, int, int]:
    """What a restart must find: the log end the replica acknowledged (reported as fetched, or
    counted toward the high watermark as leader) or knew committed, and the batch holding the
    last of those offsets (base offset and key)."""
    need = max(m.acknowledged, min(m.hw, m.log.end_offset))
    log = m.log
    if need <= log.start_offset or need > log.end_offset:
        return need, -1, 0
    batch, data = log.batch_data(log.index_right(need - 1) - 1)
    return need, batch.base_offset, _batch_key(data)


def _batch_key(data: bytes) -> int:
    """What identifies a batch: its stored CRC (over everything after it) and its length."""
    return int.from_bytes(data[17:21], "big") << 32 | len(data)


class RaftInvariants:
    """A simulation invariant: ``sim.add_invariant(RaftInvariants(), "raft")``."""

    def __init__(self) -> None:
        self._leaders: dict[int, int] = {}  # epoch -> leader id
        self._complete: set[tuple[int, int]] = set()  # (leader, epoch) checked for completeness
        self._epochs: dict[tuple[int, bytes], int] = {}  # (node, directory id) -> highest epoch
        self._seen: dict[int, tuple[Any, ...]] = {}  # node -> fingerprint at the last check
        self._machines: dict[int, RaftReplica] = {}  # node -> the last replica object seen
        self._hw: dict[int, int] = {}  # node -> high watermark already checked
        # node -> what its replica must keep (see _need) after its last whole event: a crash in
        # the middle of a step (Process.crash_in_writes) drops that step's unsynced writes and
        # its sends, so nothing the replica meant to acknowledge in it reached anyone
        self._acked: dict[int, tuple[int, int, int]] = {}
        self._ghosts: dict[int, RaftReplica] = {}  # voter id -> its replica before a disk wipe
        # (node, directory id) -> that replica before its disk was wiped (KIP-853: a node whose
        # disk is replaced twice was two different voters)
        self._wiped: dict[tuple[int, bytes], RaftReplica] = {}
        #: committed base offset -> (last offset, key) of the batch first compared there
        self._batches = CommittedRecord()
        self._states: dict[int, Any] = {}  # listener offset -> listener state
        self.committed = 0  # the largest high watermark any replica reached
        self._committed_in: dict[int, int] = {}  # epoch -> largest high watermark seen in it
        # what the last committed-majority check read besides the voters' replicas
        self._majority_inputs: tuple[int, int, int, int] | None = None
        self._sim: Any = None

    incremental = True  # after an event, only the nodes it touched can have changed

    def __call__(self, sim: Any) -> None:
        touched = getattr(sim, "touched", None)
        if touched is None:
            self.check(sim, _machine)
        elif touched:
            processes = sim.processes
            self.check(sim, _machine, {n: processes[n] for n in sorted(touched) if n in processes})

    def check(self, sim: Any, replica_of: Callable[[Any], Any],
              processes: Any = None) -> None:
        """Check after an event of ``sim``; ``replica_of(process)`` gives a process's replica
        (objects that are not a :class:`RaftReplica`, such as None, are skipped).
        ``processes``: only these ({node: process}; the others did not change), default all."""
        self._sim = sim
        changed = voters_changed = False
        for node_id, process in (sim.processes if processes is None else processes).items():
            machine = replica_of(process)
            if not isinstance(machine, RaftReplica):
                continue
            log = machine.log
            fp = (machine, machine.epoch, machine.role, machine.hw, log.end_offset,
                  log.start_offset, len(machine.anomalies))
            if self._seen.get(node_id) == fp:
                # the log did not change, so only a new acknowledgement can move what a restart
                # must find (a truncation or an append changes the fingerprint)
                known = self._acked.get(node_id)
                if known is None or max(machine.acknowledged,
                                        min(machine.hw, log.end_offset)) != known[0]:
                    self._acked[node_id] = _need(machine)
                continue
            self._seen[node_id] = fp
            changed = True
            if machine.is_voter or machine.dynamic:
                voters_changed = True
            previous = self._machines.get(node_id)
            if previous is not machine:
                self._started(node_id, previous, machine)
            self._check(node_id, machine)
            self._acked[node_id] = _need(machine)
        if changed:
            # The static majority check reads the voters' replicas, the committed offset, the
            # batches compared so far and the ghosts of wiped voters: an observer's event that
            # moved none of these (a broker's fetch) cannot change its answer.
            inputs = (self.committed, len(self._batches), len(self._ghosts), len(self._wiped))
            if voters_changed or inputs != self._majority_inputs:
                self._majority_inputs = inputs
                self._check_majority(sim)

    # ------------------------------------------------------------------ per replica

    def _fail(self, invariant: str, detail: str) -> None:
        sim = self._sim
        raise InvariantViolation(invariant, detail, seed=sim.seed, now_ms=sim.now_ms,
                                 replay=getattr(sim, "replay_hint", None),
                                 trace_tail=sim.trace.tail(sim.tail_events))

    def _started(self, node: int, old: RaftReplica | None, new: RaftReplica) -> None:
        """A (re)start: what the old incarnation acknowledged must be on the new one's disk."""
        self._machines[node] = new
        self._hw.pop(node, None)
        if old is None:
            return
        if new.wiped or new.dir != old.dir:
            if old.is_voter and node not in self._ghosts:
                self._ghosts[node] = old
            self._wiped.setdefault((node, bytes(old.dir)), old)
            return
        need, base, key = self._acked.get(node) or _need(old)
        log = new.log
        if log.end_offset < need and log.start_offset < need:
            self._fail("durability", f"node {node} restarted with its log ending at "
                                     f"{log.end_offset}, but it had acknowledged offsets up to "
                                     f"{need}")
        batch = log.batch_at(need - 1) if need > log.start_offset else None
        if batch is not None and base >= 0:
            data = log.batch_data(log.index_right(batch.base_offset) - 1)[1]
            if batch.base_offset != base or key != _batch_key(data):
                self._fail("durability", f"node {node} restarted with a different batch at "
                                         f"{batch.base_offset} than it had acknowledged")

    def _check(self, node: int, m: RaftReplica) -> None:
        if m.anomalies:
            self._fail("protocol", f"node {node}: {m.anomalies[0]}")
        ident = (node, bytes(m.dir))
        if m.epoch < self._epochs.get(ident, 0):
            self._fail("monotonic-epoch", f"node {node} went from epoch {self._epochs[ident]} "
                                          f"to {m.epoch}")
        self._epochs[ident] = m.epoch
        if m.role == LEADER:
            holder = self._leaders.setdefault(m.epoch, node)
            if holder != node:
                self._fail("single-leader", f"nodes {holder} and {node} both lead epoch {m.epoch}")
            if (node, m.epoch) not in self._complete:
                self._complete.add((node, m.epoch))
                self._check_complete(node, m)
        log = m.log
        if log.start_offset > 0:
            snaps = log.snapshots
            if not snaps or snaps[-1].end_offset < log.start_offset:
                self._fail("snapshot-at-log-start", f"node {node}: the log starts at "
                           f"{log.start_offset} but no snapshot reaches it (latest: "
                           f"{snaps[-1].snapshot_id if snaps else None})")
        old_hw = self._hw.get(node)
        if old_hw is not None and m.hw < old_hw:
            self._fail("monotonic-high-watermark", f"node {node}: high watermark went from "
                                                   f"{old_hw} to {m.hw}")
        if old_hw is None or m.hw > old_hw:
            self._check_prefix(node, m, old_hw if old_hw is not None else 0)
            self._hw[node] = m.hw
        self.committed = max(self.committed, m.hw)
        if m.hw > self._committed_in.get(m.epoch, 0):
            self._committed_in[m.epoch] = m.hw  # committed by a leader of this epoch or earlier
        listener = m.listener
        if listener is not None and hasattr(listener, "state"):
            state = listener.state()
            known = self._states.setdefault(state[0], state)
            if known != state:
                self._fail("committed-prefix", f"node {node}: listener state {state} differs "
                                               f"from {known} at the same offset")

    def _check_prefix(self, node: int, m: RaftReplica, start: int) -> None:
        """Compare the batches a replica newly knows as committed with what others had there."""
        log = m.log
        batches = self._batches
        cold = log.cold
        n = 0 if cold is None else cold.count
        bases, all_data, hot = log.hbases, log.hdata, log.hbatches
        batch_data = log.batch_data
        for i in range(log.index_left(start), n + len(bases)):
            if i < n:
                batch, data = batch_data(i)
                base = batch.base_offset
            else:
                base, batch, data = bases[i - n], hot[i - n], all_data[i - n]
            last = batch.last_offset
            if last >= m.hw:
                break
            key = _batch_key(data)
            known = batches.get(base)
            if known is None:
                batches.add(base, last, key, data)
            elif known[0] != last or known[1] != key:
                self._fail("committed-prefix", f"node {node} holds a different committed batch "
                                               f"at offset {base} than another replica")

    def _holds(self, m: RaftReplica, offset: int) -> bool:
        """Whether ``m``'s log (or snapshot) holds the committed record at ``offset``."""
        log = m.log
        if offset < log.start_offset:
            return True
        if offset >= log.end_offset:
            return False
        batch, data = log.batch_data(log.index_right(offset) - 1)
        known = self._batches.get(batch.base_offset)
        if known is None:
            return True  # nobody compared it yet; the prefix check will
        return known == (batch.last_offset, _batch_key(data))

    def _check_complete(self, node: int, m: RaftReplica) -> None:
        need = max((hw for epoch, hw in self._committed_in.items() if epoch < m.epoch), default=0)
        if need > 0 and not self._holds(m, need - 1):
            self._fail("leader-completeness", f"node {node} leads epoch {m.epoch} without the "
                                              f"record at {need - 1}, committed in an earlier "
                                              f"epoch")

    def _check_majority(self, sim: Any) -> None:
        # after most events of a busy cluster: one pass, no generators (same answers)
        if self.committed == 0:
            return
        replicas = []
        for m in self._machines.values():
            if m.dynamic:
                return self._check_dynamic_majority()
            if m.is_voter:
                replicas.append(m)
        voters = replicas[0].voters if replicas else {}
        if not voters:
            return
        by_id = {m.id: m for m in replicas}
        if self._ghosts:
            by_id.update({v: g for v, g in self._ghosts.items() if v not in by_id
                          or by_id[v].dir != g.dir})
        # A voter that has not started yet in this run (a cluster reopened on its directories
        # starts its nodes one event at a time) holds what its files hold: not known yet.
        holders = unseen = 0
        offset = self.committed - 1
        for v in voters:
            m = by_id.get(v)
            if m is None:
                unseen += 1
            elif self._holds(m, offset):
                holders += 1
        if holders + unseen < len(voters) // 2 + 1:
            self._fail("committed-majority", f"only {holders} of {len(voters)} voters hold the "
                                             f"committed offset {self.committed - 1}")

    def _check_dynamic_majority(self) -> None:
        """KIP-853: the voter set changes with the log. The last committed offset must be held
        by a majority of a voter set that could have committed it: the one in effect at that
        offset, or one appended after it (a leader counts its latest set, committed or not).
        Voters are (id, directory id): a replica with another directory id is not the voter."""
        offset = self.committed - 1
        candidates: list[Any] = []
        for m in self._machines.values():
            if not m.dynamic:
                continue
            history = m.history
            for voters in [history.at(offset), *(v for o, v in history.entries() if o > offset)]:
                if voters is not None and voters not in candidates:
                    candidates.append(voters)
        best = None
        for voters in candidates:
            holders = unseen = 0
            for v, d in voters.keys.items():
                m = self._machines.get(v)
                if m is not None and m.dir != d:
                    m = self._wiped.get((v, bytes(d)))
                    if m is None:
                        continue  # that voter's disk is gone and no ghost remembers it
                if m is None:
                    unseen += 1
                elif self._holds(m, offset):
                    holders += 1
            if holders + unseen >= voters.majority:
                return
            best = best or (holders, voters)
        if best is not None:
            self._fail("committed-majority", f"only {best[0]} of the voters {best[1]} hold the "
                                             f"committed offset {offset}")
