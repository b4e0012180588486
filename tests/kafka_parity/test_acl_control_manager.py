"""AclControlManagerTest (Kafka 4.2.1): CreateAcls / DeleteAcls through the kit's controller
commands on a replayed image. Kafka's tests call validateNewAcl / validateFilter directly; the
kit's seams are validate_new_acl and AclFilter.problem."""

from __future__ import annotations

import random

import pytest

from kraft_testkit.config import NodeConfig
from kraft_testkit.controller.acls import (MAX_RECORDS_PER_USER_OP, AclFilter, AclOperation,
                                           AclPermissionType, PatternType, ResourceType,
                                           create_acls, delete_acls, validate_new_acl)
from kraft_testkit.controller.result import ControllerContext
from kraft_testkit.metadata import Acl, MetadataImage
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E
from kraft_testkit.protocol.uuid import Uuid

T, LIT, PRE, MATCH = ResourceType.TOPIC, PatternType.LITERAL, PatternType.PREFIXED, PatternType.MATCH
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def acl(rtype=T, name="*", pattern=LIT, principal="User:*", host="*", op=AclOperation.ALTER,
        perm=ALLOW) -> Acl:
    return Acl(int(rtype), name, int(pattern), principal, host, int(op), int(perm))


# StandardAclWithIdTest.TEST_ACLS (ids and StandardAclTest.TEST_ACLS bindings as there)
TEST_ACLS = [
    (Uuid.parse("QZDDv-R7SyaPgetDPGd0Mw"),
     acl(ResourceType.CLUSTER, "kafka-cluster", LIT, "User:*", "*", AclOperation.ALTER, ALLOW)),
    (Uuid.parse("SdDjEdlbRmy2__WFKe3RMg"),
     acl(T, "foo_", PRE, "User:*", "*", AclOperation.READ, ALLOW)),
    (Uuid.parse("wQzt5gkSTwuQNXZF5gIw7A"),
     acl(ResourceType.GROUP, "mygroup", LIT, "User:foo", "*", AclOperation.READ, DENY)),
    (Uuid.parse("ab_5xjJXSbS1o5jGfhgQXg"),
     acl(ResourceType.GROUP, "mygroup", PRE, "User:foo", "*", AclOperation.READ, DENY)),
    (Uuid.parse("wP_cCK0LTEGSX9oDRInJHQ"),
     acl(ResourceType.GROUP, "foo", PRE, "User:foo", "*", AclOperation.READ, DENY)),
]


class Manager:
    def __init__(self) -> None:
        self.image = MetadataImage.EMPTY
        self.rng = random.Random(0)

    def ctx(self) -> ControllerContext:
        return ControllerContext(self.image, 0, self.rng, NodeConfig(), "c", 3000)

    def replay(self, records) -> None:
        self.image = self.image.replay(tuple(records))

    def create(self, acls):
        C = M.CreateAclsRequest.AclCreation
        return create_acls(self.ctx(), M.CreateAclsRequest(creations=[C(
            resource_type=a.resource_type, resource_name=a.resource_name,
            resource_pattern_type=a.pattern_type, principal=a.principal, host=a.host,
            operation=a.operation, permission_type=a.permission_type) for a in acls]))

    def delete(self, filters):
        F = M.DeleteAclsRequest.DeleteAclsFilter
        return delete_acls(self.ctx(), M.DeleteAclsRequest(filters=[F(
            resource_type_filter=f[0], resource_name_filter=f[1], pattern_type_filter=f[2],
            principal_filter=f[3], host_filter=f[4], operation=f[5], permission_type=f[6])
            for f in filters]))

    def acls(self) -> dict:
        return dict(self.image.acls.acls)


ANY_FILTER = (ResourceType.ANY, None, PatternType.ANY, None, None, AclOperation.ANY,
              AclPermissionType.ANY)


def filter_of(a: Acl):
    return (a.resource_type, a.resource_name, a.pattern_type, a.principal, a.host, a.operation,
            a.permission_type)


def entry_record(acl_id, a: Acl) -> M.AccessControlEntryRecord:
    return M.AccessControlEntryRecord(id=acl_id, **a._asdict())


@pytest.mark.kafka("AclControlManagerTest#testValidateNewAcl")
def test_validate_new_acl():
    assert validate_new_acl(acl()) is None
    assert validate_new_acl(acl(pattern=PatternType.UNKNOWN)) == (
        E.INVALID_REQUEST, "Invalid patternType UNKNOWN")
    assert validate_new_acl(acl(rtype=ResourceType.UNKNOWN)) == (
        E.INVALID_REQUEST, "Invalid resourceType UNKNOWN")
    assert validate_new_acl(acl(op=AclOperation.UNKNOWN)) == (
        E.INVALID_REQUEST, "Invalid operation UNKNOWN")
    assert validate_new_acl(acl(perm=AclPermissionType.UNKNOWN)) == (
        E.INVALID_REQUEST, "Invalid permissionType UNKNOWN")


@pytest.mark.kafka("AclControlManagerTest#testValidateAclWithBadPrincipal")
def test_validate_acl_with_bad_principal():
    assert validate_new_acl(acl(principal="invalid")) == (
        E.INVALID_REQUEST, "Could not parse principal from `invalid` (no colon is present "
                           "separating the principal type from the principal name)")


@pytest.mark.kafka("AclControlManagerTest#testValidateAclWithEmptyPrincipal")
def test_validate_acl_with_empty_principal():
    assert validate_new_acl(acl(principal="")) == (
        E.INVALID_REQUEST, "Could not parse principal from `` (no colon is present "
                           "separating the principal type from the principal name)")


@pytest.mark.kafka("AclControlManagerTest#testValidateFilter")
def test_validate_filter():
    ok = AclFilter(ResourceType.ANY, "*", LIT, "User:*", "*", AclOperation.ANY,
                   AclPermissionType.ANY)
    assert ok.problem() is None
    assert AclFilter(ResourceType.ANY, "*", PatternType.UNKNOWN, "User:*", "*",
                     AclOperation.ANY, AclPermissionType.ANY).problem() == "Unknown patternFilter."
    assert AclFilter(ResourceType.ANY, "*", MATCH, "User:*", "*", AclOperation.ANY,
                     AclPermissionType.UNKNOWN).problem() == "Unknown entryFilter."


@pytest.mark.kafka("AclControlManagerTest#testLoadSnapshot")
def test_load_snapshot():
    """Replaying the records gives back the same ACLs by id; an empty image has none (Kafka
    reverts its snapshot registry; the kit keeps the image from before)."""
    m = Manager()
    before = m.image
    m.replay(entry_record(i, a) for i, a in TEST_ACLS)
    assert m.acls() == dict(TEST_ACLS)
    assert {entry_record(i, a) for i, a in m.acls().items()} == \
        {entry_record(i, a) for i, a in TEST_ACLS}
    assert dict(before.acls.acls) == {}


@pytest.mark.kafka("AclControlManagerTest#testAddAndDelete")
def test_add_and_delete():
    m = Manager()
    acl_id, a = TEST_ACLS[0]
    m.replay([entry_record(acl_id, a), M.RemoveAccessControlEntryRecord(id=acl_id)])
    assert m.acls() == {}


@pytest.mark.kafka("AclControlManagerTest#testCreateAclDeleteAcl")
def test_create_acl_delete_acl():
    m = Manager()
    result = m.create([a for _, a in TEST_ACLS[:3]] + [acl(pattern=PatternType.UNKNOWN)])
    assert [r.error_code for r in result.response.results] == [0, 0, 0, E.INVALID_REQUEST]
    assert result.response.results[3].error_message == "Invalid patternType UNKNOWN"
    m.replay(result.records)
    assert m.acls()
    deleted = m.delete([
        (ResourceType.ANY, None, LIT, None, None, AclOperation.ANY, AclPermissionType.ANY),
        (ResourceType.UNKNOWN, None, LIT, None, None, AclOperation.ANY, AclPermissionType.ANY)])
    first, second = deleted.response.filter_results
    assert first.error_code == 0
    assert {(d.resource_type, d.resource_name, d.pattern_type, d.principal, d.host, d.operation,
             d.permission_type) for d in first.matching_acls} == \
        {filter_of(TEST_ACLS[0][1]), filter_of(TEST_ACLS[2][1])}
    assert second.error_code == E.INVALID_REQUEST
    m.replay(deleted.records)
    assert list(m.acls().values()) == [TEST_ACLS[1][1]]


BINDING = acl(T, "topic-1", LIT, "User:user", "10.0.0.1", AclOperation.ALL, ALLOW)


@pytest.mark.kafka("AclControlManagerTest#testCreateDedupe")
def test_create_dedupe():
    m = Manager()
    result = m.create([BINDING, BINDING])
    m.replay(result.records)
    assert len(result.records) == 1 and len(m.acls()) == 1
    assert len(m.create([BINDING]).records) == 0 and len(m.acls()) == 1


@pytest.mark.kafka("AclControlManagerTest#testDeleteDedupe")
def test_delete_dedupe():
    m = Manager()
    created = m.create([BINDING])
    m.replay(created.records)
    acl_id = created.records[0].message.id
    for filters, results in (([ANY_FILTER], 1), ([filter_of(BINDING)], 1),
                             ([ANY_FILTER, filter_of(BINDING)], 2)):
        deleted = m.delete(filters)
        assert [r.message.id for r in deleted.records] == [acl_id]
        assert len(deleted.response.filter_results) == results


@pytest.mark.kafka("AclControlManagerTest#testDeleteExceedsMaxRecords")
def test_delete_exceeds_max_records():
    m = Manager()
    new = [acl(T, f"mytopic_{i}", LIT, "User:alice", "127.0.0.1", AclOperation.READ, ALLOW)
           for i in range(MAX_RECORDS_PER_USER_OP + 2)]
    first, second = m.create(new[0::2]), m.create(new[1::2])
    for result in (first, second):
        assert len(result.response.results) == MAX_RECORDS_PER_USER_OP // 2 + 1
        assert all(r.error_code == 0 for r in result.response.results)
    m.replay(first.records)
    m.replay(second.records)
    deleted = m.delete([(T, f"mytopic_{i}", LIT, None, None, AclOperation.ANY,
                         AclPermissionType.ANY) for i in range(MAX_RECORDS_PER_USER_OP + 2)])
    assert deleted.records == ()
    assert {(r.error_code, r.error_message) for r in deleted.response.filter_results} == {
        (E.INVALID_REQUEST, "Cannot remove more than 10000 acls in a single delete operation.")}
