"""``replay_batches`` remembers decoded records by their bytes (every node replays the same
records): the image must be the one decoding every record gives, memo on, off, or warm."""

from kraft_testkit.cluster import Cluster
from kraft_testkit.metadata import MetadataImage
from kraft_testkit.metadata import delta as D


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

    D._DECODED.clear()
    cold = D.replay_batches(MetadataImage.EMPTY, batches)
    assert D._DECODED  # the memo was used
    warm = D.replay_batches(MetadataImage.EMPTY, batches)
    monkeypatch.setattr(D, "_DECODED_ENTRIES", 0)  # full at once: every record decoded anew
    D._DECODED.clear()
    plain = D.replay_batches(MetadataImage.EMPTY, batches)
    assert cold == warm == plain
    assert plain.topic("t") is not None and len(plain.cluster.brokers) == 4
    assert plain.provenance.offset == batches[-1].last_offset
