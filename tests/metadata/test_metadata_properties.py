"""Properties of replay over generated valid record sequences."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from metadata_strategies import record_sequences, uuid_of

from kraft_testkit.metadata import MetadataDelta, MetadataImage, MetadataReplayError
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import decode_metadata, encode_metadata

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def replay(records, image: MetadataImage = MetadataImage.EMPTY, start: int = 0) -> MetadataImage:
    delta = MetadataDelta(image)
    for i, rec in enumerate(records, start):
        delta.replay(rec, offset=i, epoch=1)
    return delta.apply()


@SETTINGS
@given(records=record_sequences(), data=st.data())
def test_prefix_then_rest_equals_all(records, data):
    whole = replay(records)
    k = data.draw(st.integers(0, len(records)), label="split")
    prefix = replay(records[:k])
    assert replay(records[k:], prefix, start=k) == whole
    # and any batching: one delta per chunk
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(records) - 1)), max_size=6),
                            label="cuts"))
    image, start = MetadataImage.EMPTY, 0
    for end in [*cuts, len(records)]:
        if end > start:
            image = replay(records[start:end], image, start)
            start = end
    assert image == whole


@SETTINGS
@given(records=record_sequences())
def test_write_then_replay_gives_the_same_state(records):
    image = replay(records)
    snapshot = image.write()
    again = MetadataImage.from_snapshot(snapshot)
    assert again == image.visible()
    # and the snapshot is stable: writing the reloaded image gives the same records
    assert again.write() == snapshot
    for rec in snapshot:
        assert decode_metadata(encode_metadata(rec.message, rec.version)) == rec


def _bad_records(image: MetadataImage, view: MetadataImage) -> list:
    """Records that cannot apply after ``image``. ``view`` is the state a delta sees there: with
    an open transaction, its records count (a topic it removed frees its name and id)."""
    bad: list = [M.RemoveTopicRecord(topic_id=uuid_of(99_999)),
                 M.PartitionChangeRecord(partition_id=0, topic_id=uuid_of(99_999), leader=1),
                 M.FenceBrokerRecord(id=77, epoch=1),
                 M.RemoveAccessControlEntryRecord(id=uuid_of(99_998)),
                 M.RemoveUserScramCredentialRecord(name="nobody", mechanism=1),
                 M.RemoveDelegationTokenRecord(token_id="none"),
                 M.FeatureLevelRecord(name="metadata.version", feature_level=99),
                 M.BrokerRegistrationChangeRecord(broker_id=77, broker_epoch=0, fenced=1)]
    bad.append(M.BeginTransactionRecord() if image.in_transaction else M.EndTransactionRecord())
    for t in view.topics:
        bad.append(M.TopicRecord(name=t.name, topic_id=uuid_of(99_997)))
        bad.append(M.TopicRecord(name="fresh-name", topic_id=t.id))
        bad.append(M.PartitionChangeRecord(partition_id=99, topic_id=t.id, leader=1))
    for b in view.cluster.brokers.values():
        bad.append(M.UnfenceBrokerRecord(id=b.id, epoch=b.epoch + 1))
        bad.append(M.BrokerRegistrationChangeRecord(broker_id=b.id, broker_epoch=b.epoch,
                                                    fenced=3))
    return bad


@SETTINGS
@given(records=record_sequences(), data=st.data())
def test_bad_records_raise_and_leave_images_and_deltas_untouched(records, data):
    k = data.draw(st.integers(0, len(records)), label="split")
    before = replay(records[:k])
    snapshot_of_before = before.to_dict()
    whole = replay(records)
    delta = MetadataDelta(before)
    for i, rec in enumerate(records[k:], k):
        delta.replay(rec, offset=i, epoch=1)
    view = replay([*records, M.EndTransactionRecord()]) if whole.in_transaction else whole
    bad = data.draw(st.sampled_from(_bad_records(whole, view)), label="bad")
    try:
        delta.replay(bad, offset=len(records), epoch=1)
    except MetadataReplayError as e:
        assert e.record is bad and e.offset == len(records)
    else:
        raise AssertionError(f"{bad!r} applied")
    assert delta.apply() == whole
    assert before.to_dict() == snapshot_of_before
    # the delta goes on working (the failed record did not move the provenance either)
    delta.replay(M.NoOpRecord(), offset=len(records), epoch=1)
    assert delta.apply() == replay([*records, M.NoOpRecord()])
