"""``broker/steady_replicas.py``: a steady replica manager's fetch cycle between brokers as
state transitions alone leaves the brokers as the full paths do (``tick`` at a due fetch,
``handle_fetch``, ``on_fetch_response``, the ISR check), but for the messages, which are
counted and not queued (the idle warp holds such events, fastforward/held_events.py)."""

from __future__ import annotations

from kraft_testkit.broker import steady_replicas as steady
from kraft_testkit.cluster import Cluster
from kraft_testkit.raft import rpc


def _twins(seed: int):
    out = []
    for _ in range(2):
        c = Cluster(3, 3, seed=seed)
        c.create_topic("t", 6, 3)
        c.run_for(10_000)
        out.append(c)
    return out


def _state(logic) -> tuple:
    r = logic.replicas
    return (r._next_fetch_ms, r._next_isr_check_ms, dict(r._fetch_cids),  # noqa: SLF001
            logic._out._last_cid,  # noqa: SLF001
            sorted((rep.name, rep.last_fetched_ms, tuple(sorted(
                (f, s.last_fetch_ms, s.last_caught_up_ms, s.broker_epoch)
                for f, s in rep.followers.items())), rep.isr)
                   for rep in r.replicas.values()),
            logic.next_wakeup_ms())


def _sessions(logic) -> tuple:
    """The broker's KIP-227 sessions: its handlers' next (id, epoch), its cache's sessions."""
    r = logic.replicas
    return (sorted((k, tuple(h.next_metadata)) for k, h in r._handlers.items()),  # noqa: SLF001
            sorted((s.id, s.epoch, s.last_used_ms, s.size) for s in r._cache.sessions()))  # noqa: SLF001


def test_a_fetch_cycle_leaves_both_brokers_as_the_full_paths_do():
    full, held = _twins(3)
    b, l = full.broker_ids[0], full.broker_ids[1]
    fb, fl = full.broker(b).logic, full.broker(l).logic
    hb, hl = held.broker(b).logic, held.broker(l).logic
    assert _state(fb) == _state(hb) and _state(fl) == _state(hl)
    for _ in range(3):  # three cycles: b fetches from every leader, l serves it and answers
        due = fb.replicas._next_fetch_ms  # noqa: SLF001
        if fb.lifecycle._next_comm_ms is not None:  # noqa: SLF001 - keep heartbeats out
            fb.lifecycle._next_comm_ms = hb.lifecycle._next_comm_ms = due + 10_000  # noqa: SLF001
        sends = fb.on_timer(due).sends
        fetches = [(dst, m) for dst, m in sends if type(m.body).__name__ == "FetchRequest"]
        assert len(fetches) == len(steady.fetches_sent(hb.replicas, due)) >= 1
        assert _state(fb) == _state(hb)
        built = dict(hb.replicas._unqueued)  # noqa: SLF001
        hb.replicas._unqueued.clear()  # noqa: SLF001
        request = dict(fetches)[l]
        assert built[l] == (request.correlation_id, request.body)  # the same session and epoch
        answer = fl.on_message(b, request, due + 2).sends
        held_answer = steady.fetch_served(hl.replicas, built[l][1], due + 2)
        hl.on_timer(due + 2)  # the rest of the leader's event: its logic's _done
        assert _state(fl) == _state(hl)
        [(dst, response)] = [(d, m) for d, m in answer
                             if d == b and type(m.body).__name__ == "FetchResponse"]
        assert response.body == held_answer
        fb.on_message(l, response, due + 5)
        assert steady.fetch_answered(hb.replicas, l, request.correlation_id, held_answer,
                                     due + 5)
        assert _state(fb)[1:5] == _state(hb)[1:5]
        for other in set(dict(fetches)) - {l}:  # the other leaders' answers, alike
            resp = full.broker(other).logic.replicas.handle_fetch(dict(fetches)[other].body,
                                                                   due + 3)
            held.broker(other).logic.replicas.handle_fetch(built[other][1], due + 3)
            fb.on_message(other, rpc.response(dict(fetches)[other].correlation_id, resp),
                          due + 6)
            steady.fetch_answered(hb.replicas, other, dict(fetches)[other].correlation_id,
                                  resp, due + 6)
        assert _state(fb) == _state(hb)
        assert _sessions(fb) == _sessions(hb) and _sessions(fl) == _sessions(hl)
    before = _state(hb)
    # an answer to a fetch no longer in flight (a later one left before it came): ignored
    assert not steady.fetch_answered(hb.replicas, l, request.correlation_id, held_answer,
                                     due + 9)
    assert _state(hb) == before


def test_an_isr_check_moves_its_instant_and_shrinks_nothing():
    full, held = _twins(4)
    b = full.broker_ids[2]
    fb, hb = full.broker(b).logic, held.broker(b).logic
    due = fb.replicas._next_isr_check_ms  # noqa: SLF001
    fb.replicas._next_fetch_ms = hb.replicas._next_fetch_ms = due + 60_000  # noqa: SLF001
    fb.replicas.tick(due)
    steady.isr_checked(hb.replicas, due)
    assert _state(fb) == _state(hb)
    assert hb._out.sends == []  # noqa: SLF001
