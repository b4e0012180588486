"""``kraft-testkit demo``: a scripted incident drill on an in-process cluster, printed as a timeline.

The timeline merges three real sources, all stamped with virtual time: the steps the drill
performs, what the brokers log about themselves, and every record committed to the metadata log
(read back from the log, as ``dump-log`` would show it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from ..cluster import Cluster
from ..committed import describe_record
from ..protocol.frames import MetadataRecord
from ..protocol.log import iter_log

_SKIP = {"NO_OP_RECORD"}


@dataclass
class Timeline:
    """Events as ``(virtual ms, source, text)``; sorted when printed."""

    events: list[tuple[int, int, str, str]] = field(default_factory=list)
    _n: int = 0

    def add(self, at_ms: int, source: str, text: str) -> None:
        self._n += 1
        self.events.append((at_ms, self._n, source, text))


def _describe(rec: MetadataRecord) -> str:
    """A committed record in a few words (``RegisterBroker id=0 epoch=5``)."""
    return describe_record(rec.type_name, rec.message)


def _chatter(text: str) -> bool:
    """Per-partition broker events: shown with ``--verbose`` only."""
    return text.startswith(("created replica", "following ", "deleted replica")) or \
        ": ISR [" in text or "proposing ISR" in text


def run_demo(seed: int, console: Console | None = None, *, controllers: int = 3,
             brokers: int = 3, verbose: bool = False, plot: str | None = None,
             html: str | None = None, broker_self_fencing: bool = False) -> dict[str, Any]:
    """Run the drill and print it; returns figures (wall ms, virtual ms, digest) for tests.

    ``plot``: also draw the run (broker states, active controller, drill steps) to this PNG.
    ``html``: also write the run as a swim-lane HTML timeline (:mod:`.timeline_html`).
    ``broker_self_fencing``: the seed document's KIP-343 proposal instead of released Kafka (the
    isolated broker then fences itself too).
    """
    console = console or Console()
    started = time.perf_counter()
    tl = Timeline()
    c = Cluster(controllers, brokers, seed=seed, boot=False,
                broker_self_fencing=broker_self_fencing)
    recorder = None
    if plot is not None:
        from .timeline_plot import StateRecorder

        recorder = StateRecorder(c)  # reads state after every event; changes nothing
        c.sim.add_invariant(recorder, "timeline")
    c.run_until(lambda c: c.active_controller is not None and c.all_brokers_running(),
                timeout_ms=60_000)
    seen: dict[int, Any] = {}  # id() of a broker logic -> it (a restart makes a new one)

    def harvest() -> None:
        for h in c.brokers:
            b = c.broker(h)
            if b is not None:
                seen.setdefault(id(b.logic), (h.id, b.logic))

    c.run_for(0)
    harvest()
    tl.add(c.now_ms, "drill", f"cluster booted: {controllers} controllers, {brokers} brokers, "
                              f"active controller {c.active_controller.id}")
    topic = "orders"
    c.create_topic(topic, partitions=6, replication_factor=min(3, brokers))
    tl.add(c.now_ms, "drill", f"created topic {topic!r} (6 partitions, RF {min(3, brokers)})")

    old = c.active_controller
    tl.add(c.now_ms, "drill", f"KILL active controller {old.id}")
    c.faults.kill(old)
    if controllers - 1 >= controllers // 2 + 1:  # the others still form a majority
        c.run_until(lambda c: c.active_controller not in (None, old), timeout_ms=15_000)
        tl.add(c.now_ms, "drill", f"new active controller {c.active_controller.id}")
        c.faults.start(old)
    else:  # 1 or 2 controllers: no majority is left until the dead one comes back
        c.run_for(3_000)
        tl.add(c.now_ms, "drill", f"no active controller: {controllers - 1} of {controllers} "
                                  f"voters cannot elect one; RESTART controller {old.id}")
        c.faults.start(old)
        c.run_until(lambda c: c.active_controller is not None, timeout_ms=15_000)
        tl.add(c.now_ms, "drill", f"quorum restored: active controller {c.active_controller.id}")

    victim = c.brokers[1 % brokers]
    tl.add(c.now_ms, "drill", f"ISOLATE broker {victim.id} from everyone")
    c.network.isolate(victim.id)
    c.run_until(lambda c: c.broker_state(victim).fenced, timeout_ms=30_000)
    tl.add(c.now_ms, "drill", f"broker {victim.id} fenced by the controller (lease expired)")
    if broker_self_fencing:
        c.run_until(lambda c: c.broker_state(victim).self_fenced, timeout_ms=30_000)
        tl.add(c.now_ms, "drill", f"broker {victim.id} fenced itself (KIP-343, opt-in)")
    else:
        c.run_for(10_000)
        serving = "still serving" if c.broker(victim).logic.serving else "not serving"
        tl.add(c.now_ms, "drill", f"broker {victim.id} is {serving}: cut off, it has not "
                                  f"heard that it was fenced (released Kafka)")
    c.network.heal()
    tl.add(c.now_ms, "drill", "HEAL the network")
    c.run_until(lambda c: not c.broker_state(victim).fenced and
                c.broker_state(victim).state == "RUNNING", timeout_ms=30_000)
    tl.add(c.now_ms, "drill", f"broker {victim.id} unfenced and RUNNING again")

    leaving = c.brokers[2 % brokers]
    tl.add(c.now_ms, "drill", f"CONTROLLED SHUTDOWN of broker {leaving.id}")
    harvest()
    c.controlled_shutdown(leaving)
    tl.add(c.now_ms, "drill", f"broker {leaving.id} stopped; it leads "
                              f"{len(c.metadata.partitions_led_by(leaving.id))} partitions")
    c.faults.start(leaving)
    harvest()
    c.run_until(lambda c: c.broker_state(leaving).state == "RUNNING" and
                not c.broker_state(leaving).fenced, timeout_ms=30_000)
    tl.add(c.now_ms, "drill", f"broker {leaving.id} restarted and RUNNING")

    current = list(c.metadata.partition(topic, 0).replicas)
    target = [b for b in c.broker_ids if b not in current][:1] + current[:-1] \
        if brokers > len(current) else list(reversed(current))
    tl.add(c.now_ms, "drill", f"REASSIGN {topic}-0 {current} -> {target}")
    c.reassign(topic, 0, target)
    c.run_until(lambda c: list(c.metadata.partition(topic, 0).replicas) == target and
                not c.metadata.partition(topic, 0).adding_replicas, timeout_ms=60_000)
    tl.add(c.now_ms, "drill", f"reassignment of {topic}-0 complete")
    c.run_until(lambda c: all(set(p.isr) == set(p.replicas)
                              for p in c.metadata.topic(topic).partitions.values()),
                timeout_ms=60_000)
    tl.add(c.now_ms, "drill", "every partition's ISR is full again")

    harvest()
    for broker_id, logic in seen.values():
        for at, text in logic.events:
            if verbose or not _chatter(text):
                tl.add(at, f"broker {broker_id}", text)
    best = max((c.replica(h) for h in c.controllers if c.replica(h) is not None),
               key=lambda r: r.hw)
    base = c.raft_config.log_time_base_ms  # batch timestamps are a real instant + virtual ms
    for lb in iter_log(best.log.raw_between(best.log.start_offset, best.hw)):
        for r in lb.records:
            if isinstance(r.payload, MetadataRecord) and r.payload.type_name not in _SKIP:
                tl.add(r.timestamp - base, f"log @{r.offset}", _describe(r.payload))
            elif r.payload is not None and not isinstance(r.payload, MetadataRecord):
                if r.payload.type_name == "LEADER_CHANGE":
                    tl.add(r.timestamp - base, f"log @{r.offset}",
                           f"LeaderChange: controller {r.payload.message.leader_id} leads "
                           f"epoch {lb.batch.partition_leader_epoch}")
    wall_ms = (time.perf_counter() - started) * 1000

    console.print(f"[bold]kraft-testkit demo[/bold]  seed={seed}  "
                  f"(replay: kraft-testkit demo --seed {seed})")
    table = Table(title="Timeline (virtual time)", show_lines=False, header_style="bold")
    table.add_column("t (ms)", justify="right")
    table.add_column("source")
    table.add_column("event")
    for at, _, source, text in sorted(tl.events):
        style = "bold yellow" if source == "drill" else ("cyan" if source.startswith("log") else "")
        table.add_row(str(at), source, text, style=style)
    console.print(table)
    _print_final(console, c, topic)
    digest = c.trace.digest()
    if recorder is not None:
        from .timeline_plot import plot_timeline

        steps = [(at, text) for at, _, source, text in sorted(tl.events) if source == "drill"]
        plot_timeline(recorder, plot, steps=steps, title=f"kraft-testkit demo, seed {seed}")
        console.print(f"timeline picture: {plot}")
    if html is not None:
        from .timeline_html import write_timeline

        steps = [(at, text) for at, _, source, text in sorted(tl.events) if source == "drill"]
        write_timeline(c, html, steps=steps, title=f"kraft-testkit demo, seed {seed}")
        console.print(f"timeline page: {html}")
    # soft_wrap: the closing lines never wrap, also when stdout is a pipe (80 columns)
    console.print(f"{c.now_ms / 1000:.1f} virtual seconds in {wall_ms:.0f} ms of wall time "
                  f"({c.now_ms / max(wall_ms, 1e-6):.0f}x)", soft_wrap=True)
    console.print(f"trace digest {digest}", soft_wrap=True)  # all of trace.digest()
    return {"wall_ms": wall_ms, "virtual_ms": c.now_ms, "digest": digest, "cluster": c,
            "events": len(tl.events)}


def _print_final(console: Console, c: Cluster, topic: str) -> None:
    image = c.metadata
    brokers = Table(title=f"Brokers (metadata offset {image.provenance.offset})",
                    header_style="bold")
    for col in ("id", "epoch", "fenced", "state", "rack"):
        brokers.add_column(col)
    for bid in c.broker_ids:
        reg = image.cluster.broker(bid)
        st = c.broker_state(bid)
        brokers.add_row(str(bid), str(reg.epoch if reg else "-"), str(st.fenced), st.state,
                        str(getattr(reg, "rack", None) or "-"))
    console.print(brokers)
    t = image.topic(topic)
    parts = Table(title=f"Topic {topic!r} ({t.id})", header_style="bold")
    for col in ("partition", "leader", "isr", "replicas", "leader epoch", "partition epoch"):
        parts.add_column(col)
    for pid in sorted(t.partitions):
        p = t.partitions[pid]
        parts.add_row(str(pid), str(p.leader), str(list(p.isr)), str(list(p.replicas)),
                      str(p.leader_epoch), str(p.partition_epoch))
    console.print(parts)
