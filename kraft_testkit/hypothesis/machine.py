"""A stateful Hypothesis machine over a live cluster: random faults, heals and admin calls.

Subclass :class:`ClusterMachine` to add your own ``@invariant()`` or rules, then export
``TestMyCluster = MyMachine.TestCase``. The cluster's safety invariants run after every
simulator event; a failing run is shrunk and printed by Hypothesis as the list of calls
(``state = ClusterMachine(); state.kill(node=1000); state.run(ms=9000) ...``), a script that
replays it. ``SHAPE`` sets the cluster (``Cluster`` keywords) and ``SEED`` its seed.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import (Bundle, RuleBasedStateMachine, initialize, invariant,
                                 multiple, precondition, rule)

from kraft_testkit.cluster import Cluster


class ClusterMachine(RuleBasedStateMachine):
    """Random faults and admin calls on a ``SHAPE`` cluster; checks it converges after a heal."""

    nodes = Bundle("nodes")  # node ids, so a failure prints as plain calls: state.kill(node=n_0)
    SHAPE: ClassVar[dict[str, Any]] = {"controllers": 3, "brokers": 3}
    SEED: ClassVar[int] = 0
    CONVERGE_MS: ClassVar[int] = 60_000

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.topics = 0

    @initialize(target=nodes)
    def boot(self) -> Any:
        self.cluster = Cluster(seed=self.SEED, **self.SHAPE)
        return multiple(*(h.id for h in self.cluster.nodes))

    def _state(self, node: int) -> str:
        return self.cluster.sim.process(node).state.value

    @rule(node=nodes)
    def kill(self, node: int) -> None:
        if self._state(node) == "running":
            self.cluster.faults.kill(node)

    @rule(node=nodes)
    def start(self, node: int) -> None:
        if self._state(node) in ("killed", "stopped"):
            self.cluster.faults.start(node)

    @rule(node=nodes)
    def isolate(self, node: int) -> None:
        self.cluster.network.isolate(node)

    @rule()
    def heal(self) -> None:
        self.cluster.network.heal()

    @rule(ms=st.integers(1, 20_000))
    def run(self, ms: int) -> None:
        self.cluster.run_for(ms)

    @precondition(lambda self: self.cluster is not None and
                  self.cluster.active_controller is not None)
    @rule(partitions=st.integers(1, 4))
    def create_topic(self, partitions: int) -> None:
        from kraft_testkit.protocol.error_codes import KafkaApiError

        self.topics += 1
        rf = min(len(self.cluster.brokers), 2) or 1
        try:
            self.cluster.create_topic(f"t{self.topics}", partitions=partitions,
                                      replication_factor=rf)
        except KafkaApiError:
            pass  # not enough live brokers, say: Kafka refuses too
        except Exception as e:  # noqa: BLE001 - NoProgress while the quorum is cut off
            from kraft_testkit.sim import NoProgress

            if not isinstance(e, NoProgress):
                raise

    @invariant()
    def one_active_controller_at_most(self) -> None:
        """At most one controller acts as active per epoch (the cluster's own invariants check
        the rest after every event)."""
        if self.cluster is None:
            return
        active = [h for h in self.cluster.controllers
                  if (m := self.cluster.controller_node(h)) is not None and m.controller.active
                  and m.raft.is_leader and self._state(h.id) == "running"]
        epochs = [self.cluster.replica(h).epoch for h in active]
        assert len(epochs) == len(set(epochs)), f"two active controllers in one epoch: {active}"

    def teardown(self) -> None:
        """Heal everything; the cluster must converge (a controller active, every broker
        RUNNING and unfenced) within ``CONVERGE_MS``."""
        c = self.cluster
        if c is None:
            return
        c.network.heal()
        for h in c.nodes:
            state = self._state(h.id)
            if state == "paused":
                c.faults.resume(h.id)
            elif state in ("killed", "stopped"):
                c.faults.start(h.id)
        c.run_until(lambda c: c.active_controller is not None and all(
            (s := c.broker_state(b)).state == "RUNNING" and not s.fenced for b in c.broker_ids),
            timeout_ms=self.CONVERGE_MS)
