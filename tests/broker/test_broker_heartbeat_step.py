"""``BrokerLogic.heartbeat_step``: for a steady broker that hosts nothing, a due heartbeat at
its timer and its answer leave the broker as ``on_timer`` / ``on_message`` do (the idle warp
calls it for every heartbeat of a stretch and asks for the wake-up once); anything else is
refused with nothing changed."""

from __future__ import annotations

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.raft import rpc


def _steady(seed: int, topic: bool = False):
    c = Cluster(3, 3, seed=seed)
    if topic:
        c.create_topic("t", 3, 3)
    c.run_for(10_000)
    return c, c.broker(c.broker_ids[0]).logic


def _state(logic) -> tuple:
    lc, reps = logic.lifecycle, logic.replicas
    return (lc.state, lc.fenced, lc.self_fenced, lc._inflight, lc._next_comm_ms,  # noqa: SLF001
            lc._last_contact_ms, lc._failed_attempts, list(lc._events),  # noqa: SLF001
            reps._next_fetch_ms, reps._next_isr_check_ms, reps.leader_serving,  # noqa: SLF001
            logic._out._last_cid)  # noqa: SLF001


def _answer(cid: int, error: int = ErrorCode.NONE) -> object:
    return rpc.response(cid, M.BrokerHeartbeatResponse(
        error_code=error, is_caught_up=True, is_fenced=False, should_shut_down=False))


def test_a_heartbeat_and_its_answer_leave_the_broker_as_the_full_events_do():
    (_, full), (_, step) = _steady(3), _steady(3)
    assert _state(full) == _state(step)
    due = full.lifecycle._next_comm_ms  # noqa: SLF001
    effects = full.on_timer(due)
    sends = step.heartbeat_step(due)
    assert sends == effects.sends and len(sends) == 1
    assert type(sends[0][1].body) is M.BrokerHeartbeatRequest
    assert _state(full) == _state(step)
    assert step.next_wakeup_ms() == effects.timer_ms
    cid = sends[0][1].correlation_id
    effects = full.on_message(sends[0][0], _answer(cid), due + 3)
    assert step.heartbeat_step(due + 3, _answer(cid)) == effects.sends == []
    assert _state(full) == _state(step)
    assert step.next_wakeup_ms() == effects.timer_ms


def test_anything_else_is_refused_with_nothing_changed():
    c, logic = _steady(4)
    before = _state(logic)
    due = logic.lifecycle._next_comm_ms  # noqa: SLF001
    assert logic.heartbeat_step(due - 1) is None  # not due yet
    assert logic.heartbeat_step(due, _answer(12345)) is None  # no heartbeat out to answer
    sends = logic.heartbeat_step(due)
    cid = sends[0][1].correlation_id
    mid = _state(logic)
    assert mid != before
    assert logic.heartbeat_step(due + 1, _answer(cid + 1)) is None  # another request's id
    assert logic.heartbeat_step(due + 1, _answer(cid, ErrorCode.STALE_BROKER_EPOCH)) is None
    assert logic.heartbeat_step(due + 1) is None  # one is in flight already
    assert _state(logic) == mid
    _, hosting = _steady(5, topic=True)  # a broker with replicas runs its full logic
    due = hosting.lifecycle._next_comm_ms  # noqa: SLF001
    before = _state(hosting)
    assert hosting.heartbeat_step(due) is None
    assert _state(hosting) == before
