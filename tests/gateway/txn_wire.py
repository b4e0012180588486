"""A transactional producer that speaks the protocol itself (raw frames, the kit's codec;
batches by kafka-python's encoder): for the APIs and versions no client library here sends."""

from __future__ import annotations

from gateway_helpers import RawClient, metadata

from kraft_testkit.protocol import messages as M

TOPIC = "tv2"


def batch(values: list[str], pid: int, epoch: int, seq: int) -> bytes:
    """A transactional batch by kafka-python's encoder (not the kit's)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True,
                                  producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                  batch_size=1 << 20)
    for i, v in enumerate(values):
        b.append(i, timestamp=1_700_000_000_000, key=None, value=v.encode(), headers=[])
    return bytes(b.build())


class Wire:
    """A transactional producer speaking the protocol itself, one connection per node."""

    def __init__(self, srv, tid: str, topic: str = TOPIC) -> None:
        self.srv, self.tid = srv, tid
        self.conns: dict[int, RawClient] = {}
        self.seq: dict[int, int] = {}
        boot = self.conn(srv.cluster.broker_ids[0])
        found = boot.request(M.FindCoordinatorRequest(key=tid, key_type=1), 3)
        assert found.error_code == 0, found
        self.coordinator = found.node_id
        self.topic = topic
        meta = metadata(boot, [topic])
        self.leaders = {p.partition_index: p.leader_id for t in meta.topics for p in t.partitions}

    def conn(self, node: int) -> RawClient:
        if node not in self.conns:
            self.conns[node] = RawClient(self.srv.address(node)[1], timeout=60)
        return self.conns[node]

    def init(self) -> None:
        got = self.conn(self.coordinator).request(M.InitProducerIdRequest(
            transactional_id=self.tid, transaction_timeout_ms=60_000), 5)
        assert got.error_code == 0, got
        self.pid, self.epoch = got.producer_id, got.producer_epoch

    def produce(self, partition: int, values: list[str], version: int = 12,
                epoch: int | None = None) -> int:
        epoch = self.epoch if epoch is None else epoch
        seq = self.seq.get(partition, 0)
        req = M.ProduceRequest(transactional_id=self.tid, acks=-1, timeout_ms=30_000,
                               topic_data=(M.ProduceRequest.TopicProduceData(
                                   name=self.topic, partition_data=(
                                       M.ProduceRequest.PartitionProduceData(
                                           index=partition,
                                           records=batch(values, self.pid, epoch, seq)),)),))
        got = self.conn(self.leaders[partition]).request(req, version)
        code = got.responses[0].partition_responses[0].error_code
        if code == 0:
            self.seq[partition] = seq + len(values)
        return code

    def end(self, commit: bool, version: int = 5, epoch: int | None = None):
        got = self.conn(self.coordinator).request(M.EndTxnRequest(
            transactional_id=self.tid, producer_id=self.pid,
            producer_epoch=self.epoch if epoch is None else epoch, committed=commit), version)
        if got.error_code == 0 and version >= 5:
            if got.producer_epoch != self.epoch:
                self.seq = {}          # a new epoch starts its sequences at 0
            self.pid, self.epoch = got.producer_id, got.producer_epoch
        return got

    def close(self) -> None:
        for c in self.conns.values():
            c.close()
