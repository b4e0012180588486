"""Choosing a Kafka release: ``metadata_version=`` and unstable feature versions, end to end."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.errors import ConfigError
from kraft_testkit.protocol.error_codes import KafkaApiError

UNSTABLE = {"unstable.feature.versions.enable": True}


def test_the_default_is_kafka_4_2():
    c = Cluster(1, 1, seed=1)
    assert c.metadata.metadata_version == 29
    assert dict(c.metadata.features.finalized) == {
        "eligible.leader.replicas.version": 1, "group.version": 1, "share.version": 1,
        "streams.version": 1, "transaction.version": 2}


@pytest.mark.parametrize("name, level", [("4.2", 29), ("4.1", 27), ("4.0-IV1", 23),
                                         ("3.7", 19), ("3.3-IV0", 4)])
def test_releases_by_name(name, level):
    assert Cluster(1, 1, seed=2, metadata_version=name).metadata.metadata_version == level


def test_non_production_levels_need_unstable_feature_versions():
    with pytest.raises(ConfigError, match="not production-ready"):
        Cluster(1, 1, seed=3, metadata_version=30, boot=False)
    c = Cluster(1, 1, seed=3, metadata_version=30, configs=UNSTABLE)
    assert c.metadata.metadata_version == 30


def test_upgrading_to_a_non_production_level():
    c = Cluster(1, 1, seed=4)
    with pytest.raises(KafkaApiError, match="only supports versions 7-29"):
        c.update_feature("metadata.version", 30)
    c = Cluster(1, 1, seed=4, configs=UNSTABLE)
    c.update_feature("metadata.version", 30)
    assert c.metadata.metadata_version == 30


def test_unknown_features_and_levels_are_refused_at_bootstrap():
    with pytest.raises(ConfigError, match="Unsupported feature: no.such.version"):
        Cluster(1, 1, features={"no.such.version": 1}, boot=False)
    with pytest.raises(ConfigError, match="No feature:group.version with feature level 2"):
        Cluster(1, 1, features={"group.version": 2}, boot=False)


def test_a_non_finalized_feature_level_is_refused():
    """A feature at a level nobody supports is refused, as Kafka refuses it."""
    c = Cluster(1, 1, seed=5)
    with pytest.raises(KafkaApiError, match="INVALID_UPDATE_VERSION.*does not support this"):
        c.update_feature("no.such.version", 1)
    with pytest.raises(KafkaApiError, match="INVALID_UPDATE_VERSION.*only supports versions 0-2"):
        c.update_feature("transaction.version", 3)
