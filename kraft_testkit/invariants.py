"""Safety invariants of a whole cluster, checked after every simulator event.

Raft's own invariants (one leader per epoch, committed prefix identical everywhere, ...) run on
the replicas inside the controller and broker nodes. On top, every committed metadata image a
controller or broker holds must satisfy KIP-631's rules:

* a fenced broker leads no partition;
* every ISR is non-empty and within the replicas; the leader is in the ISR or -1;
* a broker id's epoch never goes down on a node (a lagging node may show an older one);
* no broker has applied metadata past the highest high watermark of the quorum.

Checks run only when an image changed (images are immutable, so identity tells), which keeps
them cheap enough to stay on in tests.
"""

from __future__ import annotations

from typing import Any

from .metadata import changed_topics
from .node import KraftNode
from .raft.invariants import RaftInvariants
from .sim.errors import InvariantViolation


class ClusterInvariants:
    """``sim.add_invariant(ClusterInvariants(cluster), "cluster")``.

    Incremental: after an event it looks only at the nodes the event touched (``sim.touched``);
    the others' replicas and images cannot have changed.
    """

    incremental = True

    def __init__(self, cluster: Any) -> None:
        self._cluster = cluster
        self.raft = RaftInvariants()
        self._seen: dict[int, Any] = {}  # node -> the last image checked
        # (node, incarnation, broker id) -> highest epoch that node has applied: a lagging or
        # restarted node replays older registrations, which is not a step back
        self._epochs: dict[tuple[int, int, int], int] = {}
        # node -> (incarnation, cluster, topics) last checked: a NoOp moves only the provenance
        # and shares every section object, so the KIP-631 checks would repeat themselves
        self._sections: dict[int, tuple[int, Any, Any]] = {}
        self.checks = 0
        self._elr_on: dict[int, bool] = {}  # node -> ELR on at its last checked image

    def __call__(self, sim: Any) -> None:
        touched = sim.touched
        processes = sim.processes
        if touched is not None:
            if not touched:
                return  # a message lost or vanished: no node changed
            if len(touched) == 1:  # most events: one node (no sort, no comprehension)
                for node in touched:
                    process = processes.get(node)
                    processes = {} if process is None else {node: process}
            else:
                processes = {n: processes[n] for n in sorted(touched) if n in processes}
        self.raft.check(sim, _replica, processes)
        changed = []
        seen = self._seen
        for node, process in processes.items():
            machine = process.machine
            if machine is None:
                continue
            image = _committed_image(machine)
            if image is not None and seen.get(node) is not image:
                seen[node] = image
                changed.append((node, process.incarnation, machine, image))
        if not changed:
            return  # images are immutable: nothing new to check
        # offsets below this are committed: the Raft checks keep the largest high watermark
        # any replica reached, and they ran on every replica whose high watermark moved (it is
        # in their fingerprint), so no replica's is above it (no walk over the cluster)
        committed = self.raft.committed
        sections = self._sections
        for node, incarnation, machine, image in changed:
            key = (incarnation, image.cluster, image.topics)
            last = sections.get(node)
            if last is None or last[0] != incarnation or last[1] is not key[1] or \
                    last[2] is not key[2]:
                sections[node] = key
                self.checks += 1
                # the same brokers (fencing) and incarnation: only the topics a delta touched
                # can break a partition invariant, so only those are looked at
                since = last[2] if last is not None and last[0] == incarnation and \
                    last[1] is key[1] else None
                self._check_image(sim, node, incarnation, image, since)
            if _is_broker(machine) and image.provenance.offset >= committed:
                self._fail(sim, "broker applies past the high watermark",
                           f"broker {node} applied offset {image.provenance.offset}, "
                           f"the quorum's high watermark is {committed}")

    def _check_image(self, sim: Any, node: int, incarnation: int, image: Any,
                     since: Any = None) -> None:
        cluster = image.cluster
        if since is None:  # the brokers' section changed (else it is the very object checked)
            epochs = self._epochs
            for broker_id, reg in cluster.brokers.items():
                key = (node, incarnation, broker_id)
                top = epochs.get(key, -1)
                if reg.epoch < top:
                    self._fail(sim, "broker epochs increase",
                               f"node {node} went from broker {broker_id} epoch {top} back to "
                               f"epoch {reg.epoch}")
                if reg.epoch > top:
                    epochs[key] = reg.epoch
        elr_on = image.features.finalized.get("eligible.leader.replicas.version", 0) >= 1
        touched = None
        if since is not None and self._elr_on.get(node) == elr_on:
            touched = changed_topics(since, image.topics)
        self._elr_on[node] = elr_on
        topics = image.topics
        if touched is not None:
            topics = sorted((topics.topics_by_id[t] for t in touched if t in topics.topics_by_id),
                            key=lambda t: t.name)
            if not topics:
                return  # a delta that only removed topics: nothing left to look at
        fenced = set(cluster.fenced_broker_ids())
        for topic in topics:
            for pid, p in topic.partitions.items():
                isr, leader = p.isr, p.leader
                if isr and leader in isr and not p.elr and leader not in fenced and \
                        set(isr) <= set(p.replicas):
                    continue  # the common case, every check below passes (no text is made)
                where = f"{topic.name}-{pid} on node {node} at offset {image.provenance.offset}"
                if not p.isr and not (elr_on or p.elr or p.last_known_elr):
                    # with ELR (KIP-966) Kafka writes an empty ISR: the ELR remembers who may lead
                    self._fail(sim, "ISR never empty without ELR", f"{where}: empty ISR")
                if set(p.elr) & set(p.isr):
                    # (not "within replicas": Kafka's builder keeps a reassigned-away ELR member)
                    self._fail(sim, "ELR apart from the ISR",
                               f"{where}: ELR {list(p.elr)}, ISR {list(p.isr)}")
                if not set(p.isr) <= set(p.replicas):
                    self._fail(sim, "ISR within replicas",
                               f"{where}: ISR {list(p.isr)} not within replicas {list(p.replicas)}")
                if p.leader != -1 and p.leader not in p.isr:
                    self._fail(sim, "leader in ISR or -1",
                               f"{where}: leader {p.leader} not in ISR {list(p.isr)}")
                if p.leader in fenced:
                    self._fail(sim, "fenced brokers lead nothing",
                               f"{where}: leader {p.leader} is fenced")

    def _fail(self, sim: Any, invariant: str, detail: str) -> None:
        raise InvariantViolation(invariant, detail, seed=sim.seed, now_ms=sim.now_ms,
                                 replay=getattr(sim, "replay_hint", None),
                                 trace_tail=sim.trace.tail(30))


def _replica(process: Any) -> Any:
    """The Raft replica of a process's node (None when it is down or not a node)."""
    machine = process.machine
    if type(machine) is KraftNode:  # the cluster's own nodes: plain attributes
        return machine.raft
    return getattr(machine, "raft", None)


def _committed_image(machine: Any) -> Any:
    """The controller's committed image, else the broker's (None for other machines)."""
    if type(machine) is KraftNode:  # the cluster's own nodes: plain attributes
        if machine.controller is not None:
            return machine.controller.committed
        return None if machine.listener is None else machine.listener.image
    controller = getattr(machine, "controller", None)
    if controller is not None:
        return controller.committed
    listener = getattr(machine, "listener", None)
    return getattr(listener, "image", None)


def _is_broker(machine: Any) -> bool:
    return getattr(machine, "controller", None) is None and \
        getattr(machine, "listener", None) is not None
