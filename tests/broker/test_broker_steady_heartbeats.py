"""``Lifecycle.sent_steady_heartbeat`` and ``steady_answer``: for a steady broker, a due
heartbeat and its answer leave the lifecycle as the broker's ``on_timer`` / ``on_message`` do,
but for the request, which is counted and not queued (the idle warp holds such heartbeats,
fastforward/held_events.py); ``steady`` says where they apply."""

from __future__ import annotations

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.raft import rpc


def _steady(seed: int, **kw):
    c = Cluster(3, 3, seed=seed, **kw)
    c.run_for(10_000)
    return c, c.broker(c.broker_ids[0]).logic


def _state(logic) -> tuple:
    lc = logic.lifecycle
    return (lc.state, lc.fenced, lc.self_fenced, lc._inflight, lc._next_comm_ms,  # noqa: SLF001
            lc._last_contact_ms, lc._failed_attempts, list(lc._events),  # noqa: SLF001
            logic._out._last_cid, lc.next_deadline())  # noqa: SLF001


def _answer(cid: int) -> object:
    return rpc.response(cid, M.BrokerHeartbeatResponse(
        error_code=ErrorCode.NONE, is_caught_up=True, is_fenced=False, should_shut_down=False))


def test_a_heartbeat_and_its_answer_leave_the_lifecycle_as_the_full_events_do():
    (_, full), (_, held) = _steady(3), _steady(3)
    assert _state(full) == _state(held)
    for _ in range(3):  # three cycles, the metadata offset as the broker has it
        assert full.lifecycle.steady() and held.lifecycle.steady()
        due = full.lifecycle._next_comm_ms  # noqa: SLF001
        effects = full.on_timer(due)
        [(dst, request)] = effects.sends
        assert type(request.body) is M.BrokerHeartbeatRequest
        held.lifecycle.sent_steady_heartbeat(due, full.lifecycle.metadata_offset)
        assert held._out.sends == []  # noqa: SLF001 - counted, not queued
        assert _state(full) == _state(held)
        assert held.lifecycle._inflight.body == request.body  # noqa: SLF001
        assert held.lifecycle._inflight.cid == request.correlation_id  # noqa: SLF001
        full.on_message(dst, _answer(request.correlation_id), due + 3)
        held.lifecycle.steady_answer(due + 3)
        assert _state(full) == _state(held)
        assert held.next_wakeup_ms() == full.next_wakeup_ms()


def test_steady_excludes_every_other_state():
    _, logic = _steady(4)
    lc = logic.lifecycle
    assert lc.steady()
    lc.fenced = True
    assert not lc.steady()
    c2, logic2 = _steady(5)
    logic2.lifecycle.begin_controlled_shutdown(c2.sim.now_ms)  # PENDING_CONTROLLED_SHUTDOWN
    assert not logic2.lifecycle.steady()
    _, fencing = _steady(6, broker_self_fencing=True)
    assert not fencing.lifecycle.steady()  # KIP-343: a self-fencing deadline is planned
