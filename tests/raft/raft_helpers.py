"""Stepping one replica by hand, and small quorum helpers for the Raft tests."""

from __future__ import annotations

import random
from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import rpc
from kraft_testkit.raft.config import RaftConfig
from kraft_testkit.raft.replica import RaftReplica
from kraft_testkit.sim import MemoryDisk
from kraft_testkit.sim.node import Effects

CLUSTER = "raft-test-cluster"
DIRS = {n: Uuid(bytes([n]) * 16) for n in range(1, 10)}
VOTERS = {n: DIRS[n] for n in (1, 2, 3)}


class Harness:
    """One replica, a disk that applies its writes, and the messages it sent."""

    def __init__(self, node_id: int = 1, voters: dict[int, Uuid] | None = None,
                 config: RaftConfig | None = None, listener: Any = None, seed: int = 0,
                 disk: MemoryDisk | None = None, incarnation: int = 1) -> None:
        self.node_id = node_id
        self.voters = dict(VOTERS if voters is None else voters)
        # the hand-stepped election tests script Kafka 3.x elections; pre-vote has its own
        self.config = config or RaftConfig(pre_vote=False)
        self.listener = listener
        self.seed = seed
        self.disk = disk or MemoryDisk()
        self.sent: list[tuple[int, Any]] = []
        self.effects: list[Effects] = []
        self.timer: int | None = None
        self.now = 0
        self._cid = 5000
        self.r = self._build(incarnation)
        self._apply(self.r.on_start(self.now))

    def _build(self, incarnation: int) -> RaftReplica:
        return RaftReplica(self.node_id, voters=self.voters, rng=random.Random(self.seed),
                           disk=self.disk.view(), config=self.config, cluster_id=CLUSTER,
                           incarnation=incarnation, listener=self.listener,
                           directory_id=DIRS[self.node_id])

    def restart(self, incarnation: int = 2) -> RaftReplica:
        """Crash (losing nothing: the replica syncs) and start a new replica over the disk."""
        self.disk.crash(random.Random(0), 0.0)
        self.sent.clear()
        self.r = self._build(incarnation)
        self._apply(self.r.on_start(self.now))
        return self.r

    def _apply(self, effects: Effects | None) -> Effects | None:
        if effects is None:
            return None
        self.effects.append(effects)
        for op in effects.writes:
            self.disk.apply(op)
        if effects.sync:
            self.disk.sync()
        self.sent.extend(effects.sends)
        if effects.timer_ms is not None:
            self.timer = effects.timer_ms
        return effects

    # ---- driving

    def at(self, now: int) -> Harness:
        self.now = now
        return self

    def tick(self, now: int | None = None) -> Effects | None:
        """Fire the timer (at ``now``, default: when the replica asked to wake)."""
        self.now = self.timer if now is None else now
        return self._apply(self.r.on_timer(self.now))

    def request(self, src: int, body: Any) -> Any:
        """Deliver a request; returns the response body sent back (None if none yet)."""
        self._cid += 1
        cid = self._cid
        start = len(self.sent)
        self._apply(self.r.on_message(src, rpc.request(cid, body), self.now))
        for dst, msg in self.sent[start:]:
            if dst == src and isinstance(msg, rpc.Response) and msg.correlation_id == cid:
                return msg.body
        return None

    def responses_to(self, dst: int, cid: int) -> list[Any]:
        return [m.body for d, m in self.sent
                if d == dst and isinstance(m, rpc.Response) and m.correlation_id == cid]

    def last_request(self, dst: int, body_type: type) -> rpc.Request:
        for d, m in reversed(self.sent):
            if d == dst and isinstance(m, rpc.Request) and type(m.body) is body_type:
                return m
        raise AssertionError(f"no {body_type.__name__} was sent to {dst}")

    def reply(self, src: int, request_type: type, body: Any,
              correlation_id: int | None = None) -> Effects | None:
        """Answer the last ``request_type`` the replica sent to ``src``."""
        cid = correlation_id if correlation_id is not None else \
            self.last_request(src, request_type).correlation_id
        return self._apply(self.r.on_message(src, rpc.response(cid, body), self.now))

    def sends(self, body_type: type) -> list[tuple[int, Any]]:
        return [(d, m) for d, m in self.sent if type(getattr(m, "body", None)) is body_type]

    # ---- getting to a role

    def elect(self) -> RaftReplica:
        """Time out, stand, win with votes from the other voters: the replica leads."""
        self.tick()
        assert self.r.role == "candidate", self.r
        for v in self.voters:
            if v != self.node_id and self.r.role == "candidate":
                self.reply(v, M.VoteRequest, rpc.vote_response(0, self.r.epoch, -1, True))
        assert self.r.role == "leader", self.r
        return self.r

    def follow(self, leader: int, epoch: int) -> RaftReplica:
        body = rpc.begin_epoch_request(CLUSTER, epoch, leader, self.node_id, DIRS[self.node_id])
        resp = self.request(leader, body)
        assert rpc.vote_partition(resp).error_code == 0
        assert self.r.role == "follower" and self.r.leader_id == leader
        return self.r


def fetch(epoch: int, offset: int, last_epoch: int, replica: int = 2, max_wait: int = 0,
          cluster: str | None = CLUSTER, max_bytes: int = 1 << 20) -> Any:
    return rpc.fetch_request(cluster, replica, DIRS[replica], epoch, offset, last_epoch, max_wait,
                             max_bytes)


def vote(epoch: int, candidate: int = 2, last_epoch: int = 0, last_offset: int = 0,
         voter: int = 1, cluster: str | None = CLUSTER) -> Any:
    return rpc.vote_request(cluster, epoch, candidate, DIRS[candidate], voter, DIRS[voter],
                            last_epoch, last_offset)


def part(body: Any) -> Any:
    """The single partition of any Raft response."""
    if isinstance(body, M.FetchResponse):
        return rpc.fetch_response_partition(body)
    if isinstance(body, M.FetchSnapshotResponse):
        return rpc.snapshot_partition(body)
    if isinstance(body, M.DescribeQuorumResponse):
        return body.topics[0].partitions[0]
    return rpc.vote_partition(body)
