"""The broker's local replicas and the ISR they keep, driven by replica fetches.

There is no data plane: the model's job is realistic ISR movement when the network partitions
brokers. It follows Kafka's ``Partition`` and ``ReplicaManager`` where it can:

* Metadata: from RECOVERY on, every image is applied: partitions that name this broker as a
  replica are created locally, the rest deleted (at RECOVERY, local replicas of topics the image
  no longer has are strays and go). A partition's registration is applied when it changed and
  its partition epoch is not older than the one the broker knows (an AlterPartition answer can
  be ahead of the log); leading with a new leader epoch resets every follower's
  last-caught-up time (now if in the ISR, else 0).
* Followers send one FetchRequest per leader every replica.fetch.backoff.ms, with their broker
  id and epoch in ReplicaState (KIP-903) and the leader epochs they know.
* Leaders check the fetch as Kafka does (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
  UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_ID) and record it. The model assumes steady produce
  traffic, so a fetch always reads to the leader's end: the follower is caught up at the time
  of its fetch, and falls out of sync when it has not fetched for replica.lag.time.max.ms.
  (Kafka also counts a follower at the leader's log end as caught up; with data always arriving
  that never holds without fetching. Kafka's extra wait for the follower to reach the high
  watermark, one more fetch, is folded into the fetch itself.)
* Every replica.lag.time.max.ms / 2 a leader shrinks the ISR by its out-of-sync followers; a
  fetch from an eligible follower outside the ISR (registered, unfenced, not in controlled
  shutdown, fetching with its current broker epoch) expands it. One change at a time per
  partition: the proposal stays pending until the controller answers or new metadata replaces
  it; answers are handled as ``Partition.handleAlterPartitionUpdate/Error`` do.
* KIP-343: while the broker is self-fenced its leaders refuse fetches and propose no ISR
  change. When it is back, followers in the ISR get a fresh lag window (the leader could not
  see them fetch), as on a leader election.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

from kraft_testkit.config import NodeConfig
from kraft_testkit.metadata import MetadataImage, PartitionRegistration, changed_topics
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.uuid import Uuid

from .alter_partition import AlterPartitionManager, IsrChange, IsrChangeResult
from .channel import EventLog, Outbox
from .fetch_session_cache import FetchSessionCache
from .local_replica import (  # noqa: F401 - re-exported: the replica model's classes
    _NEVER,
    FollowerState,
    LocalReplica,
    PendingIsr,
    caught_up_min,
)
from .replica_fetch import (  # noqa: F401 - the fetch settings are read from here too
    REPLICA_FETCH_MAX_BYTES,
    REPLICA_FETCH_RESPONSE_MAX_BYTES,
    REPLICA_FETCH_WAIT_MAX_MS,
    ReplicaFetching,
)

E = ErrorCode

#: AlterPartition errors after which the proposal stays pending until new metadata arrives
WAIT_FOR_METADATA = frozenset({E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_TOPIC_ID,
                               E.FENCED_LEADER_EPOCH, E.INVALID_UPDATE_VERSION, E.INVALID_REQUEST,
                               E.NEW_LEADER_ELECTED})
#: errors that say the controller did not apply the proposal: back to the committed ISR
NOT_APPLIED = frozenset({E.OPERATION_NOT_ATTEMPTED, E.INELIGIBLE_REPLICA})



class ReplicaManager(ReplicaFetching):
    """Local replicas, replica fetching and the leader side of ISR changes."""

    def __init__(self, broker_id: int, config: NodeConfig, outbox: Outbox, events: EventLog,
                 alter: AlterPartitionManager, broker_epoch: Callable[[], int],
                 rack: str | None = None, session_rng: random.Random | None = None) -> None:
        self.broker_id = broker_id
        self.config = config
        self._out = outbox
        self._events = events
        self._alter = alter
        self._broker_epoch = broker_epoch
        self.rack = rack
        self.replicas: dict[tuple[Uuid, int], LocalReplica] = {}
        #: replica directories made (name -> topic id) or gone (name -> None) since the node
        #: last took them (node.py writes each one's partition.metadata): no walk per event
        self.dir_changes: dict[str, Uuid | None] = {}
        self.image = MetadataImage.EMPTY
        self.active = False
        """True from RECOVERY until shutdown: metadata is applied, fetches go and are served."""
        self.leader_serving = True
        """False while the broker is self-fenced (KIP-343)."""
        self._next_fetch_ms: int | None = None
        self._next_isr_check_ms: int | None = None
        self._fetch_cids: dict[int, int] = {}
        self._applied_topics: Any = None  # image.topics at the last _apply (sections are shared)
        self._ok_answers: dict[int, Any] = {}  # partition index -> the error-free PartitionData
        # follower side (replica_fetch.py): per leader broker, its session handler, the
        # partitions followed there, the ones changed since the last request, the ones whose
        # last answer erred, the clock of its last successful fetch, what the request in
        # flight sent; a held fetch's (cid, request) (steady_replicas.py)
        self._handlers: dict[int, Any] = {}
        self._by_leader: dict[int, dict[tuple[str, int], LocalReplica]] = {}
        self._fetch_dirty: dict[int, dict] = {}
        self._erroring: dict[int, set] = {}
        self._fclocks: dict[int, Any] = {}
        self._sent_parts: dict[int, list] = {}
        self._unqueued: dict[int, tuple[int, Any]] = {}
        self._empty_fetch: Any = None  # ((broker epoch, rack), an empty incremental request)
        # leader side: the fetch session cache and, per follower, the session it fetches with
        self._session_rng = session_rng or random.Random(f"fetch-sessions-{broker_id}")
        self._cache = FetchSessionCache.for_broker(self._session_rng)
        self._lsessions: dict[int, Any] = {}
        #: bumped at every change of the replicas, their leaders, ISRs, pending changes or
        #: followers, of serving or being active: what is kept beside it is valid until then
        self.version = 0
        self._isr_cache: tuple | None = None
        #: how many replicas this broker leads / follows another broker for (kept at every
        #: leader change, :meth:`_set_leader`): next_deadline reads them after every event
        self._led = self._followed = 0
        #: the replicas led here (the ISR check's summary walks these, not every replica)
        self._led_reps: dict[tuple[Uuid, int], LocalReplica] = {}
        self.model_cache: dict[str, tuple] = {}  # the idle warp's (fastforward/replica_loops.py)

    # ------------------------------------------------------------------ lifecycle

    def load(self, local: Iterable[tuple[Uuid, str, int]]) -> None:
        """Replicas found on disk at start: (topic id, topic name, partition)."""
        self.version += 1
        for topic_id, name, partition in local:
            self.replicas[(topic_id, partition)] = LocalReplica(topic_id, name, partition)

    def activate(self, image: MetadataImage, now_ms: int) -> None:
        """RECOVERY: drop strays (replicas the image does not place here), then apply it."""
        self.image = image
        self.version += 1
        strays = [r for r in self.replicas.values() if not self._assigned_here(image, r)]
        for rep in sorted(strays, key=lambda r: (r.topic_name, r.partition)):
            del self.replicas[rep.key]
            self._dir_gone(rep)
            why = ("its topic is gone" if image.topics.by_id(rep.topic_id) is None
                   else "it is not assigned here")
            self._events.add(now_ms, f"recovery: deleted stray replica {rep.name} ({why})")
        kept = len(self.replicas)
        self._events.add(now_ms, f"recovery: {kept} local replica(s) kept, {len(strays)} stray "
                         "replica(s) deleted")
        self.active = True
        self._next_fetch_ms = now_ms
        self._next_isr_check_ms = now_ms + self._isr_check_interval()
        self._applied_topics = None  # every topic: replicas loaded from disk are compared too
        self._apply(image, now_ms)

    def stop(self) -> None:
        """Shutdown: no more fetching, serving or ISR changes (replicas stay on disk)."""
        self.active = False
        self.version += 1
        self._next_fetch_ms = self._next_isr_check_ms = None
        self._fetch_cids.clear()
        self._alter.clear()
        for d in (self._handlers, self._fetch_dirty, self._erroring, self._fclocks,
                  self._sent_parts, self._unqueued):
            d.clear()
        for owner in list(self._lsessions.values()):
            self._unlink_session(owner)
        self._cache = FetchSessionCache.for_broker(self._session_rng)

    def on_metadata(self, image: MetadataImage, now_ms: int) -> None:
        self.image = image
        # A delta shares every section it did not touch, so the same topics object means no
        # partition changed (NoOps, heartbeats, fencing): _apply would find nothing to do.
        if self.active and image.topics is not self._applied_topics:
            self._apply(image, now_ms)

    def set_leader_serving(self, serving: bool, now_ms: int) -> None:
        if serving == self.leader_serving:
            return
        self.leader_serving = serving
        self.version += 1
        self.all_partitions_changed()
        if serving:  # back from self-fencing: a fresh lag window for followers in the ISR
            for rep in self.replicas.values():
                if rep.leader == self.broker_id:
                    for f in rep.followers.values():
                        if f.broker_id in rep.isr:
                            f.last_caught_up_ms = max(f.last_caught_up_ms, now_ms)

    # ------------------------------------------------------------------ time

    def tick(self, now_ms: int) -> None:
        if not self.active:
            return
        if self._next_fetch_ms is not None and now_ms >= self._next_fetch_ms:
            self.fetch_round(now_ms)
        if self._next_isr_check_ms is not None and now_ms >= self._next_isr_check_ms:
            self.isr_check(now_ms)

    def fetch_round(self, now_ms: int, queue: bool = True) -> list[int]:
        """A due replica fetch: the next one's instant, one request per leader broker, each
        queued on the outbox (``queue=False``: only its id counted, for the idle warp's held
        events, broker/steady_replicas.py); returns those leaders."""
        self._next_fetch_ms = now_ms + max(1, self.config.replica_fetch_backoff_ms)
        return self._send_fetches(queue)

    def isr_check(self, now_ms: int) -> None:
        """A due ISR check (Kafka runs it every replica.lag.time.max.ms / 2)."""
        self._next_isr_check_ms = now_ms + self._isr_check_interval()
        self.maybe_shrink_isr(now_ms)

    def next_deadline(self) -> int | None:
        if not self.active:
            return None
        # asked after every event of the broker: counts kept at each leader change
        follows, leads = self._followed > 0, self._led > 0
        due = self._next_fetch_ms if follows else None
        if leads:
            isr = self._next_isr_check_ms
            if isr is not None and (due is None or isr < due):
                due = isr
        return due

    # ------------------------------------------------------------------ queries

    def led(self) -> list[LocalReplica]:
        # (names and partitions are unique among the replicas outside _apply: a replica of a
        # deleted topic goes before the apply that made a new one of the same name ends)
        return sorted(self._led_reps.values(), key=lambda r: (r.topic_name, r.partition))

    def followed(self) -> list[LocalReplica]:
        return [r for r in self._sorted() if r.leader not in (-1, self.broker_id)]

    def get(self, topic: str, partition: int) -> LocalReplica | None:
        for r in self.replicas.values():
            if r.topic_name == topic and r.partition == partition:
                return r
        return None

    def owns_fetch_response(self, src: int, cid: int | None) -> bool:
        return cid is not None and self._fetch_cids.get(src) == cid

    def is_caught_up(self, follower: FollowerState | None, now_ms: int) -> bool:
        return (follower is not None
                and now_ms - follower.last_caught_up_ms <= self.config.replica_lag_time_max_ms)

    # ------------------------------------------------------------------ metadata

    def _assigned_here(self, image: MetadataImage, rep: LocalReplica) -> bool:
        topic = image.topics.by_id(rep.topic_id)
        reg = None if topic is None else topic.partitions.get(rep.partition)
        return reg is not None and self.broker_id in reg.replicas

    def _apply(self, image: MetadataImage, now_ms: int) -> None:
        """Apply what changed since the last image applied: the topics its delta touched
        (Kafka's ``ReplicaManager#applyDelta`` over a ``TopicsDelta``), or every topic when
        that is unknown (at RECOVERY, after a snapshot); both leave the same replicas."""
        touched = changed_topics(self._applied_topics, image.topics) \
            if self._applied_topics is not None else None
        old = self._applied_topics
        self._applied_topics = image.topics
        if touched is None:
            topics: Iterable[Any] = image.topics
        else:
            by_id = image.topics.topics_by_id
            topics = sorted((by_id[t] for t in touched if t in by_id), key=lambda t: t.name)
        here: set[tuple[Uuid, int]] = set()
        for topic in topics:
            for pid in sorted(topic.partitions):
                reg = topic.partitions[pid]
                if self.broker_id not in reg.replicas:
                    continue
                key = (topic.id, pid)
                here.add(key)
                rep = self.replicas.get(key)
                if rep is None:
                    self.version += 1
                    rep = self.replicas[key] = LocalReplica(topic.id, topic.name, pid)
                    self.dir_changes[rep.name] = topic.id
                    self._events.add(now_ms, f"created replica {rep.name}")
                if reg != rep.applied:
                    self._apply_registration(rep, reg, now_ms)
        if touched is None:
            gone = [k for k in self.replicas if k not in here]
        else:  # the local replicas of touched topics that the new image does not place here
            was = old.topics_by_id if old is not None else {}
            maybe = {(t, pid) for t in touched if t in was for pid in was[t].partitions}
            maybe = {k for k in maybe if k in self.replicas and k not in here}
            gone = [k for k in self.replicas if k in maybe] if maybe else []
        for key in gone:
            self.partition_changed(key)
            rep = self.replicas.pop(key)
            old_leader = rep.leader
            self._set_leader(rep, -1)
            self._refollow(rep, old_leader)
            self._alter.forget(key)
            self._dir_gone(rep)
            why = ("topic deleted" if image.topics.by_id(rep.topic_id) is None
                   else "no longer assigned here")
            self._events.add(now_ms, f"deleted replica {rep.name} ({why})")

    def _set_leader(self, rep: LocalReplica, leader: int) -> None:
        me = self.broker_id
        for who, step in ((rep.leader, -1), (leader, 1)):
            if who == me:
                self._led += step
            elif who != -1:
                self._followed += step
        if leader == me:
            self._led_reps[rep.key] = rep
        elif rep.leader == me:
            del self._led_reps[rep.key]
        rep.leader = leader

    def _dir_gone(self, rep: LocalReplica) -> None:
        """A replica's directory goes, unless a newer replica of the same name took it."""
        if self.dir_changes.get(rep.name, rep.topic_id) == rep.topic_id:
            self.dir_changes[rep.name] = None

    def _apply_registration(self, rep: LocalReplica, reg: PartitionRegistration,
                            now_ms: int) -> None:
        if reg.partition_epoch < rep.partition_epoch:
            return  # the broker already knows a newer state (from an AlterPartition answer)
        rep.applied = reg
        self.partition_changed(rep.key)
        was_leader = rep.leader == self.broker_id
        old_epoch = rep.leader_epoch
        new_epoch = reg.leader_epoch > rep.leader_epoch
        old_leader, old_isr = rep.leader, rep.isr
        rep.replicas, rep.isr = tuple(reg.replicas), tuple(reg.isr)
        if rep.pending is not None:  # superseded: an answer to it will be ignored
            self._alter.forget(rep.key, rep.pending)
            rep.pending = None
        self._set_leader(rep, reg.leader)
        rep.leader_epoch = reg.leader_epoch
        rep.partition_epoch = reg.partition_epoch
        if old_leader != reg.leader or old_epoch != reg.leader_epoch:
            self._refollow(rep, old_leader)
        if reg.leader == self.broker_id:
            followers = {}
            for b in reg.replicas:
                if b != self.broker_id:
                    followers[b] = rep.followers.get(b) or FollowerState(b)
            rep.followers = followers
            self.version += 1
            if new_epoch:
                for f in followers.values():
                    f.reset(now_ms, f.broker_id in reg.isr, new_leader=not was_leader)
                self._events.add(now_ms, f"leading {rep.name} at leader epoch {reg.leader_epoch}"
                                 f", ISR {list(reg.isr)}")
            elif old_isr != rep.isr:
                self._events.add(now_ms, f"{rep.name}: ISR {list(old_isr)} -> {list(rep.isr)} "
                                 f"(from metadata, partition epoch {reg.partition_epoch})")
        else:
            rep.followers = {}
            self.version += 1
            if was_leader or old_leader != reg.leader or new_epoch:
                if reg.leader == -1:
                    self._events.add(now_ms, f"{rep.name} has no leader (epoch "
                                     f"{reg.leader_epoch})")
                else:
                    self._events.add(now_ms, f"following {rep.name}: leader {reg.leader} at "
                                     f"epoch {reg.leader_epoch}")

    def _isr_eligible(self, follower: FollowerState) -> bool:
        reg = self.image.cluster.broker(follower.broker_id)
        if reg is None or reg.fenced or reg.in_controlled_shutdown:
            return False
        return follower.broker_epoch is not None and follower.broker_epoch in (-1, reg.epoch)

    def _maybe_expand_isr(self, rep: LocalReplica, follower: FollowerState, now_ms: int) -> None:
        if (rep.pending is not None or follower.broker_id in rep.isr or not self.leader_serving
                or follower.broker_id not in rep.replicas or not self._isr_eligible(follower)
                or not self.is_caught_up(follower, now_ms)):
            return
        self._propose(rep, "expand", frozenset({follower.broker_id}),
                      rep.isr + (follower.broker_id,), now_ms)

    def maybe_shrink_isr(self, now_ms: int) -> None:
        """Drop followers that have not caught up for replica.lag.time.max.ms (Kafka runs this
        every replica.lag.time.max.ms / 2)."""
        if not self.active or not self.leader_serving:
            return
        summary = self.isr_summary()
        if summary is not None:  # every ISR follower caught up: nothing to look at
            oldest = now_ms - self.config.replica_lag_time_max_ms
            if all(caught_up_min(v) >= oldest for v in summary.values()):
                return
        for rep in self.led():
            if rep.pending is not None:
                continue
            out = [b for b in rep.isr if b != self.broker_id
                   and not self.is_caught_up(rep.followers.get(b), now_ms)]
            if out:
                self._propose(rep, "shrink", frozenset(out),
                              tuple(b for b in rep.isr if b not in out), now_ms)

    def _propose(self, rep: LocalReplica, kind: str, members: frozenset[int],
                 isr: tuple[int, ...], now_ms: int) -> None:
        pending = PendingIsr(kind, members, isr)
        rep.pending = pending
        self.version += 1
        own = self._broker_epoch()
        with_epochs = []
        for b in isr:
            if b == self.broker_id:
                with_epochs.append((b, own))
            else:
                f = rep.followers.get(b)
                known = None if f is None else f.broker_epoch
                with_epochs.append((b, -1 if known is None else known))
        change = IsrChange(rep.topic_id, rep.topic_name, rep.partition, rep.leader_epoch,
                           rep.partition_epoch, tuple(with_epochs), pending)
        why = "caught up" if kind == "expand" else "out of sync"
        self._events.add(now_ms, f"{rep.name}: proposing ISR {list(rep.isr)} -> {list(isr)} "
                         f"({kind}: {sorted(members)} {why})")
        if not self._alter.submit(change, now_ms):
            rep.pending = None
            self.version += 1
            self._events.add(now_ms, f"{rep.name}: ISR change not attempted (one already queued)")

    def on_alter_results(self, results: list[IsrChangeResult], now_ms: int) -> None:
        for r in results:
            rep = self.replicas.get(r.change.key)
            if rep is None or rep.pending is not r.change.proposal:
                continue  # the partition moved on (new metadata): this answer is stale
            self.partition_changed(rep.key)
            self._on_alter_result(rep, r, now_ms)
            self.version += 1

    def _on_alter_result(self, rep: LocalReplica, r: IsrChangeResult, now_ms: int) -> None:
        if r.error == E.NONE:
            if r.leader_epoch != rep.leader_epoch:
                self._events.add(now_ms, f"{rep.name}: ignoring ISR {list(r.isr)} for leader "
                                 f"epoch {r.leader_epoch} (ours is {rep.leader_epoch})")
            elif r.partition_epoch < rep.partition_epoch:
                self._events.add(now_ms, f"{rep.name}: ignoring ISR {list(r.isr)} at older "
                                 f"partition epoch {r.partition_epoch}")
            else:
                old = rep.isr
                rep.isr, rep.partition_epoch, rep.pending = r.isr, r.partition_epoch, None
                self._events.add(now_ms, f"{rep.name}: ISR {list(old)} -> {list(r.isr)} "
                                 f"(partition epoch {r.partition_epoch})")
            return
        name = _name(r.error)
        if r.error in NOT_APPLIED:
            rep.pending = None
            self._events.add(now_ms, f"{rep.name}: ISR change rejected ({name}); back to ISR "
                             f"{list(rep.isr)}")
        elif r.error in WAIT_FOR_METADATA:
            self._events.add(now_ms, f"{rep.name}: ISR change failed ({name}); waiting for "
                             "newer metadata")
        else:
            self._events.add(now_ms, f"{rep.name}: ISR change failed ({name}); retrying")
            self._alter.submit(r.change, now_ms)

    def isr_summary(self) -> dict[int, tuple[int, dict]] | None:
        """Per ISR follower of the partitions led here, what its records' last caught-up
        times come to: (the smallest of the records that follow no session, {session clock:
        the smallest own time of the records following it}); ``caught_up_min`` of it is the
        oldest. None when an ISR member has no record. Kept until a replica, its ISR or a
        record changes (:attr:`version`, ``FollowerState.mutations``), so an idle broker's ISR
        check and the idle warp's start need no walk over the partitions."""
        key = (self.version, FollowerState.mutations)
        cached = self._isr_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        me = self.broker_id
        out: dict[int, tuple[int, dict]] | None = {}
        for rep in self._led_reps.values():  # (the order does not matter: smallest times)
            for b in rep.isr:
                if b == me:
                    continue
                f = rep.followers.get(b)
                if f is None:
                    out = None
                    break
                own, clocks = out.get(b) or (_NEVER, {})
                if f.link is None:
                    if f._caught_up < own:  # noqa: SLF001
                        own = f._caught_up  # noqa: SLF001
                else:
                    prev = clocks.get(f.link)
                    if prev is None or f._caught_up < prev:  # noqa: SLF001
                        clocks[f.link] = f._caught_up  # noqa: SLF001
                out[b] = (own, clocks)
            if out is None:
                break
        self._isr_cache = (key, out)
        return out

    # ------------------------------------------------------------------ helpers

    def _isr_check_interval(self) -> int:
        return max(1, self.config.replica_lag_time_max_ms // 2)

    def _sorted(self) -> list[LocalReplica]:
        return sorted(self.replicas.values(), key=lambda r: (r.topic_name, r.partition))


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"
