"""Whole-cluster benchmarks: boot, failover, an idle hour, and a 100k-partition image.

Run ``python benchmarks/bench_cluster.py`` from the repository root (``--quick`` for a short run,
``--repeat N`` for more best-of repeats, ``--only boot,failover,hour,image`` to pick parts).
Wall time is ``time.perf_counter``, the ``cpu`` column ``time.process_time`` of the same runs
(on a shared machine it is the better estimate of what a run costs: wall time also counts the
time other processes held the core). Each figure is the best of the repeats (the median wall
time is shown for the short cases), garbage collected before every timed run, all with seed 1
(every repeat does the same work). Targets are judged on wall time. What is measured:

1. boot: ``Cluster(3, 3, seed=1)`` until every broker is RUNNING, with wire mode and invariants
   each on and off. Target: under 10 ms.
2. failover: boot, ``create_topic("t", 6, 3)``, kill the active controller, wait for a new one,
   run on to 30 virtual seconds (``now_ms == 30_000``). Target: under 20 ms.
3. idle hour: ``Cluster(3, 10)`` booted (not timed), then ``run_for(3_600_000)``; wall time and
   virtual/wall ratio (one run each: a run is long enough to smooth the noise), with wire
   mode and invariants on, both off, and both off with NoOpRecords off
   (``metadata.max.idle.interval.ms=0``, to show how much of the work they bring). Target: under
   1 s. ``--quick`` runs 1 virtual minute and scales up. One more row, without a target: the
   same cluster holding a 1,000-partition topic (5 virtual minutes, scaled to the hour).
4. big image (no simulator): 1,000 brokers registered and unfenced through
   ``controller.cluster.register_broker`` / ``process_broker_heartbeat``, then 1,000 topics of
   100 partitions (RF 3) through ``replication.create_topics`` on a ``ControllerContext``, 100
   topics per request, each result replayed into the image as the active controller does;
   snapshot written (``image.write()``), encoded (``frames.encode_record`` per record, then the
   KIP-630 checkpoint file with ``raft.snapshot.encode_snapshot``), loaded (``decode_snapshot``,
   ``decode_metadata`` per record, ``MetadataImage.from_snapshot``); memory per partition two
   ways: the retained tracemalloc size of an image loaded from the snapshot, and a
   ``sys.getsizeof`` walk (each object counted once) of the image built by the controller.
   Targets: under 10 s in all, under 1 KB per partition. ``--quick``: 100 brokers, 10k partitions.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
try:
    import kraft_testkit  # noqa: F401
except ImportError:  # running from a checkout without an install
    sys.path.insert(0, str(ROOT))

from kraft_testkit.cluster import Cluster
from kraft_testkit.config import NodeConfig
from kraft_testkit.controller import cluster as cluster_control
from kraft_testkit.controller import replication
from kraft_testkit.controller.bootstrap import BootstrapMetadata, activation_records
from kraft_testkit.controller.result import ControllerContext, ControllerResult
from kraft_testkit.metadata import MetadataDelta, MetadataImage
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import decode_metadata, encode_record
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft.snapshot import decode_snapshot, encode_snapshot

Row = tuple[str, str, str, str, str, str]  # case, wall, cpu, ratio / per unit, target, note
SEED = 1  # one seed throughout: every repeat does exactly the same work (same trace)


class Timing(NamedTuple):
    wall: float  # seconds of time.perf_counter
    cpu: float   # seconds of time.process_time: what the run cost when the machine is shared


def timed(fn: Callable[..., Any], *args: Any) -> tuple[Timing, Any]:
    """``fn(*args)`` after a garbage collection: (its timing, its result)."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args)
    return Timing(time.perf_counter() - wall, time.process_time() - cpu), out


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[Timing, float, Any]:
    """(best wall and cpu, median wall) of ``fn()`` over ``repeat`` runs, and the last result."""
    times: list[Timing] = []
    out = None
    for _ in range(repeat):
        t, out = timed(fn)
        times.append(t)
    best = Timing(min(t.wall for t in times), min(t.cpu for t in times))
    return best, statistics.median(t.wall for t in times), out


def onoff(flag: bool) -> str:
    return "on" if flag else "off"


def verdict(value: float, target: float, unit: str) -> str:
    return f"< {target:g} {unit}: {'met' if value < target else 'NOT met'}"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


# ---------------------------------------------------------------- 1. boot


def boot_rows(repeat: int) -> list[Row]:
    Cluster(3, 3, seed=0)  # warm up: imports, codec compilation
    rows = []
    for wire in (True, False):
        for invariants in (True, False):
            best, median, c = best_of(
                lambda w=wire, inv=invariants: Cluster(3, 3, seed=SEED, wire=w, invariants=inv),
                repeat)
            rows.append((f"boot 3+3, wire {onoff(wire)}, invariants {onoff(invariants)}",
                         ms(best.wall), ms(best.cpu), f"median {ms(median)}",
                         verdict(best.wall * 1e3, 10, "ms"),
                         f"{c.now_ms:,} virtual ms, {c.sim.scheduler.executed:,} events"))
    return rows


# ---------------------------------------------------------------- 2. failover


def failover(seed: int, wire: bool = True, invariants: bool = True, brokers: int = 3) -> Cluster:
    c = Cluster(3, brokers, seed=seed, wire=wire, invariants=invariants)
    c.create_topic("t", 6, 3)
    old = c.active_controller
    c.faults.kill(old)
    c.run_until(lambda c: c.active_controller not in (None, old), 10_000)
    c.run_for(30_000 - c.now_ms)
    return c


def failover_rows(repeat: int) -> list[Row]:
    rows = []
    for wire, invariants in ((True, True), (False, False)):
        best, median, c = best_of(lambda w=wire, inv=invariants: failover(SEED, w, inv),
                                  repeat)
        label = f"failover to 30 virtual s, wire {onoff(wire)}, invariants {onoff(invariants)}"
        note = f"{30_000 / (best.wall * 1e3):,.0f}x real time, {c.sim.scheduler.executed:,} events"
        rows.append((label, ms(best.wall), ms(best.cpu), f"median {ms(median)}",
                     verdict(best.wall * 1e3, 20, "ms"), note))
    return rows


# ---------------------------------------------------------------- 3. idle hour


HOUR_CASES = (  # (wire, invariants, configs)
    (True, True, {}),
    (False, False, {}),
    (False, False, {"metadata.max.idle.interval.ms": 0}),
)


def idle_run(virtual_ms: int, *, wire: bool, invariants: bool, configs: dict,
             partitions: int = 0) -> tuple[Timing, int]:
    """(timing, events) of ``virtual_ms`` of an idle, booted 3+10 cluster."""
    c = Cluster(3, 10, seed=SEED, wire=wire, invariants=invariants, configs=configs)
    if partitions:
        c.create_topic("big", partitions, 3)
        c.run_for(5_000)
    events = c.sim.scheduler.executed
    t, _ = timed(c.run_for, virtual_ms)
    return t, c.sim.scheduler.executed - events


def hour_row(label: str, virtual_ms: int, t: Timing, events: int, target: bool) -> Row:
    scale = 3_600_000 / virtual_ms
    span = "1 virtual hour" if scale == 1 else f"{virtual_ms // 60_000} virtual min x {scale:g}"
    return (f"{span}, {label}", f"{t.wall * scale:.2f} s", f"{t.cpu * scale:.2f} s",
            f"{virtual_ms / (t.wall * 1e3):,.0f}x real time",
            verdict(t.wall * scale, 1, "s") if target else "(no target)",
            f"{events * scale:,.0f} events ({t.wall / events * 1e6:.0f} us/event)")


def hour_rows(virtual_ms: int) -> list[Row]:
    rows = []
    for wire, invariants, configs in HOUR_CASES:
        t, events = idle_run(virtual_ms, wire=wire, invariants=invariants, configs=configs)
        extra = ", NoOps off" if configs else ""
        rows.append(hour_row(f"3+10, wire {onoff(wire)}, invariants {onoff(invariants)}{extra}",
                             virtual_ms, t, events, True))
    # Not a target: the same idle cluster holding partitions (replica fetching between brokers
    # and metadata applied on every commit grow with them); a twelfth of the time, scaled up.
    part_ms = max(60_000, virtual_ms // 12)
    partitions = 1_000 if virtual_ms >= 3_600_000 else 100  # --quick stays quick
    t, events = idle_run(part_ms, wire=False, invariants=False, configs={}, partitions=partitions)
    rows.append(hour_row(f"3+10 + a topic of {partitions:,} partitions (RF 3), wire off, "
                         "invariants off", part_ms, t, events, False))
    return rows


# ---------------------------------------------------------------- 4. big image


CLUSTER_ID = "ljAoerGESXi5val3QKEeFQ"


class ActiveController:
    """What the quorum controller does around a control module: hand it a context, append the
    records it returns at the next offsets and replay them into the image at once."""

    def __init__(self, mv: int = V.LATEST, seed: int = 1) -> None:
        self.image = MetadataImage.EMPTY
        self.rng = random.Random(seed)
        self.config = NodeConfig()
        self.soft: dict = {}
        self.next_offset = 1
        self.now_ms = 0
        self.records = 0
        self.append(activation_records(self.image, BootstrapMetadata.from_version(mv)))
        cluster_control.on_become_active(self.ctx())

    def ctx(self) -> ControllerContext:
        return ControllerContext(self.image, self.now_ms, self.rng, self.config, CLUSTER_ID,
                                 1000, self.next_offset, self.soft)

    def append(self, records) -> None:
        delta = MetadataDelta(self.image)
        for rec in records:
            delta.replay(rec, offset=self.next_offset)
            self.next_offset += 1
        self.records += len(records)
        self.image = delta.apply()

    def run(self, result: ControllerResult):
        self.append(result.records)
        return result.response


def _uid(n: int) -> Uuid:
    return Uuid((1 << 100 | n).to_bytes(16, "big"))


def registration(broker_id: int) -> M.BrokerRegistrationRequest:
    cls = M.BrokerRegistrationRequest
    return cls(
        broker_id=broker_id, cluster_id=CLUSTER_ID, incarnation_id=_uid(10_000 + broker_id),
        listeners=(cls.Listener(name="PLAINTEXT", host=f"broker-{broker_id}", port=9092,
                                security_protocol=0),),
        features=(cls.Feature(name=V.FEATURE_NAME, min_supported_version=1,
                              max_supported_version=V.LATEST),),
        rack=f"rack-{broker_id % 3}", is_migrating_zk_broker=False,
        log_dirs=(_uid(20_000 + broker_id),))


def build_image(brokers: int, topics: int, partitions: int, per_request: int
                ) -> ActiveController:
    ac = ActiveController()
    epochs = {}
    for b in range(brokers):
        response = ac.run(cluster_control.register_broker(ac.ctx(), registration(b)))
        assert response.error_code == 0, response
        epochs[b] = response.broker_epoch
    for b in range(brokers):  # first caught-up heartbeat: unfenced
        heartbeat = M.BrokerHeartbeatRequest(
            broker_id=b, broker_epoch=epochs[b], current_metadata_offset=ac.next_offset - 1,
            want_fence=False, want_shut_down=False)
        response = ac.run(cluster_control.process_broker_heartbeat(ac.ctx(), heartbeat))
        assert response.error_code == 0 and not response.is_fenced, response
    topic_cls = M.CreateTopicsRequest.CreatableTopic
    for start in range(0, topics, per_request):
        request = M.CreateTopicsRequest(topics=[
            topic_cls(name=f"topic-{t:05d}", num_partitions=partitions, replication_factor=3,
                      assignments=(), configs=())
            for t in range(start, min(topics, start + per_request))], timeout_ms=30_000,
            validate_only=False)
        response = ac.run(replication.create_topics(ac.ctx(), request))
        assert all(r.error_code == 0 for r in response.topics), response.topics[:3]
    return ac


def deep_size(root: object) -> int:
    """``sys.getsizeof`` of everything reachable from ``root`` through containers and slots,
    each object once (classes, functions and modules excluded)."""
    seen: set[int] = set()
    stack = [root]
    total = 0
    skip = (type, type(deep_size), type(sys))
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, skip):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (tuple, list, set, frozenset)):
            stack.extend(obj)
        elif not isinstance(obj, (str, bytes, int, float, bool)) and obj is not None:
            for cls in type(obj).__mro__:
                for name in getattr(cls, "__slots__", ()):
                    if hasattr(obj, name):
                        stack.append(getattr(obj, name))
            if hasattr(obj, "__dict__"):
                stack.append(obj.__dict__)
    return total


STEPS = (
    ("build", "image: build ({where})", "partition"),
    ("write", "image: write snapshot records (image.write)", "record"),
    ("encode", "image: encode records (encode_record)", "record"),
    ("file", "image: checkpoint file (encode_snapshot)", "record"),
    ("parse", "image: parse checkpoint (decode_snapshot)", "record"),
    ("decode", "image: decode records into a list (decode_metadata)", "record"),
    ("load", "image: load the list (MetadataImage.from_snapshot)", "record"),
)


def image_run(brokers: int, topics: int, partitions: int, per_request: int
              ) -> tuple[dict[str, Timing], ActiveController, list, bytes]:
    """One pass of part 4: (timing by step, controller, snapshot records, file bytes)."""
    t: dict[str, Timing] = {}
    t["build"], ac = timed(build_image, brokers, topics, partitions, per_request)
    image = ac.image
    assert sum(len(topic.partitions) for topic in image.topics) == topics * partitions
    end = ac.next_offset
    t["write"], records = timed(image.write)
    t["encode"], values = timed(lambda rs: [encode_record(r) for r in rs], records)
    t["file"], written = timed(encode_snapshot, end, 1, values, 0)
    data = written.data
    del values, written
    t["parse"], snap = timed(decode_snapshot, end, 1, data)
    t["decode"], decoded = timed(lambda s: [decode_metadata(v) for v in s.records()], snap)
    t["load"], loaded = timed(MetadataImage.from_snapshot, decoded)
    assert loaded.visible() == image.visible()
    del loaded, decoded
    # What QuorumController/MetadataListener.handle_load_snapshot would cost if they streamed
    # the decoded records into the delta instead of building a list first.
    t["streamed"], _ = timed(
        lambda s: MetadataImage.from_snapshot(decode_metadata(v) for v in s.records()), snap)
    return t, ac, records, data


def image_rows(brokers: int, topics: int, partitions: int, repeat: int) -> list[Row]:
    total = topics * partitions
    per_request = 100
    best: dict[str, Timing] = {}
    for i in range(repeat):
        t, ac, records, data = image_run(brokers, topics, partitions, per_request)
        for step, timing in t.items():
            old = best.get(step, timing)
            best[step] = Timing(min(old.wall, timing.wall), min(old.cpu, timing.cpu))
        if i < repeat - 1:
            del ac, records, data
    image = ac.image

    # Memory: everything an image loaded from the checkpoint keeps alive once the decoded
    # records are gone (tracemalloc over decode + load), and a walk of the image the controller
    # built (its directory Uuids are shared with the broker registrations).
    gc.collect()
    tracemalloc.start()
    loaded = MetadataImage.from_snapshot(
        [decode_metadata(v) for v in decode_snapshot(ac.next_offset, 1, data).records()])
    gc.collect()
    traced, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del loaded
    walked = deep_size(image)

    n = len(records)
    where = f"{brokers:,} brokers, {total:,} partitions"
    rows: list[Row] = []
    for step, label, unit in STEPS:
        per = total if unit == "partition" else n
        note = ""
        if step == "build":
            note = (f"{ac.records:,} records through register/heartbeat/create_topics "
                    f"({per_request} topics per request)")
        elif step == "write":
            note = f"{n:,} records"
        elif step == "file":
            note = f"{len(data) / 1e6:.1f} MB"
        b = best[step]
        rows.append((label.format(where=where), f"{b.wall:.2f} s", f"{b.cpu:.2f} s",
                     f"{b.wall / per * 1e6:.1f} us/{unit}", "", note))
    wall = sum(best[step].wall for step, _, _ in STEPS)
    cpu = sum(best[step].cpu for step, _, _ in STEPS)
    listed = best["decode"].wall + best["load"].wall
    streamed = best["streamed"]
    rows += [
        ("image: all of the above", f"{wall:.2f} s", f"{cpu:.2f} s", "",
         verdict(wall, 10, "s"), f"best of {repeat} per step"),
        ("image: decode + load streamed (a generator, no list)", f"{streamed.wall:.2f} s",
         f"{streamed.cpu:.2f} s", f"{streamed.wall / n * 1e6:.1f} us/record", "(no target)",
         f"vs {listed:.2f} s through a list: {listed / streamed.wall:.2f}x"),
        ("image: memory, loaded image (tracemalloc)", f"{traced / 1e6:.1f} MB", "",
         f"{traced / total:,.0f} B/partition", verdict(traced / total, 1024, "B"),
         "decoded records dropped"),
        ("image: memory, built image (getsizeof walk)", f"{walked / 1e6:.1f} MB", "",
         f"{walked / total:,.0f} B/partition", verdict(walked / total, 1024, "B"),
         "each object once; shares directory Uuids with the registrations"),
    ]
    return rows


# ---------------------------------------------------------------- output


def render(rows: list[Row], title: str) -> None:
    header = ("case", "wall / size", "cpu", "ratio / per unit", "target", "note")
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover
        print(" | ".join(header))
        for row in rows:
            print(" | ".join(row))
        return
    table = Table(title=title)
    for col, justify in zip(header, ("left", "right", "right", "right", "left", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*row)
    console = Console()
    if not console.is_terminal:  # piped into a file: do not wrap
        console = Console(width=200)
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="3 repeats, 1 virtual minute (scaled to the hour), "
                             "a 10k-partition image")
    parser.add_argument("--repeat", type=int, default=None, help="best of N (default 7, quick 3)")
    parser.add_argument("--only", default="boot,failover,hour,image",
                        help="comma-separated parts (default: all)")
    args = parser.parse_args(argv)
    repeat = args.repeat or (3 if args.quick else 7)
    parts = set(args.only.split(","))
    rows: list[Row] = []
    if "boot" in parts:
        rows += boot_rows(repeat)
    if "failover" in parts:
        rows += failover_rows(repeat)
    if "hour" in parts:
        rows += hour_rows(60_000 if args.quick else 3_600_000)
    if "image" in parts:
        rows += image_rows(*((100, 100, 100) if args.quick else (1_000, 1_000, 100)),
                           repeat=min(repeat, 3))
    render(rows, f"kraft_testkit cluster benchmarks (best of {repeat}"
                 f"{', quick' if args.quick else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
