"""Bad input to the facade: ConfigError (a KraftError and a ValueError) naming the key and the
allowed values, raised before anything runs."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.controller.bootstrap import BootstrapError
from kraft_testkit.errors import ConfigError, KraftError


@pytest.mark.parametrize("configs,key,allowed", [
    ({"broker.session.timeout.ms": -1}, "broker.session.timeout.ms", "[1, 2147483647]"),
    ({"broker.session.timeout.ms": 0}, "broker.session.timeout.ms", "[1, 2147483647]"),
    ({"broker.session.timeout.ms": "abc"}, "broker.session.timeout.ms", "integer"),
    ({"broker.session.timeout.ms": 1.5}, "broker.session.timeout.ms", "integer"),
    ({"broker.heartbeat.interval.ms": 2 ** 31}, "broker.heartbeat.interval.ms", "2147483647"),
    ({"metadata.log.max.record.bytes.between.snapshots": 0},
     "metadata.log.max.record.bytes.between.snapshots", "[1, 2147483647]"),
    ({"controlled.shutdown.enable": "maybe"}, "controlled.shutdown.enable", "true or false"),
    ({"unclean.leader.election.enable": 2}, "unclean.leader.election.enable", "true or false"),
    ({"controller.quorum.election.timeout.ms": -1}, "controller.quorum.election.timeout.ms",
     "[1, 2147483647]"),
    ({"controller.quorum.fetch.timeout.ms": "soon"}, "controller.quorum.fetch.timeout.ms",
     "integer"),
])
def test_bad_values_name_the_key_and_the_allowed_values(configs, key, allowed):
    with pytest.raises(ConfigError) as e:
        Cluster(configs=configs, broker_self_fencing=True)
    assert key in str(e.value) and allowed in str(e.value)
    assert isinstance(e.value, KraftError) and isinstance(e.value, ValueError)


def test_unknown_key_lists_the_known_ones():
    with pytest.raises(ConfigError) as e:
        Cluster(configs={"broker.sesion.timeout.ms": 9000})
    text = str(e.value)
    assert "broker.sesion.timeout.ms" in text
    for known in ("broker.session.timeout.ms", "controller.quorum.election.timeout.ms",
                  "metadata.log.max.record.bytes.between.snapshots"):
        assert known in text


@pytest.mark.parametrize("configs,words", [
    ({"broker.heartbeat.interval.ms": 9000}, ("broker.heartbeat.interval.ms",
                                              "broker.session.timeout.ms")),
    ({"broker.heartbeat.timeout.ms": 9000}, ("broker.heartbeat.timeout.ms",
                                             "broker.session.timeout.ms", "KIP-343")),
    ({"broker.session.timeout.ms": 4000, "broker.heartbeat.interval.ms": 5000},
     ("broker.heartbeat.interval.ms", "4000")),
])
def test_inconsistent_timeouts(configs, words):
    with pytest.raises(ConfigError) as e:
        Cluster(configs=configs, broker_self_fencing=True)
    assert all(w in str(e.value) for w in words)


@pytest.mark.parametrize("kwargs,words", [
    ({"storage": "disk"}, ("storage", "memory", "tmpdir", "'disk'")),
    ({"storage": None}, ("storage", "memory", "tmpdir")),
    ({"controllers": 0}, ("controllers", ">= 1")),
    ({"controllers": "3"}, ("controllers",)),
    ({"brokers": -1}, ("brokers", ">= 0")),
    ({"racks": ["a", "b"]}, ("racks", "3 brokers")),
    ({"racks": 0}, ("racks", ">= 1")),
])
def test_bad_arguments(kwargs, words):
    with pytest.raises(ConfigError) as e:
        Cluster(**kwargs)
    assert all(w in str(e.value) for w in words), str(e.value)


def test_seed_defaults_and_overrides_are_accepted():
    c = Cluster(1, 1, seed=3, seed_defaults=True, boot=False)
    assert (c.config.broker_session_timeout_ms, c.config.broker_heartbeat_interval_ms) == (18000,
                                                                                          3000)
    c = Cluster(1, 1, seed=3, configs={"broker.session.timeout.ms": "12000"}, boot=False)
    assert c.config.broker_session_timeout_ms == 12000
    assert c.config.broker_heartbeat_timeout_ms == 24000  # follows the session timeout


@pytest.mark.parametrize("mv", ["bogus", 99, 0])
def test_bad_metadata_version_is_a_config_error(mv):
    with pytest.raises(ConfigError, match="metadata_version"):
        Cluster(metadata_version=mv, boot=False)


@pytest.mark.parametrize("kwargs, named", [
    ({"features": ["eligible.leader.replicas.version"]}, "features="),
    ({"features": {"eligible.leader.replicas.version": "1"}}, "features="),
    ({"features": {"kraft.version": True}, "kraft_version": 1}, "features="),
    ({"metadata_version": [29]}, "metadata_version="),
    ({"kraft_version": 2}, "kraft_version="),
    ({"broker_self_fencing": "yes"}, "broker_self_fencing="),
])
def test_feature_and_version_arguments_are_checked_before_anything_is_built(kwargs, named):
    with pytest.raises(ConfigError, match=f"Cluster: {named}.* is not allowed"):
        Cluster(1, 0, **kwargs)
