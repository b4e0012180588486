"""Replaying the real metadata logs Kafka wrote (``tests/golden``)."""

from __future__ import annotations

import pytest
from metadata_helpers import golden_log

from kraft_testkit.metadata import (
    DirectoryId,
    MetadataDelta,
    MetadataImage,
    Provenance,
    UnwritableMetadataError,
    replay_log,
)
from kraft_testkit.protocol.frames import decode_metadata, encode_record
from kraft_testkit.protocol.uuid import Uuid

B = "B_mv18_3brokers_restart"
C = "C_mv18_3brokers"
A = "A_mv16_3brokers"

# (broker id, epoch, first log dir) as registered in B and C
MV18_BROKERS = {0: (8, "850bXYO4TaCvXty2WNo63w"), 1: (14, "5eICfu-ZSxqR41MQYQ5Mhw"),
                2: (21, "hmVkgd6wQOGANqVGvXUZVA")}


def _image(folder: str) -> MetadataImage:
    return replay_log(golden_log(folder, prerelease=folder == A))


@pytest.mark.parametrize("folder,offset,epoch", [(B, 25, 2), (C, 23, 1)])
def test_mv18_logs_register_three_unfenced_brokers_and_one_controller(folder, offset, epoch):
    image = _image(folder)
    assert image.provenance == Provenance(offset, epoch)
    assert image.metadata_version == 18
    assert image.features.finalized == {} and image.features.zk_migration_state == 0
    assert image.cluster.broker_ids() == (0, 1, 2)
    assert image.cluster.unfenced_broker_ids() == (0, 1, 2)
    for broker_id, (broker_epoch, first_dir) in MV18_BROKERS.items():
        b = image.cluster.broker(broker_id)
        assert b.epoch == broker_epoch and not b.fenced and not b.in_controlled_shutdown
        assert b.rack is None and len(b.log_dirs) == 2 and str(b.log_dirs[0]) == first_dir
        assert b.endpoints["PLAINTEXT"].host == "localhost"
        assert b.supported_features["metadata.version"] == (1, 18)
    (controller,) = image.cluster.controllers.values()
    assert controller.id == 1000 and controller.endpoints["CONTROLLER"].port == 39081
    assert len(image.topics) == 0 and image.pending_transaction is None


def test_broker_is_fenced_between_registration_and_unfence():
    batches = golden_log(C)
    # batches: 0 | 1-4 | 5 | 6 | 7 | 8 RegisterBroker(0) | 9 unfence(0)
    mid = replay_log(batches[:6])
    assert mid.offset == 8 and mid.cluster.fenced_broker_ids() == (0,)
    after = replay_log(batches[6:7], mid)
    assert after.cluster.unfenced_broker_ids() == (0,)
    assert mid.cluster.broker(0).fenced  # the earlier image is untouched


def test_bootstrap_transaction_applies_as_one_step():
    batches = golden_log(C)
    # batch 1 = Begin, metadata.version, ZkMigrationState, End
    bootstrap = batches[1]
    delta = MetadataDelta(MetadataImage.EMPTY)
    for rec in bootstrap.records[:3]:
        delta.replay(rec)
    open_txn = delta.apply()
    assert open_txn.metadata_version is None and open_txn.in_transaction
    assert [type(m).__name__ for m in open_txn.pending_transaction] == [
        "FeatureLevelRecord", "ZkMigrationStateRecord"]
    delta = MetadataDelta(open_txn)
    delta.replay(bootstrap.records[3])
    assert delta.apply().metadata_version == 18


def test_prerelease_mv16_log_topics_partitions_and_configs():
    image = _image(A)
    assert image.provenance == Provenance(93, 1) and image.metadata_version == 16
    assert image.cluster.unfenced_broker_ids() == (0, 1, 2)
    assert {b: image.cluster.broker(b).epoch for b in (0, 1, 2)} == {0: 6, 1: 10, 2: 17}
    assert list(image.cluster.controllers) == [1000]
    offsets = image.topics.by_name("__consumer_offsets")
    assert str(offsets.id) == "JiPG0GbKRRqpJrShexbMfw" and sorted(offsets.partitions) == [0, 1, 2,
                                                                                          3, 4]
    # (replicas, leader, leader epoch, partition epoch): leaders went -1 and back twice
    expect = {0: ((1,), 1, 2, 2), 1: ((2,), 2, 4, 4), 2: ((0,), 0, 4, 4), 3: ((0,), 0, 4, 4),
              4: ((2,), 2, 4, 4)}
    for p, (replicas, leader, le, pe) in expect.items():
        reg = image.partition("__consumer_offsets", p)
        assert (reg.replicas, reg.isr, reg.leader, reg.leader_epoch, reg.partition_epoch) == (
            replicas, replicas, leader, le, pe)
        assert reg.directories == (DirectoryId.MIGRATING,)
    # ISR shrinks without leader change bump only the partition epoch (MV 16 >= 3.6-IV0)
    t = image.partition("topic", 0)
    assert (t.replicas, t.isr, t.leader, t.leader_epoch, t.partition_epoch) == (
        (0, 1, 2), (1,), 1, 3, 6)
    assert image.configs.topic("__consumer_offsets") == {
        "compression.type": "producer", "cleanup.policy": "compact", "segment.bytes": "104857600"}
    assert image.partitions_led_by(0) == [("__consumer_offsets", 2), ("__consumer_offsets", 3)]
    assert image.partitions_led_by(1) == [("__consumer_offsets", 0), ("topic", 0)]
    assert image.partition(offsets.id, 4).leader == 2


@pytest.mark.parametrize("folder", [A, B, C])
def test_one_delta_per_batch_equals_one_delta_for_everything(folder):
    batches = golden_log(folder, prerelease=folder == A)
    delta = MetadataDelta()
    for batch in batches:
        delta.replay_batch(batch)
    assert delta.apply() == replay_log(batches)


@pytest.mark.parametrize("folder", [A, B, C])
def test_snapshot_round_trip(folder):
    image = _image(folder)
    records = image.write()
    assert records[0].message.name == "metadata.version"
    again = MetadataImage.from_snapshot(records, image.provenance)
    assert again == image
    # through bytes too
    decoded = [decode_metadata(encode_record(r)) for r in records]
    assert decoded == records
    assert MetadataImage.from_snapshot(decoded, image.provenance) == image


def test_snapshot_register_broker_records_match_what_kafka_wrote():
    batches = golden_log(B)
    image = replay_log(batches)
    written = {r.message.broker_id: r for r in image.write()
               if r.type_name == "REGISTER_BROKER_RECORD"}
    originals = [rec.payload for b in batches for rec in b.records
                 if rec.payload is not None and rec.payload.type_name == "REGISTER_BROKER_RECORD"]
    assert len(originals) == 3
    for original in originals:
        mine = written[original.message.broker_id]
        assert mine.version == original.version == 3
        # registered fenced, unfenced since: the only difference
        assert mine.message == original.message.replace(fenced=False)
        assert encode_record(mine.__class__(original.message, 3)) == encode_record(original)


def test_writing_at_an_older_version_reports_what_would_be_lost():
    image = _image(B)
    with pytest.raises(UnwritableMetadataError, match="log directories"):
        image.write(16)
    losses: list[str] = []
    records = image.write(16, on_loss=losses.append)
    assert any("log directories" in loss for loss in losses)
    assert {r.version for r in records if r.type_name == "REGISTER_BROKER_RECORD"} == {2}
    with pytest.raises(UnwritableMetadataError, match="controller registration"):
        image.write(14, on_loss=_raise_on("controller"))


def _raise_on(word: str):
    def handle(loss: str) -> None:
        if word in loss:
            raise UnwritableMetadataError(0, loss)
    return handle


def test_prerelease_image_written_at_mv18_keeps_migrating_directories():
    image = _image(A)
    records = image.write(18)
    parts = [r for r in records if r.type_name == "PARTITION_RECORD"]
    assert {r.version for r in parts} == {1}
    assert all(set(r.message.directories) == {Uuid.ZERO} for r in parts)
    again = MetadataImage.from_snapshot(records, image.provenance)
    assert again.topics == image.topics and again.metadata_version == 18
