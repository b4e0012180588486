"""A voter restarted on a replaced (wiped) disk fetches with another directory id, and the
leader does not count it toward the high watermark: the warp must not either. Found by
``simulate --cluster`` seed 0 (a wiped voter, then the other follower voter stopped: stepping
commits nothing more, a warp that counted the wiped voter committed on)."""

from __future__ import annotations

from kraft_testkit.cluster import Cluster


def _run(fast_forward: bool) -> tuple[dict, Cluster]:
    c = Cluster(3, 3, seed=3, fast_forward=fast_forward)
    c.create_topic("t", 3, 3)
    leader = c.active_controller
    wiped, other = [n for n in c.controllers if n != leader]
    c.faults.wipe_disk(wiped)                  # back at once, on a new disk (new directory id)
    c.run_for(10_000)
    c.faults.kill(other)                       # now only the leader counts for a majority
    c.run_for(30_000)
    state = {n.id: (c.replica(n).hw, c.replica(n).log_end_offset)
             for n in (leader, wiped)}
    return state, c


def test_a_voter_on_a_replaced_disk_is_not_counted_by_the_warp():
    stepped, _ = _run(False)
    warped, c = _run(True)
    assert warped == stepped
    assert any("replaced disk" in k for k in c.fast_forward_stats)  # it stepped there
