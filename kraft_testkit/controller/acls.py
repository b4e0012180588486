"""ACLs kept in the metadata log: CreateAcls, DeleteAcls (records) and DescribeAcls (a read).

After released Kafka's ``AclApis`` (the checks before the controller), ``AclControlManager``
(validation, ids, deletion by filter) and ``AclBindingFilter.matches`` (filter rules):

* a new ACL needs a concrete resource type, LITERAL or PREFIXED pattern, a concrete operation,
  ALLOW or DENY, a non-empty name (``kafka-cluster`` for CLUSTER) and a ``type:name`` principal;
* an ACL that exists already, or twice in one request, is answered with success but written once;
* ids are random uuids drawn from ``ctx.rng`` (Kafka: ``Uuid.randomUuid()``), never reused;
* a filter's ANY matches everything, MATCH also matches the literal ``*`` and prefixes covering
  the name, a null name/principal/host matches any.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import Any

from ..metadata import Acl, MetadataImage
from ..protocol import messages as M
from ..protocol.error_codes import ErrorCode
from ..protocol.frames import MetadataRecord
from ..protocol.uuid import Uuid
from .result import MAX_RECORDS_PER_USER_OP, ControllerContext, ControllerResult, record

CLUSTER_NAME = "kafka-cluster"
WILDCARD_RESOURCE = "*"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def _name(enum: type[IntEnum], code: int) -> str:
    """Kafka's ``fromCode``: a code it does not know reads as UNKNOWN."""
    try:
        return enum(code).name
    except ValueError:
        return "UNKNOWN"


def _known(enum: type[IntEnum], code: int) -> bool:
    return _name(enum, code) != "UNKNOWN"


ApiError = tuple[int, "str | None"]


# ================================================================ CreateAcls


def create_acls(ctx: ControllerContext, request: M.CreateAclsRequest
                ) -> ControllerResult[M.CreateAclsResponse]:
    """One result per creation, in request order; one AccessControlEntryRecord per new ACL."""
    existing = set(ctx.image.acls.acls.values())
    used_ids = set(ctx.image.acls.acls)
    added: set[Acl] = set()
    records: list[MetadataRecord] = []
    results = []
    for creation in request.creations:
        acl = Acl(creation.resource_type, creation.resource_name, creation.resource_pattern_type,
                  creation.principal, creation.host, creation.operation, creation.permission_type)
        error = validate_new_acl(acl)
        if error is not None:
            results.append(M.CreateAclsResponse.AclCreationResult(
                error_code=int(error[0]), error_message=error[1]))
            continue
        if acl not in existing and acl not in added:
            if len(records) >= MAX_RECORDS_PER_USER_OP:
                # Kafka's bounded record list throws; the controller answers every creation
                # POLICY_VIOLATION (EventHandlerExceptionInfo) and writes nothing
                failed = M.CreateAclsResponse.AclCreationResult(
                    error_code=int(ErrorCode.POLICY_VIOLATION),
                    error_message="Unable to perform excessively large batch operation.")
                return ControllerResult((), M.CreateAclsResponse(
                    results=[failed] * len(request.creations)), True)
            added.add(acl)
            acl_id = _new_acl_id(ctx, used_ids)
            records.append(record(M.AccessControlEntryRecord(id=acl_id, **acl._asdict()), 0))
        results.append(M.CreateAclsResponse.AclCreationResult(error_code=0))
    return ControllerResult(tuple(records), M.CreateAclsResponse(results=results), True)


def _new_acl_id(ctx: ControllerContext, used: set[Uuid]) -> Uuid:
    while True:
        acl_id = Uuid.random(ctx.rng)
        if acl_id not in used:
            used.add(acl_id)
            return acl_id


def validate_new_acl(acl: Acl) -> ApiError | None:
    """The broker-side name checks of ``AclApis``, then ``AclControlManager.validateNewAcl``."""
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        return (ErrorCode.INVALID_REQUEST,
                f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not acl.resource_name:
        return ErrorCode.INVALID_REQUEST, "Invalid empty resource name"
    resource_type = _name(ResourceType, acl.resource_type)
    if resource_type in ("UNKNOWN", "ANY"):
        return ErrorCode.INVALID_REQUEST, f"Invalid resourceType {resource_type}"
    pattern = _name(PatternType, acl.pattern_type)
    if pattern not in ("LITERAL", "PREFIXED"):
        return ErrorCode.INVALID_REQUEST, f"Invalid patternType {pattern}"
    operation = _name(AclOperation, acl.operation)
    if operation in ("UNKNOWN", "ANY"):
        return ErrorCode.INVALID_REQUEST, f"Invalid operation {operation}"
    permission = _name(AclPermissionType, acl.permission_type)
    if permission not in ("DENY", "ALLOW"):
        return ErrorCode.INVALID_REQUEST, f"Invalid permissionType {permission}"
    if ":" not in acl.principal:
        return (ErrorCode.INVALID_REQUEST,
                (f"Could not parse principal from `{acl.principal}` (no colon is present "
                 "separating the principal type from the principal name)"))
    return None


# ================================================================ filters


class AclFilter:
    """Kafka's ``AclBindingFilter``: resource pattern filter plus entry filter."""

    __slots__ = (
        "host",
        "operation",
        "pattern_type",
        "permission_type",
        "principal",
        "resource_name",
        "resource_type",
    )

    def __init__(self, resource_type: int, resource_name: str | None, pattern_type: int,
                 principal: str | None, host: str | None, operation: int,
                 permission_type: int) -> None:
        self.resource_type = resource_type
        self.resource_name = resource_name
        self.pattern_type = pattern_type
        self.principal = principal
        self.host = host
        self.operation = operation
        self.permission_type = permission_type

    @classmethod
    def from_delete(cls, f: Any) -> AclFilter:
        return cls(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter,
                   f.principal_filter, f.host_filter, f.operation, f.permission_type)

    @classmethod
    def from_describe(cls, r: Any) -> AclFilter:
        return cls(r.resource_type_filter, r.resource_name_filter, r.pattern_type_filter,
                   r.principal_filter, r.host_filter, r.operation, r.permission_type)

    def problem(self) -> str | None:
        """Kafka refuses filters with UNKNOWN parts (``validateFilter``)."""
        if not _known(ResourceType, self.resource_type) or not _known(PatternType,
                                                                       self.pattern_type):
            return "Unknown patternFilter."
        if not _known(AclOperation, self.operation) or not _known(AclPermissionType,
                                                                   self.permission_type):
            return "Unknown entryFilter."
        return None

    def matches(self, acl: Acl) -> bool:
        return self._matches_pattern(acl) and self._matches_entry(acl)

    def _matches_pattern(self, acl: Acl) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        any_pattern = self.pattern_type in (PatternType.ANY, PatternType.MATCH)
        if not any_pattern and self.pattern_type != acl.pattern_type:
            return False
        name = self.resource_name
        if name is None:
            return True
        if self.pattern_type == PatternType.ANY or self.pattern_type == acl.pattern_type:
            return name == acl.resource_name
        # MATCH: the ACLs that would apply to a resource called ``name``
        if acl.pattern_type == PatternType.LITERAL:
            return name == acl.resource_name or acl.resource_name == WILDCARD_RESOURCE
        if acl.pattern_type == PatternType.PREFIXED:
            return name.startswith(acl.resource_name)
        return False

    def _matches_entry(self, acl: Acl) -> bool:
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        return (self.permission_type == AclPermissionType.ANY
                or self.permission_type == acl.permission_type)


def _sorted_acls(image: MetadataImage) -> list[tuple[Uuid, Acl]]:
    return sorted(image.acls.acls.items(), key=lambda kv: (kv[1], bytes(kv[0])))


# ================================================================ DeleteAcls

DA = M.DeleteAclsResponse


def delete_acls(ctx: ControllerContext, request: M.DeleteAclsRequest
                ) -> ControllerResult[M.DeleteAclsResponse]:
    """Each filter lists the ACLs it matches; each matched ACL is removed once, even when
    several filters match it."""
    removed: dict[Uuid, None] = {}
    results = []
    acls = _sorted_acls(ctx.image)
    by_name: dict[str, list[tuple[Uuid, Acl]]] = {}
    for acl_id, acl in acls:  # a filter naming its resource exactly looks at those ACLs only
        by_name.setdefault(acl.resource_name, []).append((acl_id, acl))
    for f in request.filters:
        acl_filter = AclFilter.from_delete(f)
        problem = acl_filter.problem()
        if problem is not None:
            results.append(DA.DeleteAclsFilterResult(
                error_code=int(ErrorCode.INVALID_REQUEST), error_message=problem, matching_acls=()))
            continue
        matching = []
        exact = (acl_filter.resource_name is not None
                 and acl_filter.pattern_type != PatternType.MATCH)
        for acl_id, acl in by_name.get(acl_filter.resource_name, ()) if exact else acls:
            if acl_filter.matches(acl):
                if len(removed) >= MAX_RECORDS_PER_USER_OP:
                    return _too_many_deletions(request)
                removed.setdefault(acl_id)
                matching.append(DA.DeleteAclsMatchingAcl(
                    error_code=0, resource_type=acl.resource_type,
                    resource_name=acl.resource_name, pattern_type=acl.pattern_type,
                    principal=acl.principal, host=acl.host, operation=acl.operation,
                    permission_type=acl.permission_type))
        results.append(DA.DeleteAclsFilterResult(error_code=0, matching_acls=matching))
    records = tuple(record(M.RemoveAccessControlEntryRecord(id=acl_id), 0) for acl_id in removed)
    return ControllerResult(records, DA(filter_results=results), True)


def _too_many_deletions(request: M.DeleteAclsRequest) -> ControllerResult[M.DeleteAclsResponse]:
    """Kafka refuses the whole request (``deleteAcls`` turns its bound into
    INVALID_REQUEST, and every filter gets that answer); nothing is removed."""
    failed = DA.DeleteAclsFilterResult(
        error_code=int(ErrorCode.INVALID_REQUEST), matching_acls=(),
        error_message=f"Cannot remove more than {MAX_RECORDS_PER_USER_OP} acls in a single "
                      "delete operation.")
    return ControllerResult((), DA(filter_results=[failed] * len(request.filters)), True)


# ================================================================ DescribeAcls

DSA = M.DescribeAclsResponse


def describe_acls(image: MetadataImage, request: M.DescribeAclsRequest
                  ) -> M.DescribeAclsResponse:
    """The ACLs matching the filter, grouped by resource pattern (give the committed image)."""
    acl_filter = AclFilter.from_describe(request)
    problem = acl_filter.problem()
    if problem is not None:
        return DSA(error_code=int(ErrorCode.INVALID_REQUEST), error_message=problem, resources=())
    return DSA(error_code=0, resources=group_by_resource(
        acl for _, acl in _sorted_acls(image) if acl_filter.matches(acl)))


def group_by_resource(acls: Iterable[Acl]) -> list[Any]:
    """Kafka's ``DescribeAclsResponse.aclsResources``: one entry per resource pattern."""
    grouped: dict[tuple[int, str, int], list[Any]] = {}
    for acl in acls:
        grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
            DSA.AclDescription(principal=acl.principal, host=acl.host, operation=acl.operation,
                               permission_type=acl.permission_type))
    return [DSA.DescribeAclsResource(resource_type=t, resource_name=n, pattern_type=p, acls=descs)
            for (t, n, p), descs in sorted(grouped.items())]
