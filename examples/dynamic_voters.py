"""KIP-853 dynamic voters on a cluster: grow one controller to three, replace a failed disk,
remove the active controller; print the voter set after each step.

    python examples/dynamic_voters.py [seed]
"""

import sys

from kraft_testkit.cluster import Cluster


def show(c: Cluster, what: str) -> None:
    voters = ", ".join(f"{n} (dir {str(d)[:8]})" for n, d in c.voter_set().keys.items())
    print(f"t={c.now_ms:>6} ms  {what:<40} voters: {voters}; active {c.active_controller}")


def main(seed: int) -> str:
    c = Cluster(1, 3, seed=seed, kraft_version=1)   # formatted with --initial-controllers
    c.create_topic("orders", partitions=3, replication_factor=3)
    show(c, "booted")
    for _ in range(2):
        node = c.add_controller()                   # formatted with neither flag: an observer
        c.add_voter(node)                           # returns once the VotersRecord commits
        show(c, f"added controller {node.id}")

    victim = next(h for h in c.controllers if h != c.active_controller)
    old_dir = c.voter_set().keys[victim.id]
    c.faults.replace_disk(victim)                   # same id, new directory id: an observer
    c.run_for(2_000)
    c.remove_voter(victim, old_dir)
    show(c, f"removed {victim.id}'s old disk")
    c.add_voter(victim)
    show(c, f"added {victim.id} with its new disk")

    old = c.active_controller
    c.remove_voter(old)                             # the leader removes itself and resigns
    c.run_until(lambda c: c.active_controller not in (None, old), timeout_ms=20_000)
    show(c, f"removed the active controller {old.id}")

    c.create_topic("payments", partitions=3, replication_factor=3)
    assert c.metadata.topics.by_name("orders") is not None
    print(f"both topics committed; trace digest {c.trace.digest()[:16]}")
    return c.trace.digest()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
