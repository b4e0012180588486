"""Replay semantics, record by record, against Kafka's image rules."""

from __future__ import annotations

import copy
import pickle

import pytest
from metadata_helpers import broker, change, mv, partition, topic, uid

from kraft_testkit.errors import KraftError
from kraft_testkit.metadata import (
    NO_LEADER,
    DirectoryId,
    FrozenDict,
    MetadataDelta,
    MetadataImage,
    MetadataReplayError,
    Provenance,
    UnwritableMetadataError,
)
from kraft_testkit.metadata.security import scram_keys
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import MetadataRecord

D = M.DRAFT_METADATA


def replay(*records, image: MetadataImage = MetadataImage.EMPTY) -> MetadataImage:
    return image.replay(records)


def base() -> MetadataImage:
    return replay(mv(18), broker(0, 10), broker(1, 11), broker(2, 12), topic("t", 1),
                  partition(1, 0, [0, 1, 2]), partition(1, 1, [1, 2, 0]))


# ---------------------------------------------------------------- partitions


def test_leader_change_bumps_leader_and_partition_epochs():
    img = replay(change(1, 0, leader=1, isr=[1, 2]), image=base())
    p = img.partition("t", 0)
    assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (1, (1, 2), 1, 1)


def test_no_leader_is_a_leader_change():
    p = replay(change(1, 0, leader=NO_LEADER), image=base()).partition("t", 0)
    assert (p.leader, p.has_leader, p.leader_epoch, p.partition_epoch) == (-1, False, 1, 1)


def test_isr_change_alone_bumps_only_the_partition_epoch():
    p = replay(change(1, 0, isr=[0, 1]), image=base()).partition("t", 0)
    assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (0, (0, 1), 0, 1)


def test_forced_bump_with_same_leader_as_before_3_6():
    p = replay(change(1, 0, isr=[0, 1], leader=0), image=base()).partition("t", 0)
    assert (p.leader, p.leader_epoch, p.partition_epoch) == (0, 1, 1)


def test_empty_change_still_bumps_partition_epoch():
    p = replay(change(1, 0), change(1, 0), image=base()).partition("t", 0)
    assert (p.leader_epoch, p.partition_epoch) == (0, 2)


def test_reassignment_fields_and_recovery_state():
    img = replay(change(1, 0, replicas=[0, 1, 2, 3], adding_replicas=[3], removing_replicas=[0],
                        leader_recovery_state=1), image=base())
    p = img.partition("t", 0)
    assert p.replicas == (0, 1, 2, 3) and p.adding_replicas == (3,)
    assert p.removing_replicas == (0,) and p.leader_recovery_state == 1
    # surviving replicas keep their directory, the new one is unassigned
    assert p.directories == (DirectoryId.MIGRATING,) * 3 + (DirectoryId.UNASSIGNED,)
    p = replay(change(1, 0, replicas=[1, 2, 3], adding_replicas=[], removing_replicas=[],
                      leader_recovery_state=-1), image=img).partition("t", 0)
    assert p.directories == (DirectoryId.MIGRATING, DirectoryId.MIGRATING, DirectoryId.UNASSIGNED)
    assert p.adding_replicas == () and p.leader_recovery_state == 1


def test_explicit_directories_and_elr():
    dirs = [uid(91), uid(92), uid(93)]
    img = replay(change(1, 0, directories=dirs, eligible_leader_replicas=[2],
                        last_known_elr=[0]), image=base())
    p = img.partition("t", 0)
    assert p.directories == tuple(dirs) and p.elr == (2,) and p.last_known_elr == (0,)
    assert p.directory(1) == uid(92)
    with pytest.raises(MetadataReplayError, match="2 directories for 3 replicas"):
        replay(change(1, 0, directories=dirs[:2]), image=base())


def test_partition_record_with_directories():
    img = replay(partition(1, 5, [0, 1], directories=[uid(1), uid(2)],
                           leader_recovery_state=1), image=base())
    p = img.partition("t", 5)
    assert p.directories == (uid(1), uid(2)) and p.leader_recovery_state == 1
    with pytest.raises(MetadataReplayError, match="directories for 2 replicas"):
        replay(partition(1, 6, [0, 1], directories=[uid(1)]), image=base())


@pytest.mark.parametrize("bad,match", [
    (change(9, 0, isr=[0]), "no topic with id"),
    (change(1, 7, isr=[0]), "has no partition 7"),
    (change(1, 0, leader=-3), "not a broker id"),
    (change(1, 0, leader_recovery_state=4), "leader recovery state"),
    (partition(9, 0, [0]), "no topic with id"),
    (partition(1, 3, [0], leader_recovery_state=2), "leader recovery state"),
    (M.RemoveTopicRecord(topic_id=uid(9)), "no topic with id"),
    (topic("t", 2), "name 't' is taken"),
    (topic("u", 1), "already exists"),
])
def test_bad_topic_records_raise_and_change_nothing(bad, match):
    img = base()
    before = img.to_dict()
    delta = MetadataDelta(img)
    delta.replay(change(1, 1, leader=2))  # a pending change in the same delta
    with pytest.raises(MetadataReplayError, match=match) as info:
        delta.replay(bad, offset=77)
    assert info.value.record == bad and info.value.offset == 77
    assert isinstance(info.value, KraftError)
    assert type(bad).__name__ in str(info.value) and "offset 77" in str(info.value)
    after = delta.apply()
    assert after.partition("t", 1).leader == 2 and after.partition("t", 0) == img.partition("t", 0)
    assert after.topics.names() == ["t"]
    assert img.to_dict() == before


# ---------------------------------------------------------------- topics and configs


def test_remove_topic_drops_partitions_name_and_configs():
    img = replay(M.ConfigRecord(resource_type=2, resource_name="t", name="a", value="1"),
                 M.ConfigRecord(resource_type=4, resource_name="0", name="b", value="2"),
                 image=base())
    assert img.configs.topic("t") == {"a": "1"}
    gone = replay(M.RemoveTopicRecord(topic_id=uid(1)), image=img)
    assert gone.topic("t") is None and gone.topic(uid(1)) is None and len(gone.topics) == 0
    assert gone.configs.topic("t") == {} and gone.configs.broker(0) == {"b": "2"}
    # the name is free again, and a new topic gets no stale configs
    again = replay(topic("t", 2), partition(2, 0, [1]), image=gone)
    assert again.topic("t").id == uid(2) and again.configs.topic("t") == {}


def test_remove_and_recreate_in_one_delta():
    img = replay(M.ConfigRecord(resource_type=2, resource_name="t", name="a", value="1"),
                 image=base())
    one = replay(M.RemoveTopicRecord(topic_id=uid(1)), topic("t", 2),
                 M.ConfigRecord(resource_type=2, resource_name="t", name="b", value="2"),
                 partition(2, 0, [2]), image=img)
    assert one.topic("t").id == uid(2) and sorted(one.topic("t").partitions) == [0]
    assert one.topic(uid(1)) is None and one.configs.topic("t") == {"b": "2"}
    created_and_removed = replay(topic("x", 3), partition(3, 0, [0]),
                                 M.RemoveTopicRecord(topic_id=uid(3)), image=img)
    assert created_and_removed.topics == img.topics


def test_config_null_value_deletes_the_key_and_empty_resources_vanish():
    img = replay(M.ConfigRecord(resource_type=4, resource_name="", name="k", value="v"))
    assert img.configs.get(4, "") == {"k": "v"}
    img = replay(M.ConfigRecord(resource_type=4, resource_name="", name="k", value=None),
                 image=img)
    assert img.configs.resources == {}


# ---------------------------------------------------------------- brokers and controllers


def test_fence_unfence_and_registration_change_tri_states():
    img = replay(M.UnfenceBrokerRecord(id=0, epoch=10), image=base())
    assert not img.cluster.broker(0).fenced
    img = replay(M.FenceBrokerRecord(id=0, epoch=10), image=img)
    assert img.cluster.broker(0).fenced
    img = replay(M.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=11, fenced=-1),
                 image=img)
    assert img.cluster.unfenced_broker_ids() == (1,)
    img = replay(M.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=11,
                                                  in_controlled_shutdown=1), image=img)
    b1 = img.cluster.broker(1)
    assert not b1.fenced and b1.in_controlled_shutdown
    same = replay(M.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=11), image=img)
    assert same.cluster.broker(1) is b1
    dirs = [uid(7), Uuid_neg := uid(0).__class__(b"\xff" + b"\0" * 15)]
    img = replay(M.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=11, fenced=1,
                                                  log_dirs=dirs), image=img)
    b1 = img.cluster.broker(1)
    assert b1.fenced and b1.log_dirs == (Uuid_neg, uid(7))  # Kafka's signed order


@pytest.mark.parametrize("bad,match", [
    (M.FenceBrokerRecord(id=7, epoch=1), "not registered"),
    (M.UnfenceBrokerRecord(id=0, epoch=9), "epoch 9 is not its epoch 10"),
    (M.UnregisterBrokerRecord(broker_id=0, broker_epoch=11), "not its epoch"),
    (M.BrokerRegistrationChangeRecord(broker_id=0, broker_epoch=10, fenced=2), "Fenced"),
    (M.BrokerRegistrationChangeRecord(broker_id=0, broker_epoch=10, in_controlled_shutdown=-1),
     "InControlledShutdown"),
])
def test_bad_broker_records(bad, match):
    with pytest.raises(MetadataReplayError, match=match):
        replay(bad, image=base())


def test_reregistration_replaces_and_unregister_removes():
    img = replay(broker(0, 30, fenced=False, rack="r1"), image=base())
    b = img.cluster.broker(0)
    assert (b.epoch, b.fenced, b.rack) == (30, False, "r1")
    img = replay(M.UnregisterBrokerRecord(broker_id=0, broker_epoch=30), image=img)
    assert img.cluster.broker_ids() == (1, 2)


def test_controller_registration():
    rec = M.RegisterControllerRecord(
        controller_id=3000, incarnation_id=uid(3), zk_migration_ready=False,
        end_points=[M.RegisterControllerRecord.ControllerEndpoint(
            name="CONTROLLER", host="h", port=9093, security_protocol=0)])
    img = replay(rec, image=base())
    assert img.cluster.controller(3000).endpoints["CONTROLLER"].port == 9093


# ---------------------------------------------------------------- features, quotas, ids


def test_feature_levels():
    img = replay(mv(17), M.FeatureLevelRecord(name="group.version", feature_level=1))
    assert img.metadata_version == 17 and img.features.level("group.version") == 1
    assert img.features.level("metadata.version") == 17
    img = replay(M.FeatureLevelRecord(name="group.version", feature_level=0), image=img)
    assert img.features.finalized == {}
    # kraft.version lives in the Raft log: 4.x's FeaturesDelta#replay skips a FeatureLevelRecord
    # for it (KAFKA-18979)
    img = replay(M.FeatureLevelRecord(name="kraft.version", feature_level=1), image=img)
    assert img.features.finalized == {}
    with pytest.raises(MetadataReplayError, match="not a released level"):
        replay(mv(99))
    with pytest.raises(MetadataReplayError, match="not a released level"):
        replay(mv(0))


def test_zk_migration_state_noop_and_producer_ids():
    img = replay(M.ZkMigrationStateRecord(zk_migration_state=2), M.NoOpRecord(),
                 M.ProducerIdsRecord(broker_id=0, broker_epoch=10, next_producer_id=1000))
    assert img.features.zk_migration_state == 2 and img.producer_ids.next_producer_id == 1000
    with pytest.raises(MetadataReplayError, match="ZK migration state"):
        replay(M.ZkMigrationStateRecord(zk_migration_state=9))


def test_client_quotas_by_entity_with_remove():
    E = M.ClientQuotaRecord.EntityData
    entity = [E(entity_type="user", entity_name="alice"), E(entity_type="client-id",
                                                            entity_name=None)]
    img = replay(M.ClientQuotaRecord(entity=entity, key="producer_byte_rate", value=1024.0),
                 M.ClientQuotaRecord(entity=entity[::-1], key="consumer_byte_rate", value=2.0))
    q = img.client_quotas.get(("client-id", None), ("user", "alice"))
    assert q == {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2.0}
    img = replay(M.ClientQuotaRecord(entity=entity, key="producer_byte_rate", remove=True),
                 M.ClientQuotaRecord(entity=entity, key="consumer_byte_rate", remove=True),
                 image=img)
    assert img.client_quotas.entities == {}


# ---------------------------------------------------------------- security


def acl_record(n: int) -> M.AccessControlEntryRecord:
    return M.AccessControlEntryRecord(id=uid(n), resource_type=2, resource_name="t",
                                      pattern_type=3, principal="User:a", host="*",
                                      operation=3, permission_type=3)


def test_acls_scram_and_tokens_add_and_remove():
    scram = M.UserScramCredentialRecord(name="alice", mechanism=1, salt=b"s", stored_key=b"k",
                                        server_key=b"v", iterations=4096)
    token = M.DelegationTokenRecord(owner="User:a", requester="User:b", renewers=["User:c"],
                                    issue_timestamp=1, max_timestamp=3, expiration_timestamp=2,
                                    token_id="tok")
    img = replay(acl_record(1), acl_record(2), scram, token)
    assert set(img.acls.acls) == {uid(1), uid(2)}
    assert img.scram.get("alice", 1).iterations == 4096
    assert img.delegation_tokens.tokens["tok"].renewers == ("User:c",)
    img = replay(M.RemoveAccessControlEntryRecord(id=uid(1)),
                 M.RemoveUserScramCredentialRecord(name="alice", mechanism=1),
                 M.RemoveDelegationTokenRecord(token_id="tok"), image=img)
    assert set(img.acls.acls) == {uid(2)} and not img.scram.credentials
    assert not img.delegation_tokens.tokens
    for bad in (M.RemoveAccessControlEntryRecord(id=uid(1)),
                M.RemoveUserScramCredentialRecord(name="alice", mechanism=1),
                M.RemoveDelegationTokenRecord(token_id="tok"),
                scram.replace(mechanism=5)):
        with pytest.raises(MetadataReplayError):
            replay(bad, image=img)


# ---------------------------------------------------------------- transactions


def test_transaction_applies_together_and_abort_drops():
    begin, end = M.BeginTransactionRecord(name="t"), M.EndTransactionRecord()
    abort = M.AbortTransactionRecord(reason="no")
    delta = MetadataDelta(base())
    delta.replay(topic("u", 2), offset=10)
    delta.replay(begin, offset=11)
    delta.replay(partition(2, 0, [0]), offset=12)
    mid = delta.apply()
    assert mid.topic("u").partitions == {} and mid.in_transaction and mid.offset == 12
    delta.replay(end, offset=13)
    assert delta.apply().partition("u", 0).replicas == (0,)
    # abort: back to the state before Begin, later records apply
    delta = MetadataDelta(base())
    for rec in (begin, topic("v", 3), partition(3, 0, [1]), abort, topic("w", 4)):
        delta.replay(rec)
    img = delta.apply()
    assert img.topics.names() == ["t", "w"] and not img.in_transaction
    # an aborted transaction carried over images
    delta = MetadataDelta(base())
    delta.replay(begin)
    delta.replay(topic("v", 3))
    carried = MetadataDelta(delta.apply())
    carried.replay(abort)
    assert carried.apply().topics.names() == ["t"]


@pytest.mark.parametrize("records,match", [
    ([M.EndTransactionRecord()], "without a BeginTransaction"),
    ([M.AbortTransactionRecord()], "without a BeginTransaction"),
    ([M.BeginTransactionRecord(), M.BeginTransactionRecord()], "inside an open transaction"),
])
def test_transaction_marker_errors(records, match):
    with pytest.raises(MetadataReplayError, match=match):
        replay(*records)


def test_bad_record_inside_a_transaction_is_not_buffered():
    delta = MetadataDelta(base())
    delta.replay(M.BeginTransactionRecord())
    with pytest.raises(MetadataReplayError):
        delta.replay(change(9, 0))
    delta.replay(topic("u", 2))
    img = delta.apply()
    assert [type(m).__name__ for m in img.pending_transaction] == ["TopicRecord"]


# ---------------------------------------------------------------- inputs and provenance


def test_replay_accepts_messages_records_and_log_records():
    delta = MetadataDelta()
    delta.replay(MetadataRecord(mv(18), 0), offset=3, epoch=2)
    delta.replay(broker(0, 5))
    assert delta.apply().provenance == Provenance(3, 2)
    with pytest.raises(MetadataReplayError, match="not a metadata record"):
        delta.replay(M.VoteRequest())


# ---------------------------------------------------------------- draft dialect


def test_draft_records_map_to_the_same_image():
    released = replay(
        mv(18), M.FeatureLevelRecord(name="x", feature_level=3), broker(0, 1, fenced=True),
        M.BrokerRegistrationChangeRecord(broker_id=0, broker_epoch=1, fenced=-1),
        topic("t", 1), partition(1, 0, [0]), change(1, 0, isr=[0], leader=0))
    draft_broker = D[0](broker_id=0, incarnation_id=uid(500), broker_epoch=1,
                        end_points=[D[0].BrokerEndpoint(name="PLAINTEXT", host="localhost",
                                                        port=9092, security_protocol=0)],
                        features=[D[0].BrokerFeature(name="metadata.version",
                                                     min_supported_version=1,
                                                     max_supported_version=19)],
                        rack=None)
    assert draft_broker.fenced  # draft v0 has no Fenced: registrations start fenced
    draft = replay(
        D[12](name="metadata.version", min_feature_level=1, max_feature_level=18),
        D[12](name="x", min_feature_level=1, max_feature_level=3), draft_broker,
        D[15](broker_id=0, broker_epoch=1, fenced=-1),
        D[2](name="t", topic_id=uid(1)),
        D[3](partition_id=0, topic_id=uid(1), replicas=[0], isr=[0], removing_replicas=None,
             adding_replicas=None, leader=0, leader_epoch=0, partition_epoch=0),
        D[5](partition_id=0, topic_id=uid(1), isr=[0], leader=0))
    assert draft == released
    gone = replay(D[16](name="x"), image=draft)
    assert gone.features.finalized == {}
    with pytest.raises(MetadataReplayError, match="no released equivalent"):
        replay(D[13](broker_id=0), image=draft)


def test_draft_scram_record_states_all_mechanisms_of_a_user():
    info = D[11].CredentialInfo
    img = replay(D[11](name="bob", credential_infos=[
        info(mechanism=1, salt=b"s1", salted_password=b"p1", iterations=4096),
        info(mechanism=2, salt=b"s2", salted_password=b"p2", iterations=8192)]))
    stored, server = scram_keys(1, b"p1")
    assert img.scram.get("bob", 1) == (b"s1", stored, server, 4096)
    img = replay(D[11](name="bob", credential_infos=[
        info(mechanism=2, salt=b"s3", salted_password=b"p3", iterations=10000)]), image=img)
    assert list(img.scram.credentials) == [("bob", 2)]


def test_draft_acl_gets_a_stable_id():
    rec = D[6](resource_type=2, resource_name="t", pattern_type=3, principal="User:a",
               host="*", operation=3, permission_type=3)
    one, two = replay(rec), replay(rec, rec)
    assert one.acls == two.acls and len(one.acls.acls) == 1


# ---------------------------------------------------------------- immutability and sharing


def test_images_are_immutable_and_share_untouched_parts():
    img = base()
    with pytest.raises(TypeError):
        img.cluster.brokers[9] = None  # type: ignore[index]
    with pytest.raises(TypeError):
        img.topics.topics_by_name.pop("t")
    with pytest.raises(AttributeError):
        img.features = None  # type: ignore[misc]
    nxt = replay(change(1, 0, isr=[0]), image=img)
    assert nxt.cluster is img.cluster and nxt.configs is img.configs
    assert nxt.topic("t").partitions[1] is img.topic("t").partitions[1]
    nxt = replay(M.UnfenceBrokerRecord(id=1, epoch=11), image=img)
    assert nxt.topics is img.topics
    assert nxt.cluster.brokers[0] is img.cluster.brokers[0]


def test_images_pickle_and_copy():
    img = base()
    assert pickle.loads(pickle.dumps(img)) == img
    assert copy.deepcopy(img) == img
    assert isinstance(pickle.loads(pickle.dumps(img)).cluster.brokers, FrozenDict)


def test_to_dict_is_json_friendly_and_stable():
    import json

    img = base()
    text = json.dumps(img.to_dict())
    assert text == json.dumps(replay(*img.write(), image=MetadataImage.EMPTY)
                              .with_provenance(img.provenance).to_dict())
    assert list(img.to_dict()["cluster"]["brokers"]) == ["0", "1", "2"]


def test_write_needs_a_metadata_version():
    img = replay(broker(0, 1))
    with pytest.raises(KraftError, match="no metadata.version"):
        img.write()
    with pytest.raises(KraftError, match="no released metadata.version"):
        img.write(42)
    assert [r.type_name for r in img.write(3)] == ["REGISTER_BROKER_RECORD"]
    tokens = replay(M.DelegationTokenRecord(token_id="x", owner="o"), image=img)
    with pytest.raises(UnwritableMetadataError, match="delegation token"):
        tokens.write(13)
