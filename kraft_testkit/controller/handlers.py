"""Which control module answers which controller RPC.

Each entry takes the controller, a context built on the controller's latest image and the
request, and returns a :class:`~.result.ControllerResult`. Reads (Describe*, List*) answer from
the *committed* image, as Kafka's controller does: they must not show uncommitted state.
"""

from __future__ import annotations

from ..metadata import NO_LEADER, changed_topics
from ..protocol import messages as M
from . import (acls, bootstrap, cluster, configs, log_dirs, noop, producer_ids,
               quotas, replication, scram, tokens)
from .quorum_controller import QuorumController, handles
from .result import ControllerContext, ControllerResult


#: commands that take (ctx, request) as they are
COMMANDS = {
    M.CreateTopicsRequest: replication.create_topics,
    M.DeleteTopicsRequest: replication.delete_topics,
    M.CreatePartitionsRequest: replication.create_partitions,
    M.ElectLeadersRequest: replication.elect_leaders,
    M.AlterPartitionReassignmentsRequest: replication.alter_partition_reassignments,
    M.IncrementalAlterConfigsRequest: configs.incremental_alter_configs,
    M.AlterClientQuotasRequest: quotas.alter_client_quotas,
    M.CreateAclsRequest: acls.create_acls,
    M.DeleteAclsRequest: acls.delete_acls,
    M.AlterUserScramCredentialsRequest: scram.alter_user_scram_credentials,
    M.AllocateProducerIdsRequest: producer_ids.allocate_producer_ids,
    M.BrokerHeartbeatRequest: cluster.process_broker_heartbeat,
    M.UnregisterBrokerRequest: cluster.unregister_broker,
    M.ControllerRegistrationRequest: cluster.register_controller,
    M.AssignReplicasToDirsRequest: log_dirs.assign_replicas_to_dirs,
}

#: reads that answer from the committed image with (image, request)
READS = {
    M.ListPartitionReassignmentsRequest: replication.list_partition_reassignments,
    M.DescribeClientQuotasRequest: quotas.describe_client_quotas,
    M.DescribeAclsRequest: acls.describe_acls,
}

for _type, _command in COMMANDS.items():
    handles(_type)(lambda qc, ctx, req, command=_command: command(ctx, req))
for _type, _read in READS.items():
    handles(_type)(lambda qc, ctx, req, read=_read: ControllerResult((), read(qc.committed, req)))


@handles(M.BrokerRegistrationRequest)
def _register_broker(qc: QuorumController, ctx: ControllerContext, req) -> ControllerResult:
    """QuorumController#registerBroker: the Raft log's kraft.version joins the finalized
    features the registration is checked against."""
    return cluster.register_broker(ctx, req, kraft_version=qc.raft.history.kraft_version)


@handles(M.AlterPartitionRequest)
def _alter_partition(qc: QuorumController, ctx: ControllerContext, req) -> ControllerResult:
    # the wire codec speaks each API's newest version; so does this answer
    return replication.alter_partition(ctx, req, version=M.AlterPartitionRequest._spec.versions.hi)


@handles(M.DescribeConfigsRequest)
def _describe_configs(qc: QuorumController, ctx: ControllerContext, req) -> ControllerResult:
    return ControllerResult((), configs.describe_configs(
        qc.committed, req, node_id=qc.node_id, config=qc.config,
        version=M.DescribeConfigsRequest._spec.versions.hi))


@handles(M.CreateDelegationTokenRequest)
def _create_token(qc: QuorumController, ctx: ControllerContext, req) -> ControllerResult:
    return tokens.create_delegation_token(ctx, req,
                                          version=M.CreateDelegationTokenRequest._spec.versions.hi)


@handles(M.UpdateFeaturesRequest)
def _update_features(qc: QuorumController, ctx: ControllerContext, req) -> ControllerResult:
    from .kraft_version import update_features  # kraft.version goes to Raft (KIP-853)

    return update_features(qc, ctx, req)


# ------------------------------------------------------------- periodic tasks and hooks


def lease_task(qc: QuorumController, now_ms: int) -> int | None:
    """Kafka's ``maybeFenceStaleBroker`` periodic task: every session/8 from activation, at
    most ONE expired session per run (``maybeFenceOneStaleBroker``), 10 ms later again when a
    run found one. A run that would find nothing changes nothing, so the controller wakes only
    for the first run that finds something as things stand (``next_lease_expiry_ms``); any
    event at a run's instant runs it too (the same check, in the same order)."""
    manager = cluster.heartbeat_manager_in(qc.soft)
    if manager.check_due(now_ms):
        at = manager.next_expiry_ms()
        if at is not None and at <= now_ms:
            result = cluster.maybe_fence_one_stale_broker(qc.context(now_ms))
            if result.response:
                qc.submit(result, None, 0, now_ms)
    return manager.next_expiry_ms()


def noop_task(qc: QuorumController, now_ms: int) -> int | None:
    """A NoOpRecord every metadata.max.idle.interval.ms after the previous one (Kafka's rule)."""
    last = qc.soft.setdefault("noop.last_ms", now_ms)
    interval = noop.noop_interval_ms(qc.config, qc.image)
    if interval is None or now_ms < last + interval:
        # what the two calls below answer when nothing is due, without building contexts
        # (this runs after every event of the active controller)
        return None if interval is None else last + interval
    ctx = qc.context(now_ms)
    result = noop.maybe_noop(ctx, last)
    if result is not None:
        qc.submit(result, None, 0, now_ms)
        qc.soft["noop.last_ms"] = now_ms
        last = now_ms
    return noop.next_noop_ms(qc.context(now_ms), last)


def token_task(qc: QuorumController, now_ms: int) -> int | None:
    """Remove expired delegation tokens, every expiry check interval."""
    due = qc.soft.get("tokens.next_check_ms")
    if due is not None and now_ms < due:
        return due  # not due: the settings are not needed (this runs after every event)
    settings = tokens.settings_of(qc.context(now_ms))
    due = qc.soft.setdefault("tokens.next_check_ms", now_ms + settings.expiry_check_interval_ms)
    if now_ms >= due:
        result = tokens.expire_delegation_tokens(qc.context(now_ms))
        if result.records:
            qc.submit(result, None, 0, now_ms)
        due = qc.soft["tokens.next_check_ms"] = now_ms + settings.expiry_check_interval_ms
    return due


def balance_task(qc: QuorumController, now_ms: int) -> int | None:
    """Kafka's auto leader rebalance: every leader.imbalance.check.interval.seconds, move
    leadership back to preferred replicas (a PREFERRED election where it is possible)."""
    if not qc.config.auto_leader_rebalance_enable:
        return None
    interval = qc.config.leader_imbalance_check_interval_seconds * 1000
    due = qc.soft.setdefault("balance.next_ms", now_ms + interval)
    if now_ms < due:
        return due
    records, more = replication.balance_partition_leaders(qc.context(now_ms))
    if records:
        qc.submit(ControllerResult(tuple(records), None, atomic=False), None, 0, now_ms)
    due = qc.soft["balance.next_ms"] = now_ms + (1 if more else interval)
    return due


UNCLEAN_RETRY_MS = 10


def _leaderless(qc: QuorumController) -> bool:
    """Whether some partition has no leader, kept as the ids of the topics that have one and
    updated by the topics each new image's deltas touched (Kafka keeps the leaderless
    partitions indexed too): a topic creation costs its own partitions, not every one."""
    topics = qc.image.topics
    before = qc.soft.get("unclean.topics")
    touched = None if before is None else changed_topics(before[0], topics)
    if touched is None:
        ids = {t.id for t in topics if any(p.leader == NO_LEADER
                                           for p in t.partitions.values())}
    else:
        ids = set(before[1]) - touched
        by_id = topics.topics_by_id
        ids.update(t for t in touched if t in by_id and any(
            p.leader == NO_LEADER for p in by_id[t].partitions.values()))
    qc.soft["unclean.topics"] = (topics, frozenset(ids))
    return bool(ids)


def unclean_task(qc: QuorumController, now_ms: int) -> int | None:
    """Kafka 4.x's MAYBE_ELECT_UNCLEAN_LEADERS: while some partition is leaderless, every
    unclean.leader.election.interval.ms elect leaders where the topic allows an unclean
    election (10 ms later again while more remain)."""
    if qc.soft.get("unclean.checked") is not qc.image:  # images are immutable: scan once each
        qc.soft["unclean.checked"] = qc.image
        qc.soft["unclean.leaderless"] = _leaderless(qc)
    if not qc.soft["unclean.leaderless"]:
        qc.soft.pop("unclean.next_ms", None)
        return None
    due = qc.soft.setdefault("unclean.next_ms",
                             now_ms + qc.config.unclean_leader_election_interval_ms)
    if now_ms < due:
        return due
    records, more = replication.maybe_elect_unclean_leaders(qc.context(now_ms))
    if records:
        qc.submit(ControllerResult(tuple(records), None, atomic=False), None, 0, now_ms)
    if more:
        due = qc.soft["unclean.next_ms"] = now_ms + UNCLEAN_RETRY_MS
        return due
    qc.soft.pop("unclean.next_ms", None)
    qc.soft.pop("unclean.checked", None)
    return now_ms + 1  # look again (and reschedule) once these records are applied


def on_activate(qc: QuorumController, now_ms: int) -> None:
    qc.soft.pop("unclean.next_ms", None)
    qc.soft.pop("noop.last_ms", None)
    qc.soft.pop("tokens.next_check_ms", None)
    qc.soft.pop("balance.next_ms", None)
    cluster.on_become_active(qc.context(now_ms))


def on_resign(qc: QuorumController) -> None:
    cluster.on_resign(qc.soft)


def build_controller(node_id: int, rng, *, cluster_id: str, config, metadata_version: int | str,
                     features_levels=None) -> QuorumController:
    """A quorum controller with every control module, timer and bootstrap wired in."""
    boot = bootstrap.BootstrapMetadata.from_version(
        metadata_version, features=features_levels,
        unstable=config.unstable_feature_versions_enable)
    return QuorumController(
        node_id, cluster_id=cluster_id, config=config, rng=rng,
        bootstrap=lambda image: bootstrap.activation_records(image, boot,
                                                          config.min_insync_replicas),
        timers=(lease_task, noop_task, token_task, balance_task, unclean_task),
        on_activate=(on_activate,),
        on_resign=(on_resign,))
