"""The hot path's caches change no behaviour: wire mode (frames and their memos, cached header
bytes, envelope frames) and invariant checking give the same run as neither, event for event,
through kills, a failover, a partition that fences a broker, a pause and lossy, duplicating,
reordering links. ``benchmarks/hotpath_digests.py`` compares the same fingerprints across two
checkouts."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from kraft_testkit.cluster import Cluster

# the fault scenario and fingerprint the benchmark compares across checkouts
_BENCH = runpy.run_path(str(Path(__file__).resolve().parents[2] / "benchmarks" /
                            "hotpath_digests.py"))


def _scenario(seed: int, wire: bool, invariants: bool) -> Cluster:
    return _BENCH["faults"](seed, 3, wire, invariants)


def _fingerprint(c: Cluster) -> tuple:
    return _BENCH["fingerprint"](c, width=64), dict(c.network.stats)


@pytest.mark.parametrize("seed", [1, 2])
def test_wire_and_invariants_change_nothing_under_faults(seed: int) -> None:
    plain = _fingerprint(_scenario(seed, wire=False, invariants=False))
    full = _fingerprint(_scenario(seed, wire=True, invariants=True))
    assert full == plain
    assert plain[1]["dropped"] > 0 and plain[1]["duplicated"] > 0  # the faults did happen
    again = _fingerprint(_scenario(seed, wire=True, invariants=True))
    assert again == full  # and the run is deterministic
