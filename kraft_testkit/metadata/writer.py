"""Snapshot writing: an image to the minimal records that rebuild it.

Follows Kafka's ``MetadataImage.write``: features first (metadata.version leading, since it
decides how later records read), then cluster, topics, configs, client quotas, producer ids,
ACLs, SCRAM and delegation tokens. Kafka iterates hash maps; we sort, so a snapshot's bytes
depend on the state only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..protocol import messages as M
from ..protocol.frames import MetadataRecord
from . import versions as V
from .errors import MetadataError, UnwritableMetadataError

if TYPE_CHECKING:
    from .image import MetadataImage

LossHandler = Callable[[str], None]


def _raise_on_loss(mv: int) -> LossHandler:
    def handle(loss: str) -> None:
        raise UnwritableMetadataError(mv, loss)
    return handle


def write_image(image: MetadataImage, metadata_version: int | None = None, *,
                on_loss: LossHandler | None = None) -> list[MetadataRecord]:
    """The records of a snapshot of ``image`` at ``metadata_version`` (see
    :meth:`MetadataImage.write`)."""
    mv = image.features.metadata_version if metadata_version is None else metadata_version
    if mv is None:
        raise MetadataError("the image has no metadata.version: pass the one to write at")
    mv = V.get(mv).level
    loss = on_loss if on_loss is not None else _raise_on_loss(mv)
    out: list[MetadataRecord] = []
    _write_features(image, mv, loss, out)
    _write_cluster(image, mv, loss, out)
    _write_topics(image, mv, loss, out)
    _write_configs(image, out)
    _write_client_quotas(image, out)
    _write_producer_ids(image, out)
    _write_acls(image, out)
    _write_scram(image, mv, loss, out)
    _write_delegation_tokens(image, mv, loss, out)
    return out


def _write_features(image: MetadataImage, mv: int, loss: LossHandler,
                    out: list[MetadataRecord]) -> None:
    features = image.features
    if not V.is_feature_level_record_supported(mv):
        if features.finalized:
            loss("feature flag(s): " + ", ".join(sorted(features.finalized)))
    else:
        # The snapshot states the level it is written at (v0: any reader can read it).
        out.append(MetadataRecord(M.FeatureLevelRecord(name=V.FEATURE_NAME, feature_level=mv), 0))
        for name, level in sorted(features.finalized.items()):
            out.append(MetadataRecord(M.FeatureLevelRecord(name=name, feature_level=level), 0))
    # Kafka 4.x's FeaturesImage#write writes feature levels only: a cluster bootstrapped by
    # 4.x (state NONE) gets no ZkMigrationStateRecord. A state a 3.x log left is kept.
    if features.zk_migration_state != 0:
        if V.is_migration_supported(mv):
            out.append(MetadataRecord(
                M.ZkMigrationStateRecord(zk_migration_state=features.zk_migration_state), 0))
        else:
            loss(f"the ZK migration state, which was {features.zk_migration_state}")


def _write_cluster(image: MetadataImage, mv: int, loss: LossHandler,
                   out: list[MetadataRecord]) -> None:
    cluster = image.cluster
    for broker_id in sorted(cluster.brokers):
        out.append(cluster.brokers[broker_id].to_record(mv, loss))
    if cluster.controllers:
        if not V.is_controller_registration_supported(mv):
            loss("controller registration data")
        else:
            for controller_id in sorted(cluster.controllers):
                out.append(cluster.controllers[controller_id].to_record(mv, loss))


def _write_topics(image: MetadataImage, mv: int, loss: LossHandler,
                  out: list[MetadataRecord]) -> None:
    for topic in image.topics:
        out.append(MetadataRecord(M.TopicRecord(name=topic.name, topic_id=topic.id), 0))
        for pid in sorted(topic.partitions):
            out.append(topic.partitions[pid].to_record(topic.id, pid, mv, loss))


def _write_configs(image: MetadataImage, out: list[MetadataRecord]) -> None:
    for resource in sorted(image.configs.resources):
        for key, value in sorted(image.configs.resources[resource].items()):
            out.append(MetadataRecord(M.ConfigRecord(
                resource_type=resource.type, resource_name=resource.name, name=key,
                value=value), 0))


def _write_client_quotas(image: MetadataImage, out: list[MetadataRecord]) -> None:
    cls = M.ClientQuotaRecord
    for entity in sorted(image.client_quotas.entities,
                         key=lambda e: [(t, n is not None, n or "") for t, n in e]):
        data = tuple(cls.EntityData(entity_type=t, entity_name=n) for t, n in entity)
        for key, value in sorted(image.client_quotas.entities[entity].items()):
            out.append(MetadataRecord(cls(entity=data, key=key, value=value, remove=False), 0))


def _write_producer_ids(image: MetadataImage, out: list[MetadataRecord]) -> None:
    next_id = image.producer_ids.next_producer_id
    if next_id >= 0:
        out.append(MetadataRecord(
            M.ProducerIdsRecord(broker_id=-1, broker_epoch=-1, next_producer_id=next_id), 0))


def _write_acls(image: MetadataImage, out: list[MetadataRecord]) -> None:
    for acl_id in sorted(image.acls.acls):
        out.append(image.acls.acls[acl_id].to_record(acl_id))


def _write_scram(image: MetadataImage, mv: int, loss: LossHandler,
                 out: list[MetadataRecord]) -> None:
    creds = image.scram.credentials
    if not creds:
        return
    if not V.is_scram_supported(mv):
        loss("SCRAM credentials of user(s) " + ", ".join(sorted({u for u, _ in creds})))
        return
    for user, mechanism in sorted(creds, key=lambda k: (k[1], k[0])):
        out.append(creds[(user, mechanism)].to_record(user, mechanism))


def _write_delegation_tokens(image: MetadataImage, mv: int, loss: LossHandler,
                             out: list[MetadataRecord]) -> None:
    tokens = image.delegation_tokens.tokens
    if not tokens:
        return
    if not V.is_delegation_token_supported(mv):
        loss("delegation token(s) " + ", ".join(sorted(tokens)))
        return
    for token_id in sorted(tokens):
        out.append(tokens[token_id].to_record())


def _register() -> None:
    from . import image

    image._HOOKS["write"] = write_image


_register()
