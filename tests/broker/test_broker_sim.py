"""Brokers in the simulator, beside a small scripted controller: ISR movement under partitions.

The controller here is a stand-in (the real one lives in ``kraft_testkit.controller``): it
registers brokers, answers heartbeats, fences brokers whose session expired, applies
AlterPartition requests as Kafka's ReplicationControlManager checks them, and pushes every new
image to the brokers (a stand-in for the Raft observer). Messages cross the network in wire
mode, as Kafka bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broker_helpers import CLUSTER, E, config, make_image, partition_record, uid

from kraft_testkit.broker import BrokerLogic, BrokerState
from kraft_testkit.metadata import MetadataImage
from kraft_testkit.protocol import messages as M
from kraft_testkit.raft import rpc
from kraft_testkit.sim import Simulation
from kraft_testkit.sim.node import Effects, NodeContext

CONTROLLER = 100
BROKERS = (1, 2, 3)
CFG = config()


@dataclass(frozen=True)
class ImagePush:
    """A committed image, as the metadata observer would hand it over (test-only message)."""

    image: MetadataImage
    leader: int


class BrokerNode:
    """BrokerLogic with images arriving as ImagePush messages."""

    cfg = CFG

    def __init__(self, ctx: NodeContext) -> None:
        self.logic = BrokerLogic(ctx.node_id, CLUSTER, self.cfg, ctx.rng)

    def on_start(self, now_ms: int) -> Effects:
        self.logic.start(now_ms)
        return self.logic.on_leader_change(CONTROLLER, 1, now_ms)  # as the observer learns it

    def on_message(self, src: int, msg: object, now_ms: int) -> Effects:
        if isinstance(msg, ImagePush):
            first = self.logic.on_leader_change(msg.leader, 1, now_ms)
            second = self.logic.on_metadata(msg.image, now_ms)
            return Effects(sends=first.sends + second.sends, timer_ms=second.timer_ms)
        return self.logic.on_message(src, msg, now_ms)

    def on_timer(self, now_ms: int) -> Effects:
        return self.logic.on_timer(now_ms)


class ScriptedController:
    """Registration, heartbeats, session expiry and AlterPartition over one metadata image."""

    def __init__(self, ctx: NodeContext) -> None:
        self.image = make_image({}, topics={"orders": 1},
                                partitions=[partition_record(1, 0, [1, 2, 3])], offset=0)
        self.last_seen: dict[int, int] = {}
        self.registered_at: dict[int, int] = {}
        self.sends: list[tuple[int, object]] = []

    def on_start(self, now_ms: int) -> Effects:
        return Effects(timer_ms=now_ms + 100)

    def on_timer(self, now_ms: int) -> Effects:
        for b, seen in sorted(self.last_seen.items()):
            reg = self.image.cluster.broker(b)
            if not reg.fenced and now_ms - seen > CFG.broker_session_timeout_ms:
                self._fence(b)
        return self._flush(now_ms + 100)

    def on_message(self, src: int, msg: Any, now_ms: int) -> Effects:
        body = msg.body
        handler = {M.BrokerRegistrationRequest: self._register,
                   M.BrokerHeartbeatRequest: self._heartbeat,
                   M.AlterPartitionRequest: self._alter}[type(body)]
        self.sends.append((src, rpc.response(msg.correlation_id, handler(src, body, now_ms))))
        return self._flush(None)

    # ------------------------------------------------------------------ handlers

    def _register(self, src: int, req: Any, now_ms: int) -> Any:
        epoch = self.image.offset + 1
        rec = M.RegisterBrokerRecord(
            broker_id=req.broker_id, incarnation_id=req.incarnation_id, broker_epoch=epoch,
            end_points=[M.RegisterBrokerRecord.BrokerEndpoint(
                name=x.name, host=x.host, port=x.port, security_protocol=x.security_protocol)
                for x in req.listeners],
            features=[], rack=req.rack, fenced=True)
        self._append(rec)
        self.registered_at[req.broker_id] = epoch
        self.last_seen[req.broker_id] = now_ms
        return M.BrokerRegistrationResponse(error_code=E.NONE, broker_epoch=epoch)

    def _heartbeat(self, src: int, req: Any, now_ms: int) -> Any:
        reg = self.image.cluster.broker(req.broker_id)
        if reg is None or reg.epoch != req.broker_epoch:
            return M.BrokerHeartbeatResponse(error_code=E.STALE_BROKER_EPOCH)
        self.last_seen[req.broker_id] = now_ms
        caught_up = req.current_metadata_offset >= self.registered_at[req.broker_id]
        if reg.fenced and not req.want_fence and caught_up:
            self._append(M.BrokerRegistrationChangeRecord(broker_id=reg.id,
                                                          broker_epoch=reg.epoch, fenced=-1))
        reg = self.image.cluster.broker(req.broker_id)
        return M.BrokerHeartbeatResponse(error_code=E.NONE, is_caught_up=caught_up,
                                         is_fenced=reg.fenced, should_shut_down=False)

    def _alter(self, src: int, req: Any, now_ms: int) -> Any:
        rs = M.AlterPartitionResponse
        reg = self.image.cluster.broker(req.broker_id)
        if reg is None or reg.epoch != req.broker_epoch:
            return rs(error_code=E.STALE_BROKER_EPOCH)
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                part = self.image.partition(t.topic_id, p.partition_index)
                new_isr = [s.broker_id for s in p.new_isr_with_epochs]
                error = E.NONE
                if part.leader != req.broker_id or p.leader_epoch != part.leader_epoch:
                    error = E.FENCED_LEADER_EPOCH
                elif p.partition_epoch != part.partition_epoch:
                    error = E.INVALID_UPDATE_VERSION
                elif any(self._ineligible(s.broker_id, s.broker_epoch)
                         for s in p.new_isr_with_epochs):
                    error = E.INELIGIBLE_REPLICA
                elif tuple(new_isr) != part.isr:
                    self._append(M.PartitionChangeRecord(partition_id=p.partition_index,
                                                         topic_id=t.topic_id, isr=new_isr))
                    part = self.image.partition(t.topic_id, p.partition_index)
                parts.append(rs.PartitionData(
                    partition_index=p.partition_index, error_code=error, leader_id=part.leader,
                    leader_epoch=part.leader_epoch, isr=part.isr,
                    partition_epoch=part.partition_epoch))
            topics.append(rs.TopicData(topic_id=t.topic_id, partitions=tuple(parts)))
        return rs(error_code=E.NONE, topics=tuple(topics))

    # ------------------------------------------------------------------ helpers

    def _ineligible(self, broker_id: int, epoch: int) -> bool:
        reg = self.image.cluster.broker(broker_id)
        return reg is None or reg.fenced or (epoch != -1 and epoch != reg.epoch)

    def _fence(self, broker_id: int) -> None:
        reg = self.image.cluster.broker(broker_id)
        self._append(M.BrokerRegistrationChangeRecord(broker_id=broker_id,
                                                      broker_epoch=reg.epoch, fenced=1))
        part = self.image.partition(uid(1), 0)
        if broker_id in part.isr and len(part.isr) > 1:
            isr = [b for b in part.isr if b != broker_id]
            leader = isr[0] if part.leader == broker_id else -2
            self._append(M.PartitionChangeRecord(partition_id=0, topic_id=uid(1), isr=isr,
                                                 leader=leader))

    def _append(self, rec: Any) -> None:
        offset = self.image.offset + 1
        self.image = self.image.replay([rec]).with_provenance((offset, 1))
        for b in self.last_seen:
            self.sends.append((b, ImagePush(self.image, CONTROLLER)))

    def _flush(self, timer_ms: int | None) -> Effects:
        sends, self.sends = self.sends, []
        return Effects(sends=sends, timer_ms=timer_ms)


class SelfFencingBrokerNode(BrokerNode):
    cfg = config(testkit_broker_self_fencing_enable=True)


def _world(seed: int, broker: type = BrokerNode) -> Simulation:
    sim = Simulation(seed, codec=rpc.RaftCodec())
    sim.add_node(CONTROLLER, ScriptedController)
    for b in BROKERS:
        sim.add_node(b, broker)
    return sim


def _broker(sim: Simulation, b: int) -> BrokerLogic:
    return sim.process(b).machine.logic


def _isr(sim: Simulation) -> tuple[int, ...]:
    return sim.process(CONTROLLER).machine.image.partition(uid(1), 0).isr


def _all_running(sim: Simulation) -> bool:
    return all(_broker(sim, b).state is BrokerState.RUNNING for b in BROKERS)


def test_isr_shrinks_and_expands_when_a_follower_is_cut_from_its_leader():
    sim = _world(seed=11)
    sim.run_until(_all_running, timeout_ms=5_000)
    assert _isr(sim) == (1, 2, 3)
    sim.run_for(10_000)
    assert _isr(sim) == (1, 2, 3)  # followers fetch: nothing moves
    cut_at = sim.now_ms
    sim.network.partition({1}, {3})  # 3 still reaches the controller, not its leader
    sim.run_until(lambda s: _isr(s) == (1, 2), timeout_ms=60_000)
    waited = sim.now_ms - cut_at
    assert 30_000 < waited <= 47_000  # replica.lag.time.max.ms, checked every lag / 2
    assert not _broker(sim, 3).fenced  # the leader shrank the ISR, not the controller
    sim.network.heal()
    healed_at = sim.now_ms
    leader = _broker(sim, 1).replica("orders", 0)
    sim.run_until(lambda s: _isr(s) == leader.isr == (1, 2, 3), timeout_ms=10_000)
    assert sim.now_ms - healed_at <= CFG.replica_fetch_backoff_ms + 100
    assert leader.pending is None
    texts = " | ".join(_broker(sim, 1).events.texts())
    # the answer or the committed image, whichever arrives first, moves the leader's ISR
    assert "orders-0: ISR [1, 2, 3] -> [1, 2] (" in texts
    assert "orders-0: ISR [1, 2] -> [1, 2, 3] (" in texts


def test_released_kafka_a_broker_cut_from_the_controller_serves_on_until_told():
    """Default (released Kafka): the controller fences the cut-off broker and moves it out of
    the ISR; the broker itself keeps serving, as it has not heard of it; after the heal it learns
    it was fenced, is unfenced again and rejoins the ISR."""
    sim = _world(seed=5)
    sim.run_until(_all_running, timeout_ms=5_000)
    sim.network.partition({2}, {CONTROLLER})
    sim.run_until(lambda s: s.process(CONTROLLER).machine.image.cluster.broker(2).fenced,
                  timeout_ms=30_000)
    sim.run_for(30_000)
    b2 = _broker(sim, 2)
    assert b2.serving and not b2.self_fenced and b2.state is BrokerState.RUNNING
    assert 2 not in _isr(sim)
    sim.network.heal()
    sim.run_until(lambda s: _isr(s) == (1, 3, 2), timeout_ms=20_000)


def test_a_broker_cut_from_the_controller_fences_itself_and_comes_back():
    """KIP-343, the seed document's proposal (opt-in)."""
    sim = _world(seed=5, broker=SelfFencingBrokerNode)
    sim.run_until(_all_running, timeout_ms=5_000)
    sim.network.partition({2}, {CONTROLLER})
    sim.run_until(lambda s: _broker(s, 2).self_fenced, timeout_ms=30_000)
    b2 = _broker(sim, 2)
    assert not b2.serving and b2.state is BrokerState.RUNNING
    assert sim.process(CONTROLLER).machine.image.cluster.broker(2).fenced
    assert 2 not in _isr(sim)  # the controller dropped it when its session expired
    sim.network.heal()
    sim.run_until(lambda s: _broker(s, 2).serving, timeout_ms=15_000)
    sim.run_until(lambda s: _isr(s) == (1, 3, 2), timeout_ms=5_000)  # fetching again: back in


def test_same_seed_same_run():
    digests = []
    for _ in range(2):
        sim = _world(seed=21)
        sim.run_until(_all_running, timeout_ms=5_000)
        sim.network.partition({1}, {2})
        sim.run_for(50_000)
        digests.append((sim.trace.digest(), _broker(sim, 1).events.texts()))
    assert digests[0] == digests[1]
