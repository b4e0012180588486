"""``MetadataImage.with_provenance`` spells out ``dataclasses.replace`` (a hot path): it must
stay the same as replace, field for field, when the image grows a field."""

import dataclasses

from kraft_testkit.cluster import Cluster
from kraft_testkit.metadata.image import MetadataImage, Provenance


def test_with_provenance_is_replace_on_a_real_image() -> None:
    c = Cluster(3, 3, seed=4)
    c.create_topic("t", 3, 3)
    image = c.metadata
    assert image.topics and image.cluster.brokers
    moved = image.with_provenance((image.provenance.offset + 7, image.provenance.epoch + 1))
    expected = dataclasses.replace(
        image, provenance=Provenance(image.provenance.offset + 7, image.provenance.epoch + 1))
    assert type(moved) is MetadataImage
    for field in dataclasses.fields(MetadataImage):
        assert getattr(moved, field.name) is getattr(expected, field.name) or \
            getattr(moved, field.name) == getattr(expected, field.name), field.name
    assert moved == expected


def test_with_provenance_passes_every_field() -> None:
    # with_provenance passes the fields positionally: a new field must be added there too
    assert [f.name for f in dataclasses.fields(MetadataImage)] == [
        "provenance", "features", "cluster", "topics", "configs", "client_quotas",
        "producer_ids", "acls", "scram", "delegation_tokens", "pending_transaction"]
    pending = MetadataImage.EMPTY.with_provenance((3, 1))
    assert pending.provenance == Provenance(3, 1)
    assert pending.pending_transaction is None


def test_with_provenance_keeps_an_open_transaction() -> None:
    opened = dataclasses.replace(MetadataImage.EMPTY, pending_transaction=())
    assert opened.with_provenance((5, 2)).pending_transaction == ()
    assert opened.with_provenance((5, 2)).in_transaction
