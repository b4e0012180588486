"""Replica fetching between brokers: the follower's FetchRequest per leader broker and the
leader's answer, the part of :class:`~.replicas.ReplicaManager` that speaks the Fetch RPC.

A mixin (the manager holds the state: its replicas, outbox, image, fetch ids), apart so that
the replica manager module stays about metadata and the ISR.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.uuid import Uuid

if TYPE_CHECKING:
    from .replicas import LocalReplica

E = ErrorCode
_FQ: Any = M.FetchRequest
_FS: Any = M.FetchResponse
_NO_LEADER: Any = _FS.LeaderIdAndEpoch()  # messages are immutable tuples: one is enough

REPLICA_FETCH_WAIT_MAX_MS = 500     # replica.fetch.wait.max.ms
REPLICA_FETCH_MAX_BYTES = 1 << 20   # replica.fetch.max.bytes
REPLICA_FETCH_RESPONSE_MAX_BYTES = 10 << 20


class ReplicaFetching:
    """Sends a follower's fetches and answers a leader's (see replicas.py for the model)."""

    __slots__ = ()
    broker_id: int
    rack: str | None
    replicas: dict
    image: Any
    active: bool
    leader_serving: bool
    _out: Any
    _broker_epoch: Any
    _fetch_cids: dict
    _last_fetch: dict
    _ok_answers: dict

    # ------------------------------------------------------------------ follower side

    def _send_fetches(self, queue: bool = True) -> list[int]:
        if not self.replicas:  # hosts nothing (most idle brokers): no fetch, nothing to keep
            if self._fetch_cids:
                self._fetch_cids = {}
            return []
        by_leader: dict[int, list[LocalReplica]] = {}
        for rep in self.followed():
            by_leader.setdefault(rep.leader, []).append(rep)
        self._fetch_cids = {k: v for k, v in self._fetch_cids.items() if k in by_leader}
        leaders = sorted(by_leader)
        out = self._out
        for leader in leaders:
            self._fetch_cids[leader] = out.request(
                leader, self._fetch_request(by_leader[leader])) if queue else out.next_cid()
        return leaders

    def _fetch_request(self, reps: list[LocalReplica]) -> Any:
        # Rebuilt for every fetch (the offsets it sends are constant): the same inputs, the
        # same request, so the last one per leader is kept with everything it was made from.
        key = (self._broker_epoch(), self.rack,
               tuple([(r.topic_id, r.topic_name, r.partition, r.leader_epoch) for r in reps]))
        last = self._last_fetch.get(reps[0].leader)
        if last is not None and last[0] == key:
            return last[1]
        request = self._build_fetch_request(reps)
        self._last_fetch[reps[0].leader] = (key, request)
        return request

    def _build_fetch_request(self, reps: list[LocalReplica]) -> Any:
        topics: dict[Uuid, list[LocalReplica]] = {}
        for rep in reps:
            topics.setdefault(rep.topic_id, []).append(rep)
        return _FQ(
            replica_state=_FQ.ReplicaState(replica_id=self.broker_id,
                                           replica_epoch=self._broker_epoch()),
            max_wait_ms=REPLICA_FETCH_WAIT_MAX_MS, min_bytes=1,
            max_bytes=REPLICA_FETCH_RESPONSE_MAX_BYTES, isolation_level=0,
            session_id=0, session_epoch=-1,
            topics=tuple(_FQ.FetchTopic(topic=rs[0].topic_name, topic_id=tid, partitions=tuple(
                _FQ.FetchPartition(partition=r.partition, current_leader_epoch=r.leader_epoch,
                                   fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
                                   partition_max_bytes=REPLICA_FETCH_MAX_BYTES)
                for r in rs)) for tid, rs in topics.items()),
            rack_id=self.rack or "")

    def on_fetch_response(self, src: int, cid: int | None, body: Any, now_ms: int) -> None:
        if not self.active or self._fetch_cids.get(src) != cid:
            return
        del self._fetch_cids[src]
        for topic in body.responses:
            for p in topic.partitions:
                rep = self.replicas.get((topic.topic_id, p.partition_index))
                if rep is not None and p.error_code == E.NONE and rep.leader == src:
                    rep.last_fetched_ms = now_ms

    # ------------------------------------------------------------------ leader side

    def handle_fetch(self, req: Any, now_ms: int) -> Any:
        """Answer a follower's FetchRequest, recording what it tells about the follower."""
        rid = req.replica_state.replica_id
        if rid < 0:
            rid = req.replica_id
        epoch = req.replica_state.replica_epoch
        topics = []
        for t in req.topics:
            parts = []
            for fp in t.partitions:
                error = self._follower_fetch(t.topic_id, fp, rid, epoch, now_ms)
                parts.append(self._fetch_answer(t.topic_id, fp.partition, error))
            topics.append(_FS.FetchableTopicResponse(topic=t.topic, topic_id=t.topic_id,
                                                     partitions=tuple(parts)))
        return _FS(error_code=E.NONE, session_id=0, responses=tuple(topics))

    def _follower_fetch(self, topic_id: Uuid, fp: Any, rid: int, epoch: int, now_ms: int) -> int:
        rep = self.replicas.get((topic_id, fp.partition))
        if rep is None or not self.active:
            if self.image.topics.by_id(topic_id) is None:
                return E.UNKNOWN_TOPIC_ID
            return E.NOT_LEADER_OR_FOLLOWER
        if rep.leader != self.broker_id or not self.leader_serving:
            return E.NOT_LEADER_OR_FOLLOWER
        requested = fp.current_leader_epoch
        if requested >= 0 and rep.leader_epoch > requested:
            return E.FENCED_LEADER_EPOCH
        if requested >= 0 and rep.leader_epoch < requested:
            return E.UNKNOWN_LEADER_EPOCH
        follower = rep.followers.get(rid)
        if follower is None:
            return E.UNKNOWN_LEADER_EPOCH if requested >= 0 else E.NOT_LEADER_OR_FOLLOWER
        follower.fetched(epoch, now_ms)
        self._maybe_expand_isr(rep, follower, now_ms)
        return E.NONE

    def _fetch_answer(self, topic_id: Uuid, partition: int, error: int) -> Any:
        if error == E.NONE:  # the common answer: built once per partition index (immutable)
            answer = self._ok_answers.get(partition)
            if answer is None:
                answer = self._ok_answers[partition] = _FS.PartitionData(
                    partition_index=partition, error_code=E.NONE, high_watermark=0,
                    last_stable_offset=0, log_start_offset=0, current_leader=_NO_LEADER,
                    records=b"")
            return answer
        rep = self.replicas.get((topic_id, partition))
        current = _NO_LEADER
        if error in (E.NOT_LEADER_OR_FOLLOWER, E.FENCED_LEADER_EPOCH) and rep is not None \
                and rep.leader != self.broker_id:
            current = _FS.LeaderIdAndEpoch(leader_id=rep.leader, leader_epoch=rep.leader_epoch)
        return _FS.PartitionData(partition_index=partition, error_code=error,
                                 high_watermark=-1, last_stable_offset=-1, log_start_offset=-1,
                                 current_leader=current, records=b"")
