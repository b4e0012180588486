"""Runs of NoOp batches applied in bulk: what an idle stretch leaves in every node, at once.

In an idle cluster the active controller writes a NoOpRecord every
``metadata.max.idle.interval.ms`` (one batch each), every replica appends it, and every node's
high watermark moves over it. Stepping does that one batch and one commit at a time through
node code (tens of microseconds each, per node). A warp (``fastforward/``) that computed the
stretch instead needs the end state of those paths for a whole run at once; these primitives
give it, exactly:

* :func:`build_noop_batches`: the leader's batches of a run (objects and bytes) as its Raft
  client would encode them: one batch encoded, the others patched (base offset, timestamps,
  CRC32C over the part the CRC covers). The bytes and decoded batches are shared by every
  replica.
* :func:`append_leader_noops`: the controller's NoOp timer and the Raft leader's linger drain
  for each NoOp (controller soft state, written offset, metrics, pending image; the Raft log,
  segment files, indexes, leader-epoch checkpoint, the leader's own progress), as one call.
* :func:`append_fetched_noops`: a follower's or broker's Raft appending the run as fetch
  answers would (log, files, indexes, epoch checkpoint).
* :func:`apply_noop_stretch`: all of it for every node of a stretch, in order.
* :func:`apply_commit_run`: a node's high watermark moving through ``(instant, high
  watermark)`` pairs with what every listener does on each commit (controller replay and
  metrics, broker image and the broker logic's reaction, the snapshot generator's bytes and
  interval). It stops at the pair where a snapshot falls due (or steps that pair through the
  real code with ``through_snapshots=True``) and at the log cleaner's next run
  (:func:`run_log_cleaner` runs it as the node's event at that instant would).

What they leave to the caller (the warp materializes these): messages, fetch state (request
ids, connections, deadlines), parked fetches, the node's timers and wake caches. Each refuses
what it does not model with :class:`~kraft_testkit.fastforward.bulk.InexactFastForward`
naming the reason, before changing anything (except where its docstring says otherwise).
Proof: tests/cluster/test_noop_run.py compares each against stepping, file by file.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


from kraft_testkit.controller.noop import noop_interval_ms
from kraft_testkit.fastforward.bulk import InexactFastForward
from kraft_testkit.fastforward.noop_batches import (  # noqa: F401 - public here too
    _NOOP_RECORDS,
    NoOpBatches,
    build_noop_batches,
    noop_batches_in_log,
)
from kraft_testkit.metadata import replay_batches
from kraft_testkit.metadata.replay import NOOP_VALUE
from kraft_testkit.metadata.snapshot_generator import batch_bytes
from kraft_testkit.protocol import messages as M
from kraft_testkit.raft.replica_state import FOLLOWER, LEADER
from kraft_testkit.sim.disk import write_all
from kraft_testkit.sim.node import NEVER, DiskOp
from kraft_testkit.sim.process import ProcessState

_RUNNING = ProcessState.RUNNING

#: the controller's periodic tasks other than NoOps whose next run is kept in its soft state
_OTHER_TASKS = ("tokens.next_check_ms", "balance.next_ms", "unclean.next_ms")


# ---------------------------------------------------------------------- shared checks


def _node(process: object) -> object:
    if process.state is not _RUNNING:  # type: ignore[attr-defined]
        raise InexactFastForward(f"node {process.node_id} is not running")  # type: ignore[attr-defined]
    if process._crash_in_writes is not None:  # type: ignore[attr-defined]  # noqa: SLF001
        raise InexactFastForward(f"node {process.node_id} has a crash planned in its writes "
                                 "(it counts writes one by one)")  # type: ignore[attr-defined]
    return process.machine  # type: ignore[attr-defined]


def _write(process: object, ops: list[DiskOp]) -> None:
    """Perform the writes and fsync, as the steps did (each synced its append)."""
    write_all(process.disk, ops, True)  # type: ignore[attr-defined]


def _before_cleaner(raft: object, at: int, what: str) -> None:
    clean_at = raft._clean_at  # type: ignore[attr-defined]  # noqa: SLF001
    if at >= clean_at:
        raise InexactFastForward(f"{what} at {at} ms is at or after the log cleaner's next run "
                                 f"({clean_at} ms): step there")


# ---------------------------------------------------------------------- the leader


def append_leader_noops(process: object, submit_ms: Sequence[int],
                        until_ms: int | None = None) -> NoOpBatches:
    """The active controller's NoOps submitted at ``submit_ms`` (each a NoOp interval or more
    after the previous one, the first one after the controller's last: the task runs in the
    leader's first event from its due instant on, and a node whose controller became active
    in an event armed its timer without it), each drained by the Raft leader
    ``controller.quorum.append.linger.ms`` later into one batch, as stepping does it in those
    events. A NoOp whose drain falls after ``until_ms`` (default: the last drain) stays
    pending in the leader, as at that instant; one left pending so is drained first by the
    next call. Returns the batches appended (for replicas).

    The caller guarantees that the leader node has nothing else to do at these instants (no
    other controller task, no message); the fetches parked at the leader (stepping answers
    them at each append) and the node's timers are its business too: they are left as they
    are."""
    node = _node(process)
    qc, raft = node.controller, node.raft  # type: ignore[attr-defined]
    if qc is None or not qc.active or raft.role != LEADER or raft._lead is None:  # noqa: SLF001
        raise InexactFastForward(f"node {raft.id} is not the active controller")
    lead = raft._lead  # noqa: SLF001
    cfg = raft.config
    linger = cfg.append_linger_ms
    last = qc.soft.get("noop.last_ms")
    interval = noop_interval_ms(qc.config, qc.image)
    if interval is None or last is None:
        raise InexactFastForward("NoOps are off, or the controller has not scheduled one yet")
    lingering: list[int] = []  # a NoOp submitted before this call, not drained yet
    if lead.pending:
        if lead.pending != [NOOP_VALUE] or lead.drain_at != last + linger:
            raise InexactFastForward(f"leader {raft.id} has records other than the last NoOp "
                                     "pending")
        lingering = [last]
    if not submit_ms and not lingering:
        raise InexactFastForward("no NoOp instants given")
    if lead.change is not None:
        raise InexactFastForward(f"leader {raft.id} is changing the voter set")
    if raft.majority <= 1:
        raise InexactFastForward("a single-voter quorum commits at each append: not modelled")
    if interval <= linger:
        raise InexactFastForward(f"NoOp interval {interval} ms <= linger {linger} ms: batches "
                                 "would hold several NoOps")
    expected = last + interval
    for at in submit_ms:  # never early; late where the leader had no event at its instant
        if at < expected:
            raise InexactFastForward(f"a NoOp at {at} ms; the controller's next is due at "
                                     f"{expected} ms")
        expected = at + interval
    submits = lingering + list(submit_ms)
    until = submits[-1] + linger if until_ms is None else until_ms
    if until < submits[-1]:
        raise InexactFastForward(f"until_ms {until} is before the last NoOp ({submits[-1]})")
    drained = [at for at in submits if at + linger <= until]
    events = [at + linger for at in drained] + list(submit_ms)
    last_event = max(events) if events else None
    if last_event is not None:
        _before_cleaner(raft, last_event, "a NoOp event")
        for key in _OTHER_TASKS:
            due = qc.soft.get(key)
            if due is not None and due <= last_event:
                raise InexactFastForward(f"the controller's task {key} is due at {due} ms, "
                                         "in the run")
    if qc.image.in_transaction:
        raise InexactFastForward("the controller's image is in a metadata transaction")
    replayed = qc.image.replay([M.NoOpRecord()]) if submit_ms else qc.image
    if replayed != qc.image:
        raise InexactFastForward("a NoOp changes the controller's pending image")
    if qc._next_offset != raft.log.end_offset + len(lead.pending):  # noqa: SLF001
        raise InexactFastForward("the controller has written past the Raft log end")
    log = raft.log
    base_ts = cfg.log_time_base_ms + linger
    run = build_noop_batches(log.end_offset, raft.epoch, [at + base_ts for at in drained])
    ops = log.append_run(run.leader, run.data) if drained else []
    ops += raft.epoch_checkpoint_ops()
    _write(process, ops)
    end = log.end_offset
    raft._own_progress().end_offset = end  # noqa: SLF001
    raft.acknowledged = end
    before = raft.hw
    raft._update_high_watermark()  # noqa: SLF001 - as each append does (a majority of one)
    if raft.hw != before:
        raise InexactFastForward("the high watermark moved with the leader's own appends")
    if drained:
        lead.wake_parked = False  # each drain set it; the poll after it cleared it
    if len(drained) < len(submits):  # the last NoOp still lingers
        lead.pending = [NOOP_VALUE]
        lead.drain_at = submits[-1] + linger
    else:
        lead.pending, lead.drain_at = [], NEVER
    if submit_ms:
        qc.image = replayed
        qc.soft["noop.last_ms"] = submit_ms[-1]
        qc._last_write_ms = submit_ms[-1]  # noqa: SLF001
    qc._next_offset = end + len(lead.pending)  # noqa: SLF001
    qc.metrics.last_applied_offset = qc._next_offset - 1  # noqa: SLF001
    if last_event is not None:
        node._clock(last_event)  # type: ignore[attr-defined]  # noqa: SLF001
    return run


# ---------------------------------------------------------------------- a replica


def append_fetched_noops(process: object, run: NoOpBatches, end_offset: int | None = None
                         ) -> int:
    """A follower's or broker's Raft appending ``run``'s batches from its log end up to
    ``end_offset`` (default: the run's end), as the fetch answers that brought them would
    (log, segment files, indexes, leader-epoch checkpoint). Returns the new log end."""
    node = _node(process)
    raft = node.raft  # type: ignore[attr-defined]
    log = raft.log
    end = run.end_offset if end_offset is None else end_offset
    start = log.end_offset
    if raft.role != FOLLOWER or raft._download is not None:  # noqa: SLF001
        raise InexactFastForward(f"node {raft.id} is not a follower fetching the log "
                                 f"({raft.role})")
    if not run.base_offset <= start <= end <= run.end_offset:
        raise InexactFastForward(f"node {raft.id}'s log ends at {start}: the run holds "
                                 f"[{run.base_offset}, {run.end_offset}), asked up to {end}")
    if run.epoch > raft.epoch or run.epoch < log.last_epoch:
        raise InexactFastForward(f"the run's epoch {run.epoch} does not fit node {raft.id} "
                                 f"(epoch {raft.epoch}, log's last epoch {log.last_epoch})")
    i, j = start - run.base_offset, end - run.base_offset
    ops = log.append_run(run.replica[i:j], run.data[i:j])
    ops += raft.epoch_checkpoint_ops()
    _write(process, ops)
    return log.end_offset


def run_log_cleaner(process: object, at: int) -> None:
    """The Raft client's log cleaner, as the node's first event at or after its due instant
    (``at``) runs it: the next run a ``log_clean_interval_ms`` later, and Kafka's
    ``maybeClean`` (its deletions written). What the primitives here stop before."""
    node = _node(process)
    raft = node.raft  # type: ignore[attr-defined]
    if at < raft._clean_at:  # noqa: SLF001
        raise InexactFastForward(f"the log cleaner is due at {raft._clean_at} ms, not {at}")  # noqa: SLF001
    raft._clean_at = at + raft.config.log_clean_interval_ms  # noqa: SLF001
    ops = raft.log.maybe_clean(at + raft.config.log_time_base_ms)
    if ops:
        _write(process, ops + raft.epoch_checkpoint_ops())


# ---------------------------------------------------------------------- commits


@dataclass(frozen=True)
class CommitRun:
    """What :func:`apply_commit_run` did: ``applied`` pairs (all of them unless ``stopped``
    says why it stopped before pair ``applied``), of which ``stepped`` went through the real
    commit path because a snapshot fell due there."""

    applied: int
    stopped: str | None = None
    stepped: tuple[int, ...] = ()
    #: with ``acts``: what the broker's logic sent when it ran at the last pair's commit
    sends: tuple = ()


def apply_commit_run(process: object, pairs: Sequence[tuple[int, int]], *,
                     through_snapshots: bool = False, acts: bool = False,
                     ticked: int = 0) -> CommitRun:
    """The node's high watermark moving to each ``(instant, high watermark)`` in turn over NoOp
    batches of its log, with what every listener does at each commit, as one call: the
    controller's replay (committed image provenance, committed offset and record count), the
    broker's image and its logic's reaction, the snapshot generator's bytes and clock, the
    listeners' clock (left at the last pair's instant).

    It stops before the pair where the snapshot generator would snapshot (or steps that pair
    through the real commit path with ``through_snapshots``) and before one at or after the
    log cleaner's next run; :class:`CommitRun` says where and why.

    ``acts``: a broker's logic may be due at the last pair (a heartbeat, an ISR check): what
    it does there is done, and what it sends is returned (``CommitRun.sends``). ``ticked``:
    the first pairs whose commits the broker's logic has already seen (``tick_commits``)."""
    node = _node(process)
    raft = node.raft  # type: ignore[attr-defined]
    qc, logic = node.controller, node.logic  # type: ignore[attr-defined]
    gen = node._fan_out.generator  # type: ignore[attr-defined]  # noqa: SLF001
    log = raft.log
    if raft._next != raft.hw or raft._fired != (raft.leader_id, raft.epoch):  # noqa: SLF001
        raise InexactFastForward(f"node {raft.id} has commits or a leader change not yet "
                                 "handed to its listeners")
    if not pairs:
        return CommitRun(0)
    image = node._snapshot_image()  # type: ignore[attr-defined]  # noqa: SLF001
    if image.in_transaction:
        raise InexactFastForward(f"node {raft.id}'s image is in a metadata transaction")
    top = max(hw for _, hw in pairs)
    if top > log.end_offset:
        raise InexactFastForward(f"high watermark {top} beyond node {raft.id}'s log end "
                                 f"{log.end_offset}")
    if qc is not None and qc._waiting and qc._waiting[0].offset < top:  # noqa: SLF001
        raise InexactFastForward("the controller holds a response for an offset in the run")
    if logic is not None:
        state, due = logic.state.name, logic.next_wakeup_ms()
        last_quiet = pairs[-1][0] if not acts else pairs[-2][0] if len(pairs) > 1 else -1
        if state != "RUNNING" or due <= last_quiet:
            raise InexactFastForward(f"broker {raft.id} is {state}, its logic due at {due} ms: "
                                     "it may act in the run (step or materialize its timer "
                                     "events, such as heartbeats, first)")
    batches = log.batches_between(raft.hw, top)
    if not batches or batches[0].base_offset != raft.hw or batches[-1].last_offset != top - 1:
        raise InexactFastForward(f"node {raft.id}'s log does not hold whole batches "
                                 f"[{raft.hw}, {top})")
    for b in batches:
        if b[1] is _NOOP_RECORDS:  # built by build_noop_batches: a NoOp batch (fast path)
            continue
        records = getattr(b, "records", None)
        if records is None or b.is_control or len(records) != 1 or \
                records[0].value != NOOP_VALUE:
            raise InexactFastForward(f"offset {b.base_offset} on node {raft.id} is not a NoOp "
                                     "batch")
    size = batch_bytes(batches[0])
    times = [p[0] for p in pairs]
    hws = [p[1] for p in pairs]
    if times != sorted(times) or hws != sorted(hws) or hws[0] < raft.hw:
        raise InexactFastForward("the pairs go back in time or in offset")
    n = len(pairs)
    cleaner = bisect_left(times, raft._clean_at)  # noqa: SLF001 - the first pair at or after it
    stepped: list[int] = []
    i = 0
    acted: list = []
    while True:
        hw0 = raft.hw
        bytes_since = gen.bytes_since if gen is not None else 0
        last_ms = gen.last_ms if gen is not None else None
        first = bisect_right(hws, hw0, i)  # the first pair that moves the high watermark
        due, reason = n, None
        if gen is not None and first < n:
            if last_ms is None:
                last_ms = times[first]
            if gen.max_interval_ms:
                j = bisect_left(times, last_ms + gen.max_interval_ms, first)
                if j < due:
                    due, reason = j, f"a snapshot falls due by time (interval {gen.max_interval_ms} ms)"
            j = bisect_left(hws, hw0 + max(0, -(-(gen.max_bytes - bytes_since) // size)), first)
            if j < due:
                due, reason = j, f"a snapshot falls due by bytes (max {gen.max_bytes})"
            if first < due < n and hws[due] == hws[due - 1]:  # the check runs where hw moves
                due = bisect_right(hws, hws[due], due)
                reason = reason if due < n else None
        stop = min(due, cleaner)
        if stop > i and hws[stop - 1] > hw0:
            top = hws[stop - 1]
            commit_at = times[bisect_left(hws, top, i)]  # the pair that moved it there
            k = max(i, ticked)
            if logic is not None and k < stop:  # the last commit's logic run is on_metadata's
                tick_commits(logic, pairs[k:stop - 1] if acts and stop == n else pairs[k:stop],
                             hw0 if k == i else max(hw0, hws[k - 1]))
            acted = _commit(node, hw0, top, commit_at, gen, bytes_since + (top - hw0) * size,
                            last_ms, acts)
        if stop >= n:
            return CommitRun(n, None, tuple(stepped), tuple(acted))
        if cleaner <= due:
            return CommitRun(cleaner, f"the log cleaner runs at {raft._clean_at} ms, at or "  # noqa: SLF001
                             f"before pair {cleaner} ({times[cleaner]} ms)", tuple(stepped))
        if not through_snapshots:
            return CommitRun(due, f"{reason} at pair {due} ({times[due]} ms)", tuple(stepped))
        _commit_stepped(process, node, times[due], hws[due])
        stepped.append(due)
        i = due + 1
        if i >= n:
            return CommitRun(n, None, tuple(stepped))


def tick_commits(logic: Any, pairs: Sequence[tuple[int, int]], hw: int) -> None:
    """The broker's replica manager as the commits among ``pairs`` (those that move the high
    watermark past ``hw``) each ran its logic: its replica-fetch timer moves on at every
    logic run that finds it due, sending nothing while the broker follows no partition (a run
    of commits hands the logic only the last one)."""
    replicas = logic.replicas
    for at, top in pairs:
        if top > hw:
            hw = top
            replicas.tick(at)
    if logic._out.sends:  # noqa: SLF001
        raise InexactFastForward(f"broker {logic.broker_id}'s replica manager sent messages "
                                 "on a NoOp commit")


def _commit(node: object, base: int, hw: int, at: int | None, gen: object, bytes_since: int,
            last_ms: int | None, acts: bool = False) -> list:
    """Deliver ``[base, hw)``, the last commit at ``at``, as the commits between delivered it
    (NoOps only: what the listeners keep of k commits is the last one's offset and epoch,
    the record count, the generator's bytes and first instant, and the broker logic's
    reaction at the last)."""
    raft = node.raft  # type: ignore[attr-defined]
    sends: list = []
    if hw <= base or at is None:
        return sends
    last = raft.log.batch_at(hw - 1)
    qc, listener, logic = node.controller, node.listener, node.logic  # type: ignore[attr-defined]
    raft.hw = raft._next = hw  # noqa: SLF001
    node._clock(at)  # type: ignore[attr-defined]  # noqa: SLF001
    if qc is not None:
        qc.committed = replay_batches(qc.committed, [last])
        qc.metrics.last_committed_offset = hw - 1
        qc.metrics.committed_records += hw - base
        if not qc.active:
            qc.image = qc.committed
            qc.metrics.last_applied_offset = hw - 1
        qc._release(hw - 1)  # noqa: SLF001
        qc._count_brokers()  # noqa: SLF001
    if listener is not None:
        listener.image = replay_batches(listener.image, [last])
        if logic is not None:
            effects = logic.on_metadata(listener.image, at)
            if effects.sends:
                if not acts:
                    raise InexactFastForward(f"broker {raft.id}'s logic sent "
                                             f"{len(effects.sends)} messages on a NoOp commit")
                sends = effects.sends
            if effects.timer_ms is not None:
                node._logic_wake = effects.timer_ms  # type: ignore[attr-defined]  # noqa: SLF001
    if gen is not None:
        gen.bytes_since, gen.last_ms = bytes_since, last_ms
    return sends


def _commit_stepped(process: object, node: object, at: int, hw: int) -> None:
    """One commit through the real path (Raft's delivery, the snapshot it takes, the broker
    logic's reaction), as the step at ``at`` that moved the high watermark to ``hw`` ran it."""
    raft = node.raft  # type: ignore[attr-defined]
    node._clock(at)  # type: ignore[attr-defined]  # noqa: SLF001
    raft.hw = hw
    raft._deliver(at)  # noqa: SLF001
    ops, raft._writes, raft._sync = raft._writes, [], False  # noqa: SLF001
    ops += raft.epoch_checkpoint_ops()
    _write(process, ops)
    listener, logic = node.listener, node.logic  # type: ignore[attr-defined]
    if listener is not None and listener.image_changed:
        listener.image_changed = False
        if logic is not None:
            effects = logic.on_metadata(listener.image, at)
            if effects.sends:
                raise InexactFastForward(f"broker {raft.id}'s logic sent messages on a commit")
            if effects.timer_ms is not None:
                node._logic_wake = effects.timer_ms  # type: ignore[attr-defined]  # noqa: SLF001


def apply_noop_stretch(processes: Mapping[int, object], leader: int, submit_ms: Sequence[int],
                       *, until_ms: int | None = None, log_ends: Mapping[int, int] | None = None,
                       commits: Mapping[int, Sequence[tuple[int, int]]] | None = None,
                       through_snapshots: bool = False
                       ) -> tuple[NoOpBatches, dict[int, CommitRun]]:
    """An idle stretch's NoOps on every node (``processes``: node id -> process), in order:
    the leader's NoOps (:func:`append_leader_noops`), each other node's log up to
    ``log_ends[node]`` (default: the leader's end; batches the leader already held before
    the run come from its log), then each node's commits (:func:`apply_commit_run`)."""
    held = processes[leader].machine.raft.log  # type: ignore[attr-defined]
    run = append_leader_noops(processes[leader], submit_ms, until_ms)
    for node, process in processes.items():
        if node == leader:
            continue
        behind = process.machine.raft.log.end_offset  # type: ignore[attr-defined]
        if behind < run.base_offset:  # it has not fetched the leader's last batches yet
            append_fetched_noops(process, noop_batches_in_log(held, behind, run.base_offset))
        end = run.end_offset if log_ends is None else log_ends.get(node, run.end_offset)
        if end > run.base_offset:
            append_fetched_noops(process, run, end)
    done = {node: apply_commit_run(processes[node], pairs, through_snapshots=through_snapshots)
            for node, pairs in (commits or {}).items()}
    return run, done


__all__ = ["CommitRun", "NoOpBatches", "append_fetched_noops", "append_leader_noops",
           "apply_commit_run", "apply_noop_stretch", "build_noop_batches", "noop_batches_in_log",
           "run_log_cleaner", "tick_commits"]
