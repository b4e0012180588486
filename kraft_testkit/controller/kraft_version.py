"""UpdateFeatures for kraft.version: the upgrade from static voters (0) to KIP-853's dynamic
voters (1), as Kafka 4.1+ does it.

kraft.version is not a FeatureLevelRecord: Kafka's ``FeatureControlManager`` hands it to the
Raft client (``upgradeKRaftVersion``), whose leader writes a KRaftVersionRecord and a
VotersRecord of the current voters (ids, directory ids, endpoints) in one control batch; from
then on the voter set lives in the log. Levels other than 0 and 1 and downgrades are refused
with INVALID_UPDATE_VERSION; the other features of the request go through
:func:`kraft_testkit.controller.features.update_features` as usual.

Difference: Kafka's leader first needs every voter to have reported (UpdateRaftVoter) that it
supports kraft.version 1; every kit replica does, so the leader upgrades at once.
"""

from __future__ import annotations

from typing import Any

from ..protocol import messages as M
from ..protocol.error_codes import ErrorCode
from . import features
from .result import ControllerResult

FEATURE = "kraft.version"


def update_features(qc: Any, ctx: Any, req: M.UpdateFeaturesRequest) -> ControllerResult:
    """UpdateFeatures with kraft.version taken out and given to the Raft leader."""
    mine = [u for u in req.feature_updates if u.feature == FEATURE]
    if not mine:
        return features.update_features(ctx, req, quorum_node_ids=sorted(qc.raft.voters))
    level = mine[-1].max_version_level
    current = qc.raft.history.kraft_version
    problem = None
    if level not in (0, 1):
        problem = f"Local controller {qc.node_id} only supports versions 0-1"
    elif level < current:
        problem = f"Invalid update version {level} for feature {FEATURE}. Can't downgrade to a " \
                  f"lower version."
    if problem is not None:
        return ControllerResult((), M.UpdateFeaturesResponse(
            error_code=ErrorCode.INVALID_UPDATE_VERSION,
            error_message=features.FAILED_PREFIX + problem, results=()))
    rest = req.replace(feature_updates=tuple(u for u in req.feature_updates
                                             if u.feature != FEATURE))
    if rest.feature_updates:
        result = features.update_features(ctx, rest, quorum_node_ids=sorted(qc.raft.voters))
    else:
        result = ControllerResult((), M.UpdateFeaturesResponse(error_code=ErrorCode.NONE,
                                                               error_message=None, results=()))
    if result.response.error_code != ErrorCode.NONE:
        return result
    if not req.validate_only and level > current:
        qc.raft.upgrade_kraft_version(level, qc.now_ms)
    ok = features.FeatureResult(feature=FEATURE, error_code=ErrorCode.NONE, error_message=None)
    response = result.response.replace(results=(*result.response.results, ok))
    return ControllerResult(result.records, response, atomic=result.atomic)
