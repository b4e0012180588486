"""The hot path's caches change no behaviour: wire mode (frames and their memos, cached header
bytes, envelope frames) and invariant checking give the same run as neither, event for event,
through kills, a failover, a partition that fences a broker, a pause and lossy, duplicating,
reordering links. ``benchmarks/hotpath_digests.py`` compares the same fingerprints across two
checkouts."""

from __future__ import annotations

import hashlib

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol.frames import encode_record
from kraft_testkit.sim.link import LinkProfile, Uniform


def _scenario(seed: int, wire: bool, invariants: bool) -> Cluster:
    c = Cluster(3, 3, seed=seed, wire=wire, invariants=invariants)
    c.create_topic("a", 4, 3)
    c.run_for(2_000)
    c.faults.kill(c.brokers[0])
    c.run_for(3_000)
    c.faults.start(c.brokers[0])
    c.network.isolate(c.brokers[1])
    c.run_for(12_000)
    c.network.heal()
    c.network.set_profile(LinkProfile(latency=Uniform(1, 8), drop=0.05, duplicate=0.05,
                                      reorder=0.1))
    c.faults.pause(c.brokers[2])
    c.run_for(4_000)
    c.faults.resume(c.brokers[2])
    old = c.active_controller
    c.faults.kill(old)
    c.run_for(6_000)
    c.network.set_profile(LinkProfile())
    c.faults.start(old)
    c.create_topic("b", 3, 2)
    c.run_for(5_000)
    return c


def _fingerprint(c: Cluster, tmp_path) -> tuple:
    path = tmp_path / f"log-{id(c)}"
    c.dump_log(path)
    image = hashlib.sha256(b"".join(encode_record(r) for r in c.metadata.write())).hexdigest()
    return (c.sim.trace.digest(), c.sim.scheduler.executed, c.now_ms,
            hashlib.sha256(path.read_bytes()).hexdigest(), image, dict(c.network.stats))


@pytest.mark.parametrize("seed", [1, 2])
def test_wire_and_invariants_change_nothing_under_faults(seed: int, tmp_path) -> None:
    plain = _fingerprint(_scenario(seed, wire=False, invariants=False), tmp_path)
    full = _fingerprint(_scenario(seed, wire=True, invariants=True), tmp_path)
    assert full == plain
    assert plain[5]["dropped"] > 0 and plain[5]["duplicated"] > 0  # the faults did happen
    again = _fingerprint(_scenario(seed, wire=True, invariants=True), tmp_path)
    assert again == full  # and the run is deterministic
