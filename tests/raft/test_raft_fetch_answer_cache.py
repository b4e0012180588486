"""The leader builds a fetch answer with records once per state (raft/replication.py): the
followers fetch the same offset after each append, so one answer serves them all. A stale
answer would be a bug stepping and the warp share, so each cached answer is compared with
one built afresh over a sequence of states that changes every part of the key in turn (high
watermark, log end, fetch offset, max bytes, epoch)."""

from __future__ import annotations

from kraft_testkit.raft import rpc
from kraft_testkit.raft.config import RaftConfig

from raft_helpers import Harness, fetch, part


def _fresh(h: Harness, offset: int, max_bytes: int):
    """The answer the leader would build without a cache."""
    r = h.r
    return rpc.fetch_response(0, r.epoch, r.id, r.hw, r.log.start_offset,
                              r.log.read(offset, min(max_bytes, r.config.fetch_max_bytes)))


def _appended(h: Harness, values: list[bytes]) -> None:
    h.r.append(values, h.now)
    h.at(h.now + RaftConfig().append_linger_ms).tick(h.now)


def test_followers_fetching_one_offset_share_one_answer():
    h = Harness()
    h.elect()
    _appended(h, [b"a"])
    first = h.request(2, fetch(1, 0, 0))
    second = h.request(3, fetch(1, 0, 0, replica=3))
    assert part(first).records and first is second
    assert first == _fresh(h, 0, 1 << 20)


def test_a_cached_answer_never_outlives_what_it_read():
    h = Harness()
    h.elect()
    _appended(h, [b"a", b"b"])
    checks = 0

    def check(replica: int, offset: int, last_epoch: int, max_bytes: int = 1 << 20) -> None:
        nonlocal checks
        body = h.request(replica, fetch(h.r.epoch, offset, last_epoch, replica=replica,
                                        max_bytes=max_bytes))
        assert body == _fresh(h, offset, max_bytes), (replica, offset, max_bytes)
        checks += 1

    check(3, 0, 0)                    # fills the cache at high watermark 0
    check(2, h.r.log_end_offset, 1)   # a voter catches up: the high watermark moves
    assert h.r.hw > 0
    check(3, 0, 0)                    # same offset, new high watermark
    _appended(h, [b"c"])
    check(3, 0, 0)                    # same offset, longer log
    check(3, 1, 1)                    # another offset
    check(3, 1, 1, max_bytes=1)       # another size (at least one batch)
    check(3, 1, 1)
    assert checks == 7
