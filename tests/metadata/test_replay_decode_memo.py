"""``replay_batches`` remembers decoded records by their bytes (every node replays the same
records): the image must be the one decoding every record gives, memo on, off, or warm."""

from kraft_testkit.cluster import Cluster
from kraft_testkit.metadata import MetadataImage
from kraft_testkit.metadata import delta as D
from kraft_testkit.metadata import replay as R


def _committed_batches(c: Cluster):
    r = c.replica(c.active_controller)
    return r.log.batches_between(r.log.start_offset, r.hw)


def test_replay_with_the_decode_memo_is_replay_without(monkeypatch) -> None:
    c = Cluster(3, 4, seed=9)
    c.create_topic("t", 5, 3)
    c.faults.kill(c.brokers[1])
    c.run_for(15_000)  # fenced, leaders moved
    c.faults.start(c.brokers[1])
    c.run_for(5_000)
    batches = _committed_batches(c)
    assert len(batches) > 20

    R._DECODED.clear()
    cold = R.replay_batches(MetadataImage.EMPTY, batches)
    assert R._DECODED  # the memo was used
    warm = R.replay_batches(MetadataImage.EMPTY, batches)
    monkeypatch.setattr(R, "_DECODED_ENTRIES", 0)  # full at once: every record decoded anew
    R._DECODED.clear()
    plain = R.replay_batches(MetadataImage.EMPTY, batches)
    assert cold == warm == plain
    assert plain.topic("t") is not None and len(plain.cluster.brokers) == 4
    assert plain.provenance.offset == batches[-1].last_offset


def test_a_record_object_makes_one_registration_equal_to_from_record(monkeypatch) -> None:
    """Registrations are made once per (shared, decoded) record object; what the memo gives
    is what ``from_record`` makes, and the same content in another object, or other content,
    is never answered from another record's entry."""
    from kraft_testkit.metadata import BrokerRegistration

    from metadata_helpers import broker

    D._REGISTRATIONS.clear()
    a, same_as_a, b = broker(1, 10), broker(1, 10), broker(1, 11)
    first = D._registration(BrokerRegistration, a)
    assert D._registration(BrokerRegistration, a) is first  # every node: one object
    assert first == BrokerRegistration.from_record(a)
    assert D._registration(BrokerRegistration, same_as_a) == first
    assert D._registration(BrokerRegistration, b) == BrokerRegistration.from_record(b) != first
    assert all(rec is D._REGISTRATIONS[id(rec)][0] for rec in (a, same_as_a, b))  # held: ids stay

    # a whole run's replay: memo warm, cold, or full at once gives the same image
    c = Cluster(3, 4, seed=9)
    c.faults.kill(c.brokers[1])
    c.faults.start(c.brokers[1])
    c.run_for(2_000)  # registered again: a new epoch
    batches = _committed_batches(c)
    warm = R.replay_batches(MetadataImage.EMPTY, batches)
    monkeypatch.setattr(R, "_DECODED_ENTRIES", 0)  # both memos start again at every record
    monkeypatch.setattr(D, "_REGISTRATION_ENTRIES", 0)
    R._DECODED.clear()
    D._REGISTRATIONS.clear()
    plain = R.replay_batches(MetadataImage.EMPTY, batches)
    assert warm == plain and len(plain.cluster.brokers) == 4
