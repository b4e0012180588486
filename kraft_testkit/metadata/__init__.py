"""Immutable metadata images, short-lived deltas, and replay of KRaft metadata records.

>>> from kraft_testkit.metadata import MetadataImage, MetadataDelta
>>> delta = MetadataDelta(MetadataImage.EMPTY)
>>> for rec in records: delta.replay(rec)            # doctest: +SKIP
>>> image = delta.apply()                             # doctest: +SKIP
>>> image.write()                                     # snapshot records  # doctest: +SKIP

No I/O, no clock, no randomness here: the same records give the same image everywhere.
"""

from . import versions
from . import writer as _writer  # noqa: F401 - registers MetadataImage.write
from .delta import MetadataDelta
from .errors import (
                     MetadataError,
                     MetadataReplayError,
                     UnknownMetadataVersionError,
                     UnwritableMetadataError,
)
from .frozen import FrozenDict
from .image import (
                     AclsImage,
                     ClientQuotasImage,
                     ClusterImage,
                     ConfigResource,
                     ConfigurationsImage,
                     DelegationTokensImage,
                     FeaturesImage,
                     MetadataImage,
                     ProducerIdsImage,
                     Provenance,
                     ScramImage,
                     TopicImage,
                     TopicsImage,
                     changed_topics,
                     quota_entity,
)
from .partition import (
                     NO_LEADER,
                     NO_LEADER_CHANGE,
                     DirectoryId,
                     LeaderRecoveryState,
                     PartitionRegistration,
)
from .registrations import BrokerRegistration, ControllerRegistration, Endpoint, VersionRange
from .replay import replay_batches, replay_log
from .security import Acl, DelegationToken, ScramCredential
from .versions import MetadataVersion

__all__ = [
                     "changed_topics",
                     "NO_LEADER",
                     "NO_LEADER_CHANGE",
                     "Acl",
                     "AclsImage",
                     "BrokerRegistration",
                     "ClientQuotasImage",
                     "ClusterImage",
                     "ConfigResource",
                     "ConfigurationsImage",
                     "ControllerRegistration",
                     "DelegationToken",
                     "DelegationTokensImage",
                     "DirectoryId",
                     "Endpoint",
                     "FeaturesImage",
                     "FrozenDict",
                     "LeaderRecoveryState",
                     "MetadataDelta",
                     "MetadataError",
                     "MetadataImage",
                     "MetadataReplayError",
                     "MetadataVersion",
                     "PartitionRegistration",
                     "ProducerIdsImage",
                     "Provenance",
                     "ScramCredential",
                     "ScramImage",
                     "TopicImage",
                     "TopicsImage",
                     "UnknownMetadataVersionError",
                     "UnwritableMetadataError",
                     "VersionRange",
                     "quota_entity",
                     "replay_log",
                     "versions",
]
