"""Client quotas: AlterClientQuotas (records) and DescribeClientQuotas (a read of the image).

After released Kafka's ``ClientQuotaControlManager`` (alter) and ``ClientQuotasImage.describe``
(what brokers answer from their image). An entity is a map of entity type to name (None = the
default entity). Kafka accepts user, client-id, user+client-id, and ip alone; keys are checked
against the quota keys of that combination, and values must be positive (integral for the byte
rates and the connection rate).
"""

from __future__ import annotations

import ipaddress
import math
import struct
from collections.abc import Mapping
from typing import Any

from ..metadata import MetadataImage, quota_entity
from ..protocol import messages as M
from ..protocol.error_codes import ErrorCode
from ..protocol.frames import MetadataRecord
from .result import ControllerContext, ControllerResult, record

USER, CLIENT_ID, IP = "user", "client-id", "ip"

# DescribeClientQuotas match types
MATCH_TYPE_EXACT, MATCH_TYPE_DEFAULT, MATCH_TYPE_SPECIFIED = 0, 1, 2

_INT_MAX = 2**31 - 1
_LONG_MAX = float(2**63 - 1)

#: quota keys by kind (Kafka's ``QuotaConfig``): "long" and "int" must be whole numbers
USER_AND_CLIENT_QUOTAS: dict[str, str] = {
    "producer_byte_rate": "long",
    "consumer_byte_rate": "long",
    "request_percentage": "double",
    "controller_mutation_rate": "double",
}
IP_QUOTAS: dict[str, str] = {"connection_creation_rate": "int"}

ApiError = tuple[int, "str | None"]
_NONE: ApiError = (ErrorCode.NONE, None)
ACQ = M.AlterClientQuotasResponse


# ================================================================ AlterClientQuotas


def alter_client_quotas(ctx: ControllerContext, request: M.AlterClientQuotasRequest
                        ) -> ControllerResult[M.AlterClientQuotasResponse]:
    """Set or remove quota values per entity; ``validate_only`` answers without records.

    As in Kafka: an entity named twice gets INVALID_REQUEST ("Ignoring duplicate entity") while
    the records of its first alteration stay; a key named twice in one entry fails the entry.
    Removing a key the entity does not have writes nothing; an unchanged value writes nothing.
    """
    results: dict[tuple, ApiError] = {}
    shown: dict[tuple, dict[str, str | None]] = {}
    records: list[MetadataRecord] = []
    for entry in request.entries:
        entity = {e.entity_type: e.entity_name for e in entry.entity}  # last name per type wins
        key = quota_entity(entity.items())
        shown.setdefault(key, entity)
        alterations: dict[str, float | None] = {}
        for op in entry.ops:
            if op.key in alterations:
                results[key] = (ErrorCode.INVALID_REQUEST,
                                (f"Duplicate quota key {op.key} not updating quota for this "
                                 f"entity {_entity_str(entity)}"))
            else:
                alterations[op.key] = None if op.remove else op.value
        if key in results:
            results[key] = (ErrorCode.INVALID_REQUEST,
                            f"Ignoring duplicate entity {_entity_str(entity)}")
            continue
        results[key] = _alter_entity(ctx.image, entity, alterations, records)
    response = ACQ(entries=[
        ACQ.EntryData(error_code=int(error[0]), error_message=error[1],
                      entity=[ACQ.EntityData(entity_type=t, entity_name=n)
                              for t, n in sorted(shown[key].items())])
        for key, error in results.items()])
    if request.validate_only:
        records = []
    return ControllerResult(tuple(records), response, True)


def _entity_str(entity: Mapping[str, str | None]) -> str:
    return "ClientQuotaEntity(entries={" + ", ".join(
        f"{t}={n}" for t, n in sorted(entity.items())) + "})"


def _alter_entity(image: MetadataImage, entity: Mapping[str, str | None],
                  alterations: Mapping[str, float | None], out: list[MetadataRecord]) -> ApiError:
    error = _validate_entity(entity)
    if error is not None:
        return error
    valid_keys, error = _quota_keys_for(entity)
    if error is not None:
        return error
    current: Mapping[str, float] = image.client_quotas.entities.get(
        quota_entity(entity.items()), {})
    pending: list[MetadataRecord] = []
    for key, value in alterations.items():
        if value is None:
            if key in current:
                pending.append(_quota_record(entity, key, 0.0, remove=True))
            continue
        error = _validate_value(valid_keys, key, value)
        if error is not None:
            return error
        old = current.get(key)
        if old is None or not _same_double(old, value):
            pending.append(_quota_record(entity, key, value, remove=False))
    out.extend(pending)
    return _NONE


def _validate_entity(entity: Mapping[str, str | None]) -> ApiError | None:
    if not entity:
        return ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity"
    for entity_type, name in entity.items():
        if entity_type not in (USER, CLIENT_ID, IP):
            return ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {entity_type}"
        if name is not None and name == "":
            return ErrorCode.INVALID_REQUEST, f"Empty {entity_type} not supported"
    return None


def _quota_keys_for(entity: Mapping[str, str | None]
                    ) -> tuple[Mapping[str, str], ApiError | None]:
    """The combination Kafka allows decides the valid keys."""
    if IP in entity:
        if USER in entity or CLIENT_ID in entity:
            return {}, (ErrorCode.INVALID_REQUEST, ("Invalid quota entity combination, IP "
                                                    "entity should not be combined with User or "
                                                    "ClientId"))
        if not is_valid_ip_entity(entity[IP]):
            return {}, (ErrorCode.INVALID_REQUEST,
                        f"{entity[IP]} is not a valid IP or resolvable host.")
        return IP_QUOTAS, None
    return USER_AND_CLIENT_QUOTAS, None


def is_valid_ip_entity(name: str | None) -> bool:
    """The default entity, or an IP literal. Kafka also accepts names its resolver knows; the
    kit has no DNS, so host names are refused."""
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _validate_value(valid_keys: Mapping[str, str], key: str, value: float) -> ApiError | None:
    kind = valid_keys.get(key)
    if kind is None:
        return ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}"
    if value <= 0.0:
        return ErrorCode.INVALID_REQUEST, f"Quota {key} must be greater than 0"
    if kind == "double":
        return None
    if kind == "int" and value > _INT_MAX:
        return ErrorCode.INVALID_REQUEST, f"Proposed value for {key} is too large for an INT."
    if kind == "long" and value > _LONG_MAX:
        return ErrorCode.INVALID_REQUEST, f"Proposed value for {key} is too large for a LONG."
    if abs(math.fmod(value, 1.0)) > 1e-6:
        return ErrorCode.INVALID_REQUEST, f"{key} cannot be a fractional value."
    return None


def _same_double(a: float, b: float) -> bool:
    """Java's ``Double.equals``: bitwise (NaN equals NaN, 0.0 differs from -0.0)."""
    return struct.pack(">d", a) == struct.pack(">d", b)


def _quota_record(entity: Mapping[str, str | None], key: str, value: float, *,
                  remove: bool) -> MetadataRecord:
    data = [M.ClientQuotaRecord.EntityData(entity_type=t, entity_name=n)
            for t, n in sorted(entity.items())]
    return record(M.ClientQuotaRecord(entity=data, key=key, value=value, remove=remove), 0)


# ================================================================ DescribeClientQuotas

DCQ = M.DescribeClientQuotasResponse


class _FilterError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def describe_client_quotas(image: MetadataImage, request: M.DescribeClientQuotasRequest
                           ) -> M.DescribeClientQuotasResponse:
    """The entities matching every filter component (give the committed image).

    EXACT matches one name, DEFAULT the default entity, SPECIFIED any entity that has the type
    (the default one included, as Kafka's image does). ``strict`` also requires that the entity
    has no other types. A bad filter fails the whole response (entries null).
    """
    try:
        exact, typed = _parse_filter(request.components)
    except _FilterError as e:
        return DCQ(error_code=int(e.code), error_message=e.message, entries=None)
    entries = []
    for entity, quotas in sorted(image.client_quotas.entities.items(), key=_entity_sort_key):
        names = dict(entity)
        if _matches(names, exact, typed, request.strict):
            entries.append(DCQ.EntryData(
                entity=[DCQ.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                values=[DCQ.ValueData(key=k, value=v) for k, v in sorted(quotas.items())]))
    return DCQ(error_code=0, entries=entries)


def _entity_sort_key(item: tuple[tuple, Any]) -> tuple:
    """Stable output: fewer types first, then by type, default entity before names."""
    return len(item[0]), tuple((t, n is not None, n or "") for t, n in item[0])


def _parse_filter(components: Any) -> tuple[dict[str, str | None], set[str]]:
    exact: dict[str, str | None] = {}
    typed: set[str] = set()
    for c in components:
        entity_type = c.entity_type
        if not entity_type:
            raise _FilterError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
        if entity_type in exact or entity_type in typed:
            raise _FilterError(ErrorCode.INVALID_REQUEST, f"Entity type {entity_type} cannot "
                               "appear more than once in the filter.")
        if entity_type not in (IP, USER, CLIENT_ID):
            raise _FilterError(ErrorCode.UNSUPPORTED_VERSION,
                               f"Unsupported entity type {entity_type}")
        if c.match_type == MATCH_TYPE_EXACT:
            if c.match is None:
                raise _FilterError(ErrorCode.INVALID_REQUEST, "Request specified "
                                   "MATCH_TYPE_EXACT, but set match string to null.")
            exact[entity_type] = c.match
        elif c.match_type == MATCH_TYPE_DEFAULT:
            if c.match is not None:
                raise _FilterError(ErrorCode.INVALID_REQUEST, "Request specified "
                                   "MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[entity_type] = None
        elif c.match_type == MATCH_TYPE_SPECIFIED:
            if c.match is not None:
                raise _FilterError(ErrorCode.INVALID_REQUEST, "Request specified "
                                   "MATCH_TYPE_SPECIFIED, but also specified a match string.")
            typed.add(entity_type)
        else:
            raise _FilterError(ErrorCode.INVALID_REQUEST, f"Unknown match type {c.match_type}")
    uses_ip = IP in exact or IP in typed
    uses_client = any(t in exact or t in typed for t in (USER, CLIENT_ID))
    if uses_ip and uses_client:
        raise _FilterError(ErrorCode.INVALID_REQUEST, "Invalid entity filter component "
                           "combination. IP filter component should not be used with user or "
                           "clientId filter component.")
    return exact, typed


def _matches(entity: Mapping[str, str | None], exact: Mapping[str, str | None], typed: set[str],
             strict: bool) -> bool:
    if strict and len(entity) != len(exact) + len(typed):
        return False
    for entity_type, name in exact.items():
        if entity_type not in entity or entity[entity_type] != name:
            return False
    return all(t in entity for t in typed)
