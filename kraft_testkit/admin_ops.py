"""Admin operations of the :class:`~kraft_testkit.cluster.Cluster` facade.

Each builds the Kafka request an admin client would send, sends it to the active controller
through :meth:`Cluster.request` (over the simulated network, retried on NOT_CONTROLLER), and
raises :class:`~kraft_testkit.protocol.error_codes.KafkaApiError` for an error code, so a test
reads like a Kafka client's: ``with pytest.raises(KafkaApiError, match="TOPIC_ALREADY_EXISTS")``.
A call returns once the controller answered, i.e. once its records are committed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import arg_checks as A
from .protocol import messages as M
from .protocol.error_codes import KafkaApiError

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
ELECTION_TYPES = {"preferred": 0, "unclean": 1}
SCRAM_MECHANISMS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}


def _check(code: int, message: str | None, api: str) -> None:
    KafkaApiError.check(code, message, api=api)


class AdminOperations:
    """Mixed into Cluster; needs ``request(body)``, ``metadata`` and ``run_until``."""

    # ------------------------------------------------------------- topics

    def create_topic(self, name: str, partitions: int | None = None,
                     replication_factor: int | None = None, *,
                     configs: Mapping[str, str] | None = None,
                     assignments: Sequence[Sequence[int]] | None = None,
                     validate_only: bool = False) -> Any:
        """Create a topic; returns its committed ``TopicImage`` (the response when validating).

        ``assignments`` gives each partition's replicas (then leave the counts out).
        """
        w = "create_topic"
        A.a_str(w, "name", name)
        _optional_count(w, "partitions", partitions)
        _optional_count(w, "replication_factor", replication_factor)
        if configs is not None:
            A.str_map(w, "configs", configs, none=True)
        _assignments(w, assignments)
        A.a_bool(w, "validate_only", validate_only)
        R = M.CreateTopicsRequest
        topic = R.CreatableTopic(
            name=name,
            num_partitions=-1 if partitions is None else partitions,
            replication_factor=-1 if replication_factor is None else replication_factor,
            assignments=[R.CreatableReplicaAssignment(partition_index=i, broker_ids=list(r))
                         for i, r in enumerate(assignments or ())],
            configs=[R.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])
        resp = self.request(R(topics=[topic], timeout_ms=30_000, validate_only=validate_only))
        result = next(iter(resp.topics), None)
        if result is None:
            raise KafkaApiError(-1, "the controller answered with no topic result",
                                api="CreateTopics")
        _check(result.error_code, result.error_message, "CreateTopics")
        if validate_only:
            return result
        return self.metadata.topic(name)

    def delete_topic(self, name: str) -> None:
        A.a_str("delete_topic", "name", name)
        R = M.DeleteTopicsRequest
        resp = self.request(R(topics=[R.DeleteTopicState(name=name)], topic_names=[name],
                              timeout_ms=30_000))
        for r in resp.responses:
            _check(r.error_code, r.error_message, "DeleteTopics")

    def create_partitions(self, name: str, count: int, *,
                          assignments: Sequence[Sequence[int]] | None = None) -> None:
        """Grow ``name`` to ``count`` partitions in total."""
        A.a_str("create_partitions", "name", name)
        A.an_int("create_partitions", "count", count, *INT32)  # Kafka answers the range
        _assignments("create_partitions", assignments)
        R = M.CreatePartitionsRequest
        topic = R.CreatePartitionsTopic(
            name=name, count=count,
            assignments=None if assignments is None else
            [R.CreatePartitionsAssignment(broker_ids=list(a)) for a in assignments])
        resp = self.request(R(topics=[topic], timeout_ms=30_000, validate_only=False))
        for r in resp.results:
            _check(r.error_code, r.error_message, "CreatePartitions")

    # ------------------------------------------------------------- configs

    def alter_configs(self, *, topic: str | None = None, broker: int | str | None = None,
                      set: Mapping[str, str | None] | None = None,
                      delete: Iterable[str] = (), validate_only: bool = False) -> None:
        """IncrementalAlterConfigs on one topic or broker (``broker=""``: the cluster default).

        A ``None`` value in ``set`` deletes the key, as Kafka's controller treats it.
        """
        w = "alter_configs"
        _one_resource(w, topic, broker)
        if set is not None:
            A.str_map(w, "set", set, none=True)
        if isinstance(delete, str):
            raise A.bad(w, "delete", delete, "a list of config names, not a str")
        A.strs(w, "delete", list(delete) if isinstance(delete, Iterable) else delete)
        A.a_bool(w, "validate_only", validate_only)
        R = M.IncrementalAlterConfigsRequest
        ops = [R.AlterableConfig(name=k, config_operation=SET, value=v)
               for k, v in (set or {}).items()]
        ops += [R.AlterableConfig(name=k, config_operation=DELETE, value=None) for k in delete]
        resource = R.AlterConfigsResource(
            resource_type=TOPIC if topic is not None else BROKER,
            resource_name=topic if topic is not None else str(broker), configs=ops)
        resp = self.request(R(resources=[resource], validate_only=validate_only))
        for r in resp.responses:
            _check(r.error_code, r.error_message, "IncrementalAlterConfigs")

    def describe_configs(self, *, topic: str | None = None,
                         broker: int | str | None = None) -> dict[str, str | None]:
        """Every config of a topic or broker with its effective value (defaults included).

        ``broker=<broker id>`` is answered by that broker from its own image and static config,
        as Kafka's admin client sends a broker resource to that broker; topics and ``""`` (the
        cluster default) are answered by the active controller."""
        _one_resource("describe_configs", topic, broker)
        R = M.DescribeConfigsRequest
        resource = R.DescribeConfigsResource(
            resource_type=TOPIC if topic is not None else BROKER,
            resource_name=topic if topic is not None else str(broker), configuration_keys=None)
        request = R(resources=[resource], include_synonyms=False, include_documentation=False)
        asked = str(broker) if topic is None else ""
        if asked.isdigit() and int(asked) in self.broker_ids:
            from .controller import configs
            from .sim.errors import NodeStateError

            node = self.broker(int(asked))
            if node is None:
                raise NodeStateError(f"describe_configs(broker={broker!r}): broker {asked} is "
                                     "down; start it first (its own image answers)")
            resp = configs.describe_configs(node.image, request, node_id=int(asked),
                                            config=node.logic.config)
        else:
            resp = self.request(request)
        result = resp.results[0]
        _check(result.error_code, result.error_message, "DescribeConfigs")
        return {c.name: c.value for c in result.configs}

    # ------------------------------------------------------------- replication

    def reassign(self, topic: str, partition: int, replicas: Sequence[int] | None) -> None:
        """Start a reassignment of one partition to ``replicas`` (None cancels it)."""
        A.a_str("reassign", "topic", topic)
        A.an_int("reassign", "partition", partition, *INT32)
        if replicas is not None:
            A.ints("reassign", "replicas", replicas)
        R = M.AlterPartitionReassignmentsRequest
        part = R.ReassignablePartition(partition_index=partition,
                                       replicas=None if replicas is None else list(replicas))
        resp = self.request(R(timeout_ms=30_000,
                              topics=[R.ReassignableTopic(name=topic, partitions=[part])]))
        _check(resp.error_code, resp.error_message, "AlterPartitionReassignments")
        for t in resp.responses:
            for p in t.partitions:
                _check(p.error_code, p.error_message, "AlterPartitionReassignments")

    def list_reassignments(self) -> dict[tuple[str, int], dict[str, list[int]]]:
        """Ongoing reassignments: ``{(topic, partition): {replicas, adding, removing}}``."""
        resp = self.request(M.ListPartitionReassignmentsRequest(timeout_ms=30_000, topics=None))
        _check(resp.error_code, resp.error_message, "ListPartitionReassignments")
        return {(t.name, p.partition_index): {"replicas": list(p.replicas),
                                              "adding": list(p.adding_replicas),
                                              "removing": list(p.removing_replicas)}
                for t in resp.topics for p in t.partitions}

    def elect_leaders(self, topic: str | None = None, partitions: Sequence[int] | None = None, *,
                      election: str = "preferred") -> dict[tuple[str, int], str]:
        """ElectLeaders; returns each partition's outcome by error name (``"NONE"`` = elected)."""
        from .protocol.error_codes import ErrorCode

        R = M.ElectLeadersRequest
        w = "elect_leaders"
        A.one_of(w, "election", election, sorted(ELECTION_TYPES))
        if topic is not None:
            A.a_str(w, "topic", topic)
        if partitions is not None:
            if topic is None:
                raise A.bad(w, "partitions", partitions, "None when no topic is given")
            A.ints(w, "partitions", partitions)
        parts = None
        if topic is not None:
            known = self.metadata.topic(topic)
            if partitions is None and known is None:  # Kafka's answer for each partition
                raise KafkaApiError(3, f"elect_leaders: topic {topic!r} does not exist",
                                    api="ElectLeaders")
            ids = partitions if partitions is not None else sorted(known.partitions)
            parts = [R.TopicPartitions(topic=topic, partitions=list(ids))]
        resp = self.request(R(election_type=ELECTION_TYPES[election], topic_partitions=parts,
                              timeout_ms=30_000))
        _check(resp.error_code, None, "ElectLeaders")
        return {(r.topic, p.partition_id): ErrorCode.name_of(p.error_code)
                for r in resp.replica_election_results for p in r.partition_result}

    def broker_metadata(self, broker: Any, topics: Sequence[str] | None = None) -> Any:
        """A MetadataResponse as ``broker`` serves it to clients (a real MetadataRequest over
        the simulated network): fenced brokers and controllers are not listed."""
        self.node(broker)  # type: ignore[attr-defined]  # a node of this cluster, else typed
        if topics is not None:
            A.strs("broker_metadata", "topics", topics)
        R = M.MetadataRequest
        body = R(topics=None if topics is None else [R.MetadataRequestTopic(name=t)
                                                    for t in topics],
                 allow_auto_topic_creation=False)
        return self.request(body, to=broker, timeout_ms=10_000)

    # ------------------------------------------------------------- membership and features

    def unregister_broker(self, broker: Any) -> None:
        if not A.is_int(broker) and not hasattr(broker, "roles"):
            raise A.bad("unregister_broker", "broker", broker, "a broker id (int) or handle")
        resp = self.request(M.UnregisterBrokerRequest(broker_id=int(broker)))
        _check(resp.error_code, resp.error_message, "UnregisterBroker")

    def update_feature(self, name: str, level: int, *, upgrade_type: str = "upgrade",
                       validate_only: bool = False) -> None:
        """UpdateFeatures for one feature (``upgrade``, ``safe_downgrade``, ``unsafe_downgrade``)."""
        types = {"upgrade": 1, "safe_downgrade": 2, "unsafe_downgrade": 3}
        R = M.UpdateFeaturesRequest
        w = "update_feature"
        A.a_str(w, "name", name)
        A.an_int(w, "level", level, 0, 32767)
        A.one_of(w, "upgrade_type", upgrade_type, types)
        A.a_bool(w, "validate_only", validate_only)
        # AllowDowngrade is v0's field; the newest version says it with UpgradeType
        update = R.FeatureUpdateKey(feature=name, max_version_level=level,
                                    upgrade_type=types[upgrade_type])
        resp = self.request(R(timeout_ms=30_000, feature_updates=[update],
                              validate_only=validate_only))
        _check(resp.error_code, resp.error_message, "UpdateFeatures")
        for r in resp.results:
            _check(r.error_code, r.error_message, "UpdateFeatures")

    # ------------------------------------------------------------- security and quotas

    def create_acl(self, *, principal: str, resource_type: int, resource_name: str,
                   operation: int, permission: int = 3, pattern_type: int = 3,
                   host: str = "*") -> None:
        """One ACL with Kafka's codes (resource type 2 = TOPIC, operation 3 = READ, permission
        3 = ALLOW, pattern 3 = LITERAL)."""
        w = "create_acl"
        A.a_str(w, "principal", principal)
        A.a_str(w, "resource_name", resource_name)
        A.a_str(w, "host", host)
        for name, value in (("resource_type", resource_type), ("operation", operation),
                            ("permission", permission), ("pattern_type", pattern_type)):
            A.an_int(w, name, value, 0, 127)  # Kafka's codes are int8
        R = M.CreateAclsRequest
        creation = R.AclCreation(resource_type=resource_type, resource_name=resource_name,
                                 resource_pattern_type=pattern_type, principal=principal,
                                 host=host, operation=operation, permission_type=permission)
        resp = self.request(R(creations=[creation]))
        for r in resp.results:
            _check(r.error_code, r.error_message, "CreateAcls")

    def alter_client_quota(self, entity: Mapping[str, str | None],
                           quotas: Mapping[str, float | None]) -> None:
        """Set (or, with None, remove) quotas of an entity like ``{"user": "alice"}``."""
        A.str_map("alter_client_quota", "entity", entity, none=True)
        A.str_map("alter_client_quota", "quotas", quotas, values="number", none=True)
        R = M.AlterClientQuotasRequest
        entry = R.EntryData(
            entity=[R.EntityData(entity_type=k, entity_name=v) for k, v in entity.items()],
            ops=[R.OpData(key=k, value=0.0 if v is None else float(v), remove=v is None)
                 for k, v in quotas.items()])
        resp = self.request(R(entries=[entry], validate_only=False))
        for r in resp.entries:
            _check(r.error_code, r.error_message, "AlterClientQuotas")

    def upsert_scram_credential(self, user: str, password: str, *,
                                mechanism: str = "SCRAM-SHA-256", iterations: int = 4096,
                                salt: bytes | None = None) -> None:
        """Create or replace a SCRAM credential (salted as a Kafka client would)."""
        from .controller.scram import salted_password

        w = "upsert_scram_credential"
        A.a_str(w, "user", user)
        A.a_str(w, "password", password)
        mech = SCRAM_MECHANISMS[A.one_of(w, "mechanism", mechanism, SCRAM_MECHANISMS)]
        A.an_int(w, "iterations", iterations, 1)
        if salt is not None and type(salt) is not bytes:
            raise A.bad(w, "salt", salt, "bytes or None")
        salt = salt if salt is not None else f"salt-{user}".encode()
        R = M.AlterUserScramCredentialsRequest
        up = R.ScramCredentialUpsertion(name=user, mechanism=mech, iterations=iterations,
                                        salt=salt,
                                        salted_password=salted_password(mech, password, salt,
                                                                        iterations))
        resp = self.request(R(deletions=[], upsertions=[up]))
        for r in resp.results:
            _check(r.error_code, r.error_message, "AlterUserScramCredentials")


INT32 = (-(1 << 31), (1 << 31) - 1)


def _optional_count(where: str, name: str, value: object) -> None:
    """None (the broker default) or an int32: the controller answers a value it refuses with
    Kafka's error (INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR), as Kafka's does."""
    if value is not None:
        A.an_int(where, name, value, *INT32)


def _assignments(where: str, value: object) -> None:
    if value is not None and (not isinstance(value, (list, tuple)) or not all(
            isinstance(r, (list, tuple, range)) and all(A.is_int(b) and b >= 0 for b in r)
            for r in value)):
        raise A.bad(where, "assignments", value, "a list of replica lists (broker ids), one "
                                                  "per partition, or None")


def _one_resource(where: str, topic: object, broker: object) -> None:
    """Exactly one of ``topic=`` (a name) or ``broker=`` (an id, or "" for the default)."""
    if (topic is None) == (broker is None):
        raise A.bad(where, "topic/broker", (topic, broker),
                    "exactly one of topic= (a topic name) or broker= (a broker id, or '' for "
                    "the cluster default)")
    if topic is not None:
        A.a_str(where, "topic", topic)
    elif not (A.is_int(broker) and broker >= 0 or type(broker) is str and
              (broker == "" or broker.isdigit())):
        raise A.bad(where, "broker", broker, "a broker id (int >= 0) or '' (the cluster default)")
