"""The narrow seam Kafka's controller unit tests drive: one control module over an image built
from exactly the records the Kafka test replays (no default bootstrap features), with the node
id the Kafka test gives its QuorumFeatures (0 unless it says otherwise)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping

from kraft_testkit.config import NodeConfig
from kraft_testkit.controller import cluster, features
from kraft_testkit.controller.result import ControllerContext, ControllerResult, record
from kraft_testkit.metadata import MetadataDelta, MetadataImage, VersionRange
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import MetadataRecord

MV = V.FEATURE_NAME
Key = M.UpdateFeaturesRequest.FeatureUpdateKey
UPGRADE, SAFE, UNSAFE = (features.UpgradeType.UPGRADE, features.UpgradeType.SAFE_DOWNGRADE,
                         features.UpgradeType.UNSAFE_DOWNGRADE)


def level(name: str, value: int) -> MetadataRecord:
    return record(M.FeatureLevelRecord(name=name, feature_level=value), 0)


class Seam:
    """An image, the next offset, virtual time and the controller's soft state."""

    def __init__(self, *records: MetadataRecord, node_id: int = 0, cluster_id: str = "x",
                 config: NodeConfig | None = None, now_ms: int = 0) -> None:
        self.image = MetadataImage.EMPTY
        self.next_offset = 0
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.config = config or NodeConfig()
        self.now_ms = now_ms
        self.extra: dict = {}
        self.last_records: list[MetadataRecord] = []
        self.replay(records)

    def ctx(self) -> ControllerContext:
        return ControllerContext(self.image, self.now_ms, random.Random(0), self.config,
                                 self.cluster_id, self.node_id, self.next_offset, self.extra)

    def replay(self, records: Iterable[MetadataRecord]) -> None:
        delta = MetadataDelta(self.image)
        for rec in records:
            delta.replay(rec, offset=self.next_offset)
            self.next_offset += 1
        self.image = delta.apply()

    def run(self, result: ControllerResult):
        self.last_records = list(result.records)
        self.replay(result.records)
        return result.response

    def activate(self) -> None:
        cluster.on_become_active(self.ctx())

    def update(self, updates: Mapping[str, int], types: Mapping[str, int] | None = None, *,
               supported: Mapping[str, VersionRange], validate_only: bool = False,
               quorum_node_ids=None) -> tuple[int, str | None]:
        """UpdateFeatures; Kafka's default upgrade type is UPGRADE. Returns (code, message)
        without the QuorumController's "The update failed for all features" prefix, as
        ``FeatureControlManager#updateFeatures`` answers."""
        request = M.UpdateFeaturesRequest(validate_only=validate_only, feature_updates=tuple(
            Key(feature=n, max_version_level=lv, upgrade_type=(types or {}).get(n, UPGRADE))
            for n, lv in updates.items()))
        response = features.update_features(self.ctx(), request, supported_features=supported,
                                            quorum_node_ids=quorum_node_ids)
        self.last_records = list(response.records)
        if not validate_only and response.response.error_code == 0:
            self.replay(response.records)
        message = response.response.error_message
        if message is not None and message.startswith(features.FAILED_PREFIX):
            message = message[len(features.FAILED_PREFIX):]
        return response.response.error_code, message


def quorum_features(*overrides: tuple[str, int, int]) -> dict[str, VersionRange]:
    """Kafka's test helper ``features(...)``: ``defaultSupportedFeatureMap(true)`` with the
    given ranges put over it."""
    out = {n: VersionRange(*r) for n, r in
           features.FV.supported_ranges(unstable=True).items()}
    out.update({n: VersionRange(lo, hi) for n, lo, hi in overrides})
    return out
