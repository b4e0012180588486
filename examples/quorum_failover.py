"""A bare Raft quorum: elect, append, kill the leader, elect again; print what happened.

    python examples/quorum_failover.py [seed]
"""

import sys

from kraft_testkit.quorum import Quorum


def main(seed: int) -> None:
    q = Quorum(voters=5, seed=seed)
    q.run_until(lambda q: q.active_controller is not None, timeout_ms=10_000)
    print(f"t={q.now_ms} ms: leader {q.leader_id} in epoch {q.epoch}")
    offset = q.append([b"first", b"second"])
    print(f"t={q.now_ms} ms: appended up to offset {offset}, high watermark {q.high_watermark}")
    old = q.leader_id
    q.faults.kill(old)
    q.run_until(lambda q: q.active_controller not in (None, old), timeout_ms=10_000)
    print(f"t={q.now_ms} ms: killed {old}; new leader {q.leader_id} in epoch {q.epoch}")
    q.faults.start(old)
    q.converge()
    print(f"t={q.now_ms} ms: {old} is back and every replica converged; "
          f"trace digest {q.trace.digest()[:16]}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
