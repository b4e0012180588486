"""Dynamic configs: IncrementalAlterConfigs (records) and DescribeConfigs (a read of the image).

Follows released Kafka's controller (``ControllerApis.handleIncrementalAlterConfigs``,
``ConfigurationControlManager``, ``ControllerConfigurationValidator``, the quorum controller's
existence checker, ``RuntimeLoggerManager``) and the describe side of ``ConfigHelper``:

* each resource is all or nothing: one bad key fails the resource and writes nothing for it;
* the checks run in Kafka's order: operation (APPEND/SUBTRACT need a LIST key), then the
  resource name and values (topic keys against ``LogConfig``), then existence of the topic or node;
* BROKER resources get a record even for an unchanged value (KAFKA-14136: it makes brokers
  reload), other resources only for a change;
* BROKER_LOGGER changes are checked but not written: log levels are node-local, never metadata.

Describes read the *committed* image (Kafka answers them at the last committed offset), so they
take an image rather than a :class:`ControllerContext`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..config import NodeConfig
from ..metadata import MetadataImage
from ..metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE
from ..protocol import messages as M
from ..protocol.error_codes import ErrorCode
from ..protocol.frames import MetadataRecord
from . import config_schema as S
from .result import ControllerContext, ControllerResult, record
from .features import MIN_ISR, elr_enabled

BROKER_LOGGER_RESOURCE = 8
CLIENT_METRICS_RESOURCE = 16
_RESOURCE_NAMES = {TOPIC_RESOURCE: "TOPIC", BROKER_RESOURCE: "BROKER",
                   BROKER_LOGGER_RESOURCE: "BROKER_LOGGER",
                   CLIENT_METRICS_RESOURCE: "CLIENT_METRICS"}

# AlterConfigOp.OpType ids
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

#: Kafka's ``LogLevelConfig.VALID_LOG_LEVELS``
LOG_LEVELS = ("DEBUG", "ERROR", "FATAL", "INFO", "TRACE", "WARN")
ROOT_LOGGER = "root"


class ConfigSource:
    """DescribeConfigs' ConfigSource ids."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


ApiError = tuple[int, "str | None"]
_NONE: ApiError = (ErrorCode.NONE, None)
IAC = M.IncrementalAlterConfigsResponse


def default_logger_exists(name: str) -> bool:
    """Whether a node knows logger ``name``. Kafka asks log4j; the kit has no log4j, so the
    root logger and Kafka's own namespaces count as existing."""
    return name == ROOT_LOGGER or name.startswith(("kafka", "org.apache.kafka",
                                                   "state.change.logger"))


# ================================================================ IncrementalAlterConfigs


def incremental_alter_configs(
    ctx: ControllerContext, request: M.IncrementalAlterConfigsRequest, *,
    logger_exists: Callable[[str], bool] = default_logger_exists,
) -> ControllerResult[M.IncrementalAlterConfigsResponse]:
    """Apply SET / DELETE / APPEND / SUBTRACT per resource, as the active controller does.

    A resource named twice gets one INVALID_REQUEST ("Duplicate resource.") and no change; an
    unknown resource type gets UNSUPPORTED_VERSION. Within a resource a key named twice keeps
    its last operation (the controller builds a map). ``validate_only`` answers without records.
    """
    slots: list[Any] = []  # per first appearance: a response, or a _Pending resource
    pending: dict[tuple[int, str], int] = {}
    duplicates: set[tuple[int, str]] = set()
    for res in request.resources:
        rtype, name = res.resource_type, res.resource_name
        if rtype == BROKER_LOGGER_RESOURCE:
            slots.append(_response(rtype, name,
                                   _check_logger_changes(ctx.node_id, res, logger_exists)))
            continue
        if rtype not in _RESOURCE_NAMES:
            slots.append(_response(rtype, name, (ErrorCode.UNSUPPORTED_VERSION,
                                                 f"Unknown resource type {rtype}.")))
            continue
        key = (rtype, name)
        if key in duplicates:
            continue
        if key in pending:
            duplicates.add(key)
            slots[pending.pop(key)] = _response(rtype, name, (ErrorCode.INVALID_REQUEST,
                                                              "Duplicate resource."))
            continue
        ops = {c.name: (c.config_operation, c.value) for c in res.configs}
        pending[key] = len(slots)
        slots.append(_Pending(rtype, name, ops))

    records: list[MetadataRecord] = []
    responses = []
    for slot in slots:
        if isinstance(slot, _Pending):
            outcome, changes = _controller_check(ctx, slot)
            records.extend(changes)
            slot = _response(slot.rtype, slot.name, outcome)
        responses.append(slot)
    records.extend(clear_elr_records(ctx, records))
    if request.validate_only:
        records = []
    return ControllerResult(tuple(records), IAC(responses=responses), True)


def clear_elr_records(ctx: ControllerContext, records: list[MetadataRecord]) -> list[MetadataRecord]:
    """Kafka 4.x's ``createClearElrRecordsAsNeeded``: with ELR on, each min.insync.replicas
    change clears the ELRs it could invalidate (one topic's, or all for a broker-level one)."""
    if not elr_enabled(ctx.image):
        return []
    out = []
    for rec in records:
        msg = rec.message
        if isinstance(msg, M.ConfigRecord) and msg.name == MIN_ISR:
            topic = msg.resource_name if msg.resource_type == TOPIC_RESOURCE else ""
            out.append(record(M.ClearElrRecord(topic_name=topic), 0))
    return out


@dataclass(frozen=True, slots=True)
class _Pending:
    """A resource waiting for the controller's checks (after the request-level ones)."""

    rtype: int
    name: str
    ops: Mapping[str, tuple[int, str | None]]


def _controller_check(ctx: ControllerContext, pending: _Pending
                      ) -> tuple[ApiError, list[MetadataRecord]]:
    """The controller's part: the answer for one resource and its records (none on error)."""
    if pending.rtype == CLIENT_METRICS_RESOURCE:
        name = _RESOURCE_NAMES[pending.rtype]
        return (ErrorCode.INVALID_REQUEST, f"Unexpected resource type {name}."), []
    error, changes = _alter_resource(ctx, pending.rtype, pending.name, pending.ops)
    return (error, changes) if error[0] == ErrorCode.NONE else (error, [])


def _response(rtype: int, name: str, error: ApiError) -> Any:
    return IAC.AlterConfigsResourceResponse(error_code=int(error[0]), error_message=error[1],
                                            resource_type=rtype, resource_name=name)


#: ``validateAlterConfig``: a value longer than this (Java chars) cannot be written
MAX_CONFIG_VALUE_CHARS = 32767


def controller_configs(image: MetadataImage, rtype: int, name: str) -> dict[str, str]:
    """A resource's configs as the controller holds them: 4.2.1
    ``ConfigurationControlManager#replay`` skips topic keys that ``LogConfig`` no longer knows
    (``DefaultSupportedConfigChecker``; records of removed configs stay in old logs)."""
    current = dict(image.configs.get(rtype, name))
    if rtype == TOPIC_RESOURCE:
        current = {k: v for k, v in current.items() if k in S.TOPIC_CONFIGS}
    return current


def _alter_resource(ctx: ControllerContext, rtype: int, name: str,
                    ops: Mapping[str, tuple[int, str | None]]
                    ) -> tuple[ApiError, list[MetadataRecord]]:
    current = controller_configs(ctx.image, rtype, name)
    changes: list[MetadataRecord] = []
    after = dict(current)
    for key, (op, value) in ops.items():
        old = current.get(key)
        if op == SET:
            new = value
        elif op == DELETE:
            new = None
        elif op in (APPEND, SUBTRACT):
            if not S.is_list(rtype, key):
                return (ErrorCode.INVALID_CONFIG,
                        f"Can't {_OP_NAMES[op]} to key {key} because its type is not LIST."), []
            if value is None:
                return (ErrorCode.INVALID_REQUEST,
                        f"{_OP_NAMES[op]} of key {key} needs a value"), []
            new = _combine(op, old if old is not None else S.default_of(rtype, key), value)
        else:
            return (ErrorCode.INVALID_REQUEST, f"Unknown config operation {op} for key {key}"), []
        if new != old or rtype == BROKER_RESOURCE:
            changes.append(record(M.ConfigRecord(resource_type=rtype, resource_name=name,
                                                 name=key, value=new), 0))
        if new is None:
            after.pop(key, None)
        else:
            after[key] = new
    elr = elr_enabled(ctx.image)
    for change in changes:  # validateAlterConfig's checks, record by record
        msg = change.message
        if elr and rtype == BROKER_RESOURCE and msg.name == MIN_ISR:
            if name:
                return (ErrorCode.INVALID_CONFIG, f"Broker-level {MIN_ISR} cannot be altered "
                                                  "while ELR is enabled."), []
            if msg.value is None:
                return (ErrorCode.INVALID_CONFIG, f"Cluster-level {MIN_ISR} cannot be removed "
                                                  "while ELR is enabled."), []
        if msg.value is not None and len(msg.value.encode("utf-16-le")) // 2 > \
                MAX_CONFIG_VALUE_CHARS:
            return (ErrorCode.INVALID_CONFIG, "The configuration value cannot be added because "
                    f"it exceeds the maximum value size of {MAX_CONFIG_VALUE_CHARS} bytes."), []
    return _validate(ctx, rtype, name, after), changes


def _combine(op: int, base: str | None, value: str) -> str:
    """APPEND adds the missing items, SUBTRACT removes the first occurrence of each (Kafka)."""
    parts = [p for p in (base or "").split(",") if p]
    for item in _java_split(value):
        if op == APPEND:
            if item not in parts:
                parts.append(item)
        elif item in parts:
            parts.remove(item)
    return ",".join(parts)


def _java_split(text: str) -> list[str]:
    """``String.split(",")``: trailing empty strings dropped, but ``""`` gives ``[""]``."""
    if text == "":
        return [""]
    parts = text.split(",")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _validate(ctx: ControllerContext, rtype: int, name: str, after: Mapping[str, str]) -> ApiError:
    """The validator, then the existence check, as ``validateAlterConfig`` orders them."""
    if rtype == TOPIC_RESOURCE:
        if not name:
            return ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."
        problem = S.topic_name_problem(name)
        if problem is not None:
            return ErrorCode.INVALID_TOPIC_EXCEPTION, problem
        try:
            S.validate_topic_configs(after)
        except S.InvalidConfigValue as e:
            return ErrorCode.INVALID_CONFIG, str(e)
        if ctx.image.topic(name) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
        return _NONE
    # BROKER: only the name is checked (the forwarding broker validates values beforehand)
    if not name:
        return _NONE
    node_id = S.parse_java_int(name)
    if node_id is None:
        return ErrorCode.INVALID_REQUEST, "Unable to parse broker name as a base 10 number."
    if node_id < 0:
        return ErrorCode.INVALID_REQUEST, "Invalid negative broker ID."
    if node_id not in _known_node_ids(ctx):
        return ErrorCode.BROKER_ID_NOT_REGISTERED, f"No node with id {node_id} found."
    return _NONE


def _known_node_ids(ctx: ControllerContext) -> set[int]:
    """Registered brokers plus controllers (Kafka: broker registrations or quorum voter ids;
    ``ctx.extra["controller_ids"]`` gives the voters when the caller knows them)."""
    ids = set(ctx.image.cluster.brokers) | set(ctx.image.cluster.controllers) | {ctx.node_id}
    ids.update(ctx.extra.get("controller_ids", ()))
    return ids


def _check_logger_changes(node_id: int, res: Any, logger_exists: Callable[[str], bool]
                          ) -> ApiError:
    """``RuntimeLoggerManager``: the resource must name this node; SET needs an existing logger
    and a valid level; DELETE may not touch the root logger; APPEND/SUBTRACT are refused."""
    target = S.parse_java_int(res.resource_name)
    if target is None:
        return (ErrorCode.INVALID_REQUEST,
                f"Node id must be an integer, but it is: {res.resource_name}")
    if target != node_id:
        return (ErrorCode.INVALID_REQUEST,
                f"Unexpected node id. Expected {node_id}, but received {target}")
    for change in res.configs:
        op, logger = change.config_operation, change.name
        if op in (SET, DELETE) and not logger_exists(logger):
            return ErrorCode.INVALID_CONFIG, f"Logger {logger} does not exist!"
        if op == SET:
            if change.value not in LOG_LEVELS:
                return (ErrorCode.INVALID_CONFIG,
                        (f"Cannot set the log level of {logger} to {change.value} as it is not "
                         f"a supported log level. Valid log levels are {', '.join(LOG_LEVELS)}"))
        elif op == DELETE:
            if logger == ROOT_LOGGER:
                return (ErrorCode.INVALID_REQUEST,
                        f"Removing the log level of the {ROOT_LOGGER} logger is not allowed")
        elif op in (APPEND, SUBTRACT):
            return (ErrorCode.INVALID_REQUEST,
                    f"{_OP_NAMES[op]} operation is not allowed for the BROKER_LOGGER resource")
        else:
            return (ErrorCode.INVALID_REQUEST,
                    f"Unknown operation type {op} is not allowed for the BROKER_LOGGER resource")
    return _NONE


# ================================================================ DescribeConfigs

DC = M.DescribeConfigsResponse
_ENTRY = DC.DescribeConfigsResourceResult
_SYNONYM = DC.DescribeConfigsSynonym


def describe_configs(image: MetadataImage, request: M.DescribeConfigsRequest, *, node_id: int,
                     config: NodeConfig | None = None, version: int = 4
                     ) -> M.DescribeConfigsResponse:
    """Describe resources as node ``node_id`` would from ``image`` (give the committed one).

    Topics list every topic key with its effective value and Kafka's source: the topic's own
    setting, else the broker synonym (this node's dynamic config, the cluster default, the
    node's static config, Kafka's default). ``BROKER ""`` lists the cluster-wide dynamic
    configs; ``BROKER <node_id>`` this node's broker keys; any other broker id is refused, as a
    node only describes itself. ``config`` supplies the node's static settings. ``version`` is
    the request's: version 0 has IsDefault where later versions have ConfigSource.
    """
    supported = (TOPIC_RESOURCE, BROKER_RESOURCE, BROKER_LOGGER_RESOURCE, CLIENT_METRICS_RESOURCE)
    if any(r.resource_type not in supported for r in request.resources):
        bad = next(r.resource_type for r in request.resources if r.resource_type not in supported)
        message = f"Unexpected resource type {bad}"
        return DC(results=[_result(r, (ErrorCode.INVALID_REQUEST, message))
                           for r in request.resources])
    view = _BrokerView(image, node_id, config)
    results = []
    for res in request.resources:
        keys = set(res.configuration_keys) if res.configuration_keys else None
        outcome = _describe_one(image, view, res, node_id)
        if isinstance(outcome, tuple):  # an error
            results.append(_result(res, outcome))
            continue
        entries = [e for e in outcome if keys is None or e.name in keys]
        if not request.include_synonyms:
            entries = [e.replace(synonyms=()) for e in entries]
        if not request.include_documentation:
            entries = [e.replace(documentation=None) for e in entries]
        if version == 0:
            entries = [e.replace(is_default=e.config_source == ConfigSource.DEFAULT_CONFIG)
                       for e in entries]
        results.append(DC.DescribeConfigsResult(
            error_code=0, resource_type=res.resource_type, resource_name=res.resource_name,
            configs=sorted(entries, key=lambda e: e.name)))
    return DC(results=results)


def _result(res: Any, error: ApiError) -> Any:
    return DC.DescribeConfigsResult(error_code=int(error[0]), error_message=error[1],
                                    resource_type=res.resource_type,
                                    resource_name=res.resource_name, configs=())


def _describe_one(image: MetadataImage, view: _BrokerView, res: Any, node_id: int
                  ) -> ApiError | list[Any]:
    rtype, name = res.resource_type, res.resource_name
    if rtype == TOPIC_RESOURCE:
        problem = S.topic_name_problem(name)
        if problem is not None:
            return ErrorCode.INVALID_TOPIC_EXCEPTION, problem
        if image.topic(name) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        overrides = image.configs.topic(name)
        return [view.topic_entry(key, overrides) for key in S.TOPIC_CONFIGS.values()]
    if rtype == BROKER_RESOURCE:
        if not name:
            return [view.default_broker_entry(key) for key in view.dynamic_default]
        target = S.parse_java_int(name)
        if target is None:
            return ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
        if target != node_id:
            expected = f"expected {node_id} or empty string"
            return (ErrorCode.INVALID_REQUEST,
                    f"Unexpected broker id, {expected}, but received {name}")
        names = dict.fromkeys([*S.BROKER_CONFIGS, *view.dynamic_default, *view.dynamic_node])
        return [view.broker_entry(key) for key in names]
    if rtype == BROKER_LOGGER_RESOURCE:
        if not name:
            return ErrorCode.INVALID_REQUEST, "Broker id must not be empty"
        target = S.parse_java_int(name)
        if target is None:
            return ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
        if target != node_id:
            return (ErrorCode.INVALID_REQUEST,
                    f"Unexpected broker id, expected {node_id} but received {name}")
        # Log levels live in each node's logging system, not in metadata: the kit reports the
        # root logger at Kafka's shipped level.
        return [_ENTRY(name=ROOT_LOGGER, value="INFO", read_only=False,
                       config_source=ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
                       is_sensitive=False, synonyms=(), config_type=S.ConfigType.STRING)]
    return (ErrorCode.INVALID_REQUEST,
            f"Unsupported resource type: {_RESOURCE_NAMES.get(rtype, rtype)}")


class _BrokerView:
    """The broker-level settings one node sees, by source, in Kafka's order of precedence."""

    def __init__(self, image: MetadataImage, node_id: int, config: NodeConfig | None) -> None:
        self.dynamic_node = dict(image.configs.broker(node_id))
        self.dynamic_default = dict(image.configs.broker(""))
        self.static: dict[str, str] = {}
        if config is not None:
            for key, value in config.to_kafka().items():
                spec = S.BROKER_CONFIGS.get(key)
                if spec is not None and spec.default is not None:
                    text = S.to_string(spec.type, value) if isinstance(value, bool) else str(value)
                    if text != spec.default:
                        self.static[key] = text
        self.defaults = {k: c.default for k, c in S.BROKER_CONFIGS.items() if c.default is not None}
        self.layers = ((self.dynamic_node, ConfigSource.DYNAMIC_BROKER_CONFIG),
                       (self.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                       (self.static, ConfigSource.STATIC_BROKER_CONFIG),
                       (self.defaults, ConfigSource.DEFAULT_CONFIG))

    def synonyms(self, name: str, group: Iterable[str], *,
                 only: int | None = None) -> list[Any]:
        """Kafka's ``configSynonyms``: by source, then by synonym order; anything before the
        first entry for ``name`` itself is dropped (so a lone minutes/hours setting leaves none)."""
        group = tuple(group)
        found = [_SYNONYM(name=syn, value=layer[syn], source=source)
                 for layer, source in self.layers if only in (None, source)
                 for syn in group if syn in layer]
        for i, synonym in enumerate(found):
            if synonym.name == name:
                return found[i:]
        return []

    def effective(self, synonyms: Iterable[S.Synonym]) -> Any:
        """The value a broker falls back to: the first synonym set at any level wins."""
        for syn in synonyms:
            spec = S.BROKER_CONFIGS.get(syn.name)
            for layer, _ in self.layers:
                raw = layer.get(syn.name)
                if raw is None or spec is None:
                    continue
                try:
                    value = spec.parse(raw)
                except S.InvalidConfigValue:
                    continue  # Kafka ignores a dynamic value it cannot use
                return value * syn.scale if syn.scale != 1 else value
        return None

    def topic_entry(self, key: S.ConfigKey, overrides: Mapping[str, str]) -> Any:
        synonyms: list[Any] = []
        if key.synonyms:
            synonyms = self.synonyms(key.synonyms[0].name, (s.name for s in key.synonyms))
        value: Any = None
        if key.name in overrides:
            value = _parsed_or_raw(key, overrides[key.name])
            synonyms.insert(0, _SYNONYM(name=key.name, value=value,
                                        source=ConfigSource.TOPIC_CONFIG))
        else:
            fallback = self.effective(key.synonyms)
            value = key.default if fallback is None else S.to_string(key.type, fallback)
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        return _entry(key.name, value, source, synonyms, key.type, key.doc, read_only=False)

    def broker_entry(self, name: str) -> Any:
        spec = S.BROKER_CONFIGS.get(name)
        synonyms = self.synonyms(name, S.broker_synonyms(name))
        value = None
        for layer, _ in self.layers:
            if name in layer:
                value = layer[name]
                break
        if spec is not None and value is not None:
            value = _parsed_or_raw(spec, value)
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        type_ = spec.type if spec is not None else S.ConfigType.UNKNOWN
        read_only = spec is None or not spec.dynamic
        return _entry(name, value, source, synonyms, type_, spec.doc if spec else "",
                      read_only=read_only)

    def default_broker_entry(self, name: str) -> Any:
        spec = S.BROKER_CONFIGS.get(name)
        synonyms = self.synonyms(name, S.broker_synonyms(name),
                                 only=ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        type_ = spec.type if spec is not None else S.ConfigType.UNKNOWN
        return _entry(name, self.dynamic_default[name], source, synonyms, type_,
                      spec.doc if spec else "", read_only=spec is None or not spec.dynamic)


def _parsed_or_raw(key: S.ConfigKey, raw: str) -> str:
    """A stored value as Kafka prints it after parsing (trimmed, lists re-joined)."""
    try:
        return S.to_string(key.type, key.parse(raw))
    except S.InvalidConfigValue:
        return raw


def _entry(name: str, value: str | None, source: int, synonyms: list[Any], type_: S.ConfigType,
           doc: str, *, read_only: bool) -> Any:
    return _ENTRY(name=name, value=value, read_only=read_only, config_source=source,
                  is_sensitive=False, synonyms=tuple(synonyms), config_type=int(type_),
                  documentation=doc or None)
