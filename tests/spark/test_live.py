"""The live log: serve(cluster) as a batch and streaming source; committed records only, a
failover mid-stream loses and repeats nothing, serving leaves the simulation's digest alone."""

from __future__ import annotations

import json
import threading
import time
import urllib.request

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol.log import iter_log
from kraft_testkit.spark import serve, start_stream
from kraft_testkit.spark.client import Endpoint
from kraft_testkit.spark.errors import EndpointError

STREAM_BOUND_S = 600.0


def committed_offsets(c: Cluster) -> list[int]:
    """Every record offset below the best controller's high watermark, by the kit's reader."""
    best = max((c.replica(h) for h in c.controllers if c.replica(h) is not None),
               key=lambda r: r.hw)
    data = b"".join(best.log.data)
    return [r.offset for b in iter_log(data) for r in b.records if r.offset < best.hw]


def stream(spark, served, sink, checkpoint=None, **options):
    reader = spark.readStream.format("kraft-metadata").options(**served).options(**options)
    writer = reader.load().writeStream.foreachBatch(sink)
    if checkpoint is not None:
        writer = writer.option("checkpointLocation", str(checkpoint))
    return writer


def wait_for(query, predicate, timeout_s=STREAM_BOUND_S):
    """Wait on the stream's state: ``predicate`` true, or the query ended (its error raised).
    The bound only ends a run that went wrong (under a load of 20 on 2 cores one micro-batch
    has taken minutes)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if not query.isActive:
            raise query.exception() or AssertionError("the stream ended before it got there")
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the stream")
        time.sleep(0.02)


def run_to_end(query) -> None:
    """A ``Trigger.AvailableNow`` query, waited on until it stopped by itself."""
    assert query.awaitTermination(STREAM_BOUND_S), "the AvailableNow query did not stop"


def test_live_batch_read_is_the_committed_log(spark):
    c = Cluster(seed=7)
    c.create_topic("orders", partitions=3, replication_factor=3)
    with serve(c) as served:
        assert served["url"].startswith("http://127.0.0.1:")
        rows = spark.read.format("kraft-metadata").options(**served).load().orderBy("offset")
        offsets = [r.offset for r in rows.select("offset").collect()]
        assert offsets == committed_offsets(c)
        assert served.bounds()[1] == offsets[-1] + 1


def test_served_log_never_passes_the_high_watermark():
    c = Cluster(seed=11)
    served = serve(c)
    try:
        c.create_topic("a", partitions=2, replication_factor=2)
        committed = 0  # the highest high watermark any controller has reached so far
        for step in range(400):  # event by event, through a failover
            if step == 50:
                c.faults.kill(c.active_controller)
            c.sim.step()
            committed = max([committed] + [r.hw for h in c.controllers
                                           if (r := c.replica(h)) is not None])
            start, end = served.bounds()
            assert end <= committed
            data = served.read(start, end)
            offsets = [r.offset for b in iter_log(data) for r in b.records]
            assert offsets == list(range(start, end))
    finally:
        served.close()


def test_serving_does_not_change_the_digest():
    def run(with_serving: bool) -> str:
        c = Cluster(seed=5)
        served = serve(c) if with_serving else None
        c.create_topic("t", partitions=2, replication_factor=3)
        c.faults.kill(c.active_controller)
        c.run_for(5_000)
        if served is not None:
            Endpoint(served["url"], served["token"]).fetch(0, 10)  # reads change nothing
            served.close()
        return c.trace.digest()

    assert run(True) == run(False)


def test_wrong_token_and_closed_endpoint_are_clear_errors(spark):
    c = Cluster(seed=2, brokers=1)
    served = serve(c)
    request = urllib.request.Request(served["url"] + "/bounds")
    with pytest.raises(urllib.error.HTTPError) as info:  # no token: refused
        urllib.request.urlopen(request, timeout=60)  # a bound, not a wait: loaded machines
    assert info.value.code == 403
    with pytest.raises(Exception, match=r"refused the token \(wrong 'token' option"):
        spark.read.format("kraft-metadata").options(**served).option("token", "guess").load() \
            .count()
    served.close()
    with pytest.raises(EndpointError, match="no answer from .*closed or its cluster stopped"):
        Endpoint(served["url"], served["token"]).bounds()
    with pytest.raises(Exception, match="no answer from .*closed or its cluster stopped"):
        spark.read.format("kraft-metadata").options(**served).load().count()


def test_stream_needs_a_live_endpoint(spark, golden):
    with pytest.raises(Exception, match="streaming reads a live log"):
        start_stream(spark.readStream.format("kraft-metadata")
                     .load(str(golden / "C_mv18_3brokers")).writeStream.format("noop"))


def test_available_now_in_limited_batches_then_restart_resumes_exactly(spark, tmp_path):
    c = Cluster(seed=7)
    served = serve(c)
    batches: list[list[int]] = []

    def sink(df, _batch_id):
        batches.append(sorted(r.offset for r in df.select("offset").collect()))

    first_end = served.bounds()[1]
    query = start_stream(stream(spark, served, sink, tmp_path / "ck", startingOffsets="earliest",
                                maxRecordsPerTrigger=7).trigger(availableNow=True))
    run_to_end(query)
    assert [len(b) for b in batches] == [7] * (first_end // 7) + (
        [first_end % 7] if first_end % 7 else [])
    assert sum(batches, []) == list(range(first_end))
    end_offset = json.loads(query.lastProgress["sources"][0]["endOffset"])
    assert end_offset == {"__cluster_metadata": {"0": first_end}}  # Kafka-source offset JSON
    c.create_topic("later", partitions=2, replication_factor=3)
    batches.clear()
    query = start_stream(stream(spark, served, sink, tmp_path / "ck", startingOffsets="earliest",
                                maxRecordsPerTrigger=7).trigger(availableNow=True))
    run_to_end(query)
    assert sum(batches, []) == list(range(first_end, served.bounds()[1]))
    served.close()


def test_failover_mid_stream_loses_and_repeats_nothing(spark, tmp_path):
    c = Cluster(seed=9)
    served = serve(c)
    c.create_topic("before", partitions=3, replication_factor=3)
    before = served.bounds()[1]
    batches: list[list[int]] = []
    lock = threading.Lock()

    def sink(df, _batch_id):
        with lock:
            batches.append([r.offset for r in df.select("offset").collect()])

    def seen() -> list[int]:
        with lock:
            return sum(batches, [])

    # returns after the first micro-batch: [3, before), the committed log from the asked offset
    query = start_stream(stream(spark, served, sink, tmp_path / "ck", startingOffsets="3"))
    try:
        wait_for(query, lambda: before - 1 in seen())
        old = c.active_controller  # the stream is running: fail the controller over under it
        c.faults.kill(old)
        c.run_until(lambda c: c.active_controller not in (None, old), timeout_ms=10_000)
        c.create_topic("after", partitions=3, replication_factor=3)
        c.faults.start(old)  # the old leader comes back and catches up
        c.run_for(3_000)
        end = served.bounds()[1]
        wait_for(query, lambda: end - 1 in seen())
    finally:
        query.stop()
    assert batches[0] == list(range(3, before))  # the batch before the failover
    assert seen() == list(range(3, end))  # in order, each once, from the asked offset
    assert committed_offsets(c)[3:end] == seen()
    served.close()


def test_starting_offsets_latest_reads_only_new_records(spark, tmp_path):
    c = Cluster(seed=4, brokers=1)
    served = serve(c)
    seen: list[int] = []
    start = served.bounds()[1]
    # start_stream returns once the first trigger ran: the "latest" start is fixed
    query = start_stream(stream(spark, served, lambda df, _: seen.extend(
        r.offset for r in df.select("offset").collect())))
    try:
        c.create_topic("fresh", partitions=1, replication_factor=1)
        end = served.bounds()[1]
        wait_for(query, lambda: end - 1 in seen)
    finally:
        query.stop()
    assert seen and min(seen) >= start and sorted(seen) == seen
    served.close()


def test_serving_a_stopped_cluster_is_a_clear_error():
    c = Cluster(seed=3, brokers=0)
    for h in c.controllers:
        c.faults.kill(h)
    with pytest.raises(EndpointError, match="no controller of this cluster is running"):
        serve(c)
