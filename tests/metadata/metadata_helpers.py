"""Shared bits of the metadata tests: golden log paths and small record builders."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.log import read_log
from kraft_testkit.protocol.uuid import Uuid

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "apache-kafka-pr15553-023aafc"
MV_RECORD = "metadata.version"


def golden_log(folder: str, *, prerelease: bool = False):
    """The decoded batches of a golden log, or a clean skip when tests/golden is absent."""
    path = GOLDEN / folder / "__cluster_metadata-0" / "00000000000000000000.log"
    if not path.exists():
        pytest.skip(f"golden log not available: {path}")
    return read_log(path, prerelease=prerelease)


def uid(n: int) -> Uuid:
    """A deterministic, non-reserved uuid."""
    return Uuid((1000 + n).to_bytes(16, "big"))


def mv(level: int) -> M.FeatureLevelRecord:
    return M.FeatureLevelRecord(name=MV_RECORD, feature_level=level)


def broker(broker_id: int, epoch: int, *, fenced: bool = True, log_dirs=(), rack=None):
    return M.RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=uid(500 + broker_id), broker_epoch=epoch,
        end_points=[M.RegisterBrokerRecord.BrokerEndpoint(
            name="PLAINTEXT", host="localhost", port=9092 + broker_id, security_protocol=0)],
        features=[M.RegisterBrokerRecord.BrokerFeature(
            name=MV_RECORD, min_supported_version=1, max_supported_version=19)],
        rack=rack, fenced=fenced, log_dirs=log_dirs)


def topic(name: str, n: int) -> M.TopicRecord:
    return M.TopicRecord(name=name, topic_id=uid(n))


def partition(topic_n: int, p: int, replicas, *, isr=None, leader=None, **kw):
    isr = list(replicas) if isr is None else isr
    return M.PartitionRecord(
        partition_id=p, topic_id=uid(topic_n), replicas=list(replicas), isr=isr,
        leader=(replicas[0] if leader is None else leader), leader_epoch=kw.pop("leader_epoch", 0),
        partition_epoch=kw.pop("partition_epoch", 0), **kw)


def change(topic_n: int, p: int, **kw) -> M.PartitionChangeRecord:
    return M.PartitionChangeRecord(partition_id=p, topic_id=uid(topic_n), **kw)
