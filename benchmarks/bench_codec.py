"""Decode / re-encode throughput of the protocol codec, side by side with kio on the same bytes.

Run ``python benchmarks/bench_codec.py`` (``--quick`` for a short run, ``--repeat N`` for more
best-of repeats). Needs the golden logs (``tests/golden``, or ``../shared/kafka-golden``) and, for the kio column,
the ``kio`` package (``pip install kio``); without it the kio column shows ``-``.

What is measured (best of several repeats of the process's CPU time, ``time.process_time``:
on a machine shared with other jobs it moves far less than wall time, and every case runs in
one thread):

(a) metadata records: every metadata record value of golden logs B and C, repeated to ~100k
    records, through ``frames.decode_metadata`` (results kept in a list, as when a log is loaded,
    which makes CPython's cyclic GC walk them; and streamed, each result dropped at once) and
    ``frames.encode_record``; and the
    whole-segment path: B+C's segments back to back (~100k records) through ``log.iter_log``
    (batches + CRC + records + payloads; results kept in a list, and streamed, as a replay
    consumes them) and ``records.iter_batches`` (batch layer only). kio has
    no metadata record schemas, so only the batch layer has a kio figure (``kio.records``).
(b) RPCs: FetchResponse v17 carrying B's segment as records (2.2 KB of record batches),
    BrokerRegistrationRequest v4, VotersRecord v0 (3 voters): ours against kio's
    ``entity_reader`` (native) / ``entity_writer`` (Python).

Targets (issue): at least as fast as kio; at least 200,000 metadata records/s decoded.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
try:
    import kraft_testkit  # noqa: F401
except ImportError:  # running from a checkout without an install
    sys.path.insert(0, str(ROOT))

from kraft_testkit.protocol import frames, log, records
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid

try:
    from kio.records.readers import read_batch as kio_read_batch
    from kio.serial import entity_reader, entity_writer
except ImportError:  # pragma: no cover - kio is optional
    kio_read_batch = entity_reader = entity_writer = None

# the golden logs ship in tests/golden; a checkout beside the shared folder has them there too
GOLDEN_DIRS = (ROOT / "tests" / "golden", ROOT.parent / "shared" / "kafka-golden")
TARGET_RECORDS = 100_000


def golden_segment(folder: str) -> bytes:
    paths = [p for d in GOLDEN_DIRS
             for p in sorted(d.glob(f"**/{folder}*/__cluster_metadata-0/00000000000000000000.log"))]
    if not paths:
        sys.exit(f"golden log {folder} not found under {' or '.join(map(str, GOLDEN_DIRS))}")
    return paths[0].read_bytes()


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """Smallest CPU time of ``repeat`` runs of ``fn`` (seconds)."""
    return best_of_each([fn], repeat)[0]


def best_of_each(fns: list[Callable[[], object] | None], repeat: int) -> list[float | None]:
    """Smallest CPU time of each of ``fns``, run in turn in every repeat: on a busy machine the
    ones compared with each other see the same load, so their ratio holds up."""
    best: list[float | None] = [None] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            if fn is None:
                continue
            start = time.process_time()
            fn()
            t = time.process_time() - start
            best[i] = t if best[i] is None else min(best[i], t)
    return best


def loop(fn: Callable[[], object], n: int) -> Callable[[], None]:
    def run() -> None:
        for _ in range(n):
            fn()
    return run


# ---------------------------------------------------------------- cases


def metadata_cases(repeat: int, scale: float) -> list[tuple[str, str, float, float | None]]:
    seg_b, seg_c = golden_segment("B_"), golden_segment("C_")
    values = []
    per_copy = 0
    for seg in (seg_b, seg_c):
        for _, batch in records.iter_batches(seg):
            per_copy += len(batch.records)
            if not batch.is_control:
                values += [r.value for r in batch.records if r.value is not None]
    n = int(TARGET_RECORDS * scale)
    values = (values * (n // len(values) + 1))[:n]
    decode = frames.decode_metadata
    decoded = [decode(v) for v in values]
    encode = frames.encode_record
    assert [encode(r) for r in decoded] == values, "metadata records do not re-encode byte-exact"

    def stream() -> None:
        for v in values:
            decode(v)

    rows = []
    t = best_of(lambda: [decode(v) for v in values], repeat)
    rows.append(("metadata records: decode_metadata, kept", "records/s", len(values) / t, None))
    t = best_of(stream, repeat)
    rows.append(("metadata records: decode_metadata, streamed", "records/s", len(values) / t,
                 None))
    t = best_of(lambda: [encode(r) for r in decoded], repeat)
    rows.append(("metadata records: encode_record", "records/s", len(values) / t, None))

    copies = max(1, n // per_copy)
    segment = (seg_b + seg_c) * copies
    count = per_copy * copies
    assert sum(len(b.records) for b in log.iter_log(segment)) == count
    t = best_of(lambda: [b for b in log.iter_log(segment)], repeat)
    rows.append(("segment: log.iter_log, kept (batches + payloads)", "records/s", count / t,
                 None))

    def stream_log() -> None:
        for _ in log.iter_log(segment):
            pass

    t = best_of(stream_log, repeat)
    rows.append(("segment: log.iter_log, streamed", "records/s", count / t, None))
    kio_all = None
    if kio_read_batch is not None:
        def kio_all() -> None:
            pos, end = 0, len(segment)
            while pos < end:
                _, size = kio_read_batch(segment, pos)
                pos += size
    t_ours, t_kio = best_of_each([lambda: [b for b in records.iter_batches(segment)], kio_all],
                                 repeat)
    rows.append(("segment: iter_batches vs kio read_batch", "records/s", count / t_ours,
                 count / t_kio if t_kio else None))
    t = best_of(lambda: records.encode_batches(b for _, b in records.iter_batches(segment)),
                repeat)
    rows.append(("segment: iter_batches + encode_batches", "records/s", count / t, None))
    return rows


def rpc_samples() -> list[tuple[object, int]]:
    seg_b = golden_segment("B_")
    fr = M.FetchResponse
    fetch = fr(
        throttle_time_ms=0, error_code=0, session_id=0,
        responses=[fr.FetchableTopicResponse(topic_id=Uuid.METADATA_TOPIC_ID, partitions=[
            fr.PartitionData(partition_index=0, error_code=0, high_watermark=26,
                             last_stable_offset=26, log_start_offset=0,
                             aborted_transactions=None, records=seg_b,
                             current_leader=fr.LeaderIdAndEpoch(leader_id=1000, leader_epoch=2)),
        ])],
    )
    br = M.BrokerRegistrationRequest
    registration = br(
        broker_id=1, cluster_id="MkU3OEVBNTcwNTJENDM2Qg", incarnation_id=Uuid(bytes(range(16))),
        listeners=[br.Listener(name="PLAINTEXT", host="localhost", port=9092, security_protocol=0)],
        features=[br.Feature(name="metadata.version", min_supported_version=1,
                             max_supported_version=21),
                  br.Feature(name="kraft.version", min_supported_version=0,
                             max_supported_version=1)],
        rack=None, is_migrating_zk_broker=False, log_dirs=[Uuid(bytes(range(1, 17)))],
        previous_broker_epoch=-1,
    )
    vr = M.VotersRecord
    voters = vr(version=0, voters=[
        vr.Voter(voter_id=i, voter_directory_id=Uuid(bytes([i + 1] * 16)),
                 endpoints=[vr.Endpoint(name="CONTROLLER", host=f"controller-{i}", port=9093)],
                 k_raft_version_feature=vr.KRaftVersionFeature(min_supported_version=0,
                                                               max_supported_version=1))
        for i in range(3)])
    return [(fetch, 17), (registration, 4), (voters, 0)]


def kio_class(msg: object, version: int):
    import importlib

    from kraft_testkit.protocol.schema import snake_case
    spec = type(msg)._spec
    name = spec.name
    if spec.kind == "request":
        package, module = snake_case(name.removesuffix("Request")), "request"
    elif spec.kind == "response":
        package, module = snake_case(name.removesuffix("Response")), "response"
    else:
        package, module = snake_case(name), "data"
    return getattr(importlib.import_module(f"kio.schema.{package}.v{version}.{module}"), name)


def rpc_cases(repeat: int, scale: float) -> list[tuple[str, str, float, float | None]]:
    rows = []
    n = max(100, int(20_000 * scale))
    for msg, v in rpc_samples():
        cls = type(msg)
        data = msg.encode(v)
        assert cls.decode(data, v) == msg
        label = f"{cls.__name__} v{v} ({len(data)} B)"
        kio_decode = kio_encode = None
        if entity_reader is not None:
            k = kio_class(msg, v)
            reader, writer = entity_reader(k), entity_writer(k)
            entity, size = reader(data, 0)
            assert size == len(data)

            def kio_encode(entity=entity, writer=writer) -> bytes:
                buf = io.BytesIO()
                writer(buf, entity)
                return buf.getvalue()

            assert kio_encode() == data, f"kio re-encodes {label} differently"

            def kio_decode(reader=reader, data=data) -> object:
                return reader(data, 0)

        def ours_decode(cls=cls, data=data, v=v) -> object:
            return cls.decode(data, v)

        def ours_encode(msg=msg, v=v) -> bytes:
            return msg.encode(v)

        od, kd = best_of_each([loop(ours_decode, n), kio_decode and loop(kio_decode, n)], repeat)
        oe, ke = best_of_each([loop(ours_encode, n), kio_encode and loop(kio_encode, n)], repeat)
        rows.append((f"{label}: decode", "msgs/s", n / od, kd and n / kd))
        rows.append((f"{label}: encode", "msgs/s", n / oe, ke and n / ke))
    return rows


# ---------------------------------------------------------------- output


def render(rows: list[tuple[str, str, float, float | None]]) -> None:
    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:,.0f}"

    def ratio(a: float, b: float | None) -> str:
        return "-" if b is None else f"{a / b:.2f}"

    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(f"{'case':52s} {'unit':10s} {'ours':>12s} {'kio':>12s} {'ours/kio':>9s}")
        for case, unit, ours, theirs in rows:
            print(f"{case:52s} {unit:10s} {fmt(ours):>12s} {fmt(theirs):>12s} "
                  f"{ratio(ours, theirs):>9s}")
        return
    table = Table(title="kraft_testkit codec vs kio (best of repeats; higher is faster)")
    for col, justify in (("case", "left"), ("unit", "left"), ("ours", "right"),
                         ("kio", "right"), ("ours/kio", "right")):
        table.add_column(col, justify=justify)
    for case, unit, ours, theirs in rows:
        table.add_row(case, unit, fmt(ours), fmt(theirs), ratio(ours, theirs))
    console = Console()
    if not console.is_terminal:  # piped into a file: do not wrap at 80 columns
        console = Console(width=120)
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the work, 3 repeats")
    parser.add_argument("--repeat", type=int, default=5, help="best-of repeats (default 5)")
    args = parser.parse_args(argv)
    scale = 0.1 if args.quick else 1.0
    repeat = 3 if args.quick else args.repeat
    if entity_reader is None:
        print("kio is not installed: the kio column stays empty", file=sys.stderr)
    rows = metadata_cases(repeat, scale) + rpc_cases(repeat, scale)
    render(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
