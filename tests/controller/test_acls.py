"""CreateAcls, DeleteAcls and DescribeAcls against Kafka's validation and filter rules."""

from __future__ import annotations

import pytest
from admin_helpers import (
    ALLOW,
    ANY,
    DENY,
    OP_ALL,
    OP_ANY,
    OP_READ,
    OP_WRITE,
    P_ANY,
    P_LITERAL,
    P_MATCH,
    P_PREFIXED,
    R_CLUSTER,
    R_GROUP,
    R_TOPIC,
    acl,
    apply,
    context,
    create_acls,
    delete_filter,
    describe_acls,
    messages,
    roundtrip,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from kraft_testkit.controller.acls import AclFilter, delete_acls
from kraft_testkit.controller.acls import create_acls as create
from kraft_testkit.controller.acls import describe_acls as describe
from kraft_testkit.metadata import Acl, MetadataImage
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E


def run_create(*creations, image=None, seed=7):
    ctx = context(image, seed=seed)
    return ctx.image, create(ctx, create_acls(*creations))


def with_acls(*creations) -> MetadataImage:
    image, result = run_create(*creations)
    assert all(r.error_code == 0 for r in result.response.results)
    return apply(image, result)


def stored(image: MetadataImage) -> set[Acl]:
    return set(image.acls.acls.values())


def test_create_writes_records_with_random_ids_and_replays():
    image, result = run_create(acl(), acl(operation=OP_WRITE, permission=DENY),
                               acl(R_GROUP, "g", P_PREFIXED))
    assert [r.error_code for r in result.response.results] == [0, 0, 0]
    records = messages(result)
    assert all(isinstance(m, M.AccessControlEntryRecord) for m in records)
    assert len({m.id for m in records}) == 3
    after = apply(image, result)
    assert stored(after) == {
        Acl(R_TOPIC, "orders", P_LITERAL, "User:alice", "*", OP_READ, ALLOW),
        Acl(R_TOPIC, "orders", P_LITERAL, "User:alice", "*", OP_WRITE, DENY),
        Acl(R_GROUP, "g", P_PREFIXED, "User:alice", "*", OP_READ, ALLOW)}
    assert set(after.acls.acls) == {m.id for m in records}


def test_ids_are_deterministic_per_seed():
    ids = [[m.id for m in messages(run_create(acl(), acl(name="x"), seed=s)[1])] for s in (1, 1, 2)]
    assert ids[0] == ids[1] != ids[2]


def test_existing_and_repeated_acls_succeed_but_are_written_once():
    image = with_acls(acl())
    _, result = run_create(acl(), acl(name="new"), acl(name="new"), image=image)
    assert [r.error_code for r in result.response.results] == [0, 0, 0]
    assert [m.resource_name for m in messages(result)] == ["new"]


def test_new_ids_avoid_existing_ones():
    image = with_acls(acl())
    existing = set(image.acls.acls)
    _, result = run_create(acl(name="other"), image=image)  # same seed as the first creation
    assert messages(result)[0].id not in existing


@pytest.mark.parametrize("creation,message", [
    (acl(R_CLUSTER, "my-cluster"), "The only valid name for the CLUSTER resource is kafka-cluster"),
    (acl(name=""), "Invalid empty resource name"),
    (acl(resource_type=0), "Invalid resourceType UNKNOWN"),
    (acl(resource_type=1), "Invalid resourceType ANY"),
    (acl(resource_type=42), "Invalid resourceType UNKNOWN"),
    (acl(pattern=P_MATCH), "Invalid patternType MATCH"),
    (acl(pattern=P_ANY), "Invalid patternType ANY"),
    (acl(pattern=0), "Invalid patternType UNKNOWN"),
    (acl(operation=OP_ANY), "Invalid operation ANY"),
    (acl(operation=0), "Invalid operation UNKNOWN"),
    (acl(operation=99), "Invalid operation UNKNOWN"),
    (acl(permission=ANY), "Invalid permissionType ANY"),
    (acl(permission=0), "Invalid permissionType UNKNOWN"),
    (acl(principal="alice"), "no colon is present"),
])
def test_invalid_creations(creation, message):
    _, result = run_create(acl(name="fine"), creation)
    good, bad = result.response.results
    assert good.error_code == 0
    assert bad.error_code == E.INVALID_REQUEST and message in bad.error_message
    assert [m.resource_name for m in messages(result)] == ["fine"]


def test_cluster_acl_and_other_principal_types_are_fine():
    _, result = run_create(acl(R_CLUSTER, "kafka-cluster", operation=OP_ALL),
                           acl(principal="Group:ops"), acl(principal="User:"))
    assert [r.error_code for r in result.response.results] == [0, 0, 0]


# ================================================================ filters


def sample_image() -> MetadataImage:
    return with_acls(
        acl(R_TOPIC, "orders", P_LITERAL, "User:alice"),
        acl(R_TOPIC, "*", P_LITERAL, "User:bob", operation=OP_WRITE),
        acl(R_TOPIC, "ord", P_PREFIXED, "User:carol", host="10.0.0.1", permission=DENY),
        acl(R_TOPIC, "payments", P_LITERAL, "User:alice", operation=OP_WRITE),
        acl(R_GROUP, "orders", P_LITERAL, "User:alice"))


def names(response) -> list[tuple]:
    return [(r.resource_type, r.resource_name, r.pattern_type, a.principal)
            for r in response.resources for a in r.acls]


def test_describe_filters():
    image = sample_image()
    everything = describe(image, describe_acls())
    assert everything.error_code == 0 and len(names(everything)) == 5
    literal = describe(image, describe_acls(R_TOPIC, "orders", P_LITERAL))
    assert names(literal) == [(R_TOPIC, "orders", P_LITERAL, "User:alice")]
    any_pattern = describe(image, describe_acls(R_TOPIC, "orders", P_ANY))
    assert names(any_pattern) == [(R_TOPIC, "orders", P_LITERAL, "User:alice")]
    match = describe(image, describe_acls(R_TOPIC, "orders", P_MATCH))
    assert sorted(names(match)) == sorted([(R_TOPIC, "orders", P_LITERAL, "User:alice"),
                                           (R_TOPIC, "*", P_LITERAL, "User:bob"),
                                           (R_TOPIC, "ord", P_PREFIXED, "User:carol")])
    prefixed = describe(image, describe_acls(R_TOPIC, None, P_PREFIXED))
    assert names(prefixed) == [(R_TOPIC, "ord", P_PREFIXED, "User:carol")]
    by_entry = describe(image, describe_acls(principal="User:alice", operation=OP_WRITE))
    assert names(by_entry) == [(R_TOPIC, "payments", P_LITERAL, "User:alice")]
    by_host = describe(image, describe_acls(host="10.0.0.1", permission=DENY))
    assert names(by_host) == [(R_TOPIC, "ord", P_PREFIXED, "User:carol")]
    assert names(describe(image, describe_acls(R_GROUP))) == [
        (R_GROUP, "orders", P_LITERAL, "User:alice")]


def test_describe_groups_acls_by_resource_and_encodes():
    image = with_acls(acl(), acl(operation=OP_WRITE), acl(principal="User:bob"))
    response = describe(image, describe_acls())
    assert [(r.resource_name, len(r.acls)) for r in response.resources] == [("orders", 3)]
    for version in range(4):  # all literal: v0 (no pattern type field) can carry it too
        assert roundtrip(response, version) == response


@pytest.mark.parametrize("request_", [
    describe_acls(resource_type=0), describe_acls(pattern=0), describe_acls(operation=0),
    describe_acls(permission=0), describe_acls(resource_type=77)])
def test_describe_unknown_filter_parts(request_):
    response = describe(sample_image(), request_)
    assert response.error_code == E.INVALID_REQUEST and response.resources == ()


def test_delete_by_filters_removes_each_acl_once():
    image = sample_image()
    ctx = context(image)
    result = delete_acls(ctx, M.DeleteAclsRequest(filters=[
        delete_filter(R_TOPIC, "orders", P_MATCH),
        delete_filter(principal="User:alice"),
        delete_filter(resource_type=0)]))
    first, second, bad = result.response.filter_results
    assert first.error_code == 0 and len(first.matching_acls) == 3
    assert second.error_code == 0 and len(second.matching_acls) == 3
    assert (bad.error_code, bad.error_message) == (E.INVALID_REQUEST, "Unknown patternFilter.")
    records = messages(result)
    assert all(isinstance(m, M.RemoveAccessControlEntryRecord) for m in records)
    assert len(records) == len({m.id for m in records}) == 5  # alice's orders ACL matched twice
    assert apply(image, result).acls.acls == {}
    for version in range(1, 4):  # v0 cannot carry the PREFIXED pattern matched here
        assert roundtrip(result.response, version) == result.response


def test_delete_matching_nothing_and_unknown_entry_filter():
    ctx = context(sample_image())
    result = delete_acls(ctx, M.DeleteAclsRequest(filters=[
        delete_filter(R_TOPIC, "nothing", P_LITERAL), delete_filter(operation=0)]))
    none, bad = result.response.filter_results
    assert (none.error_code, none.matching_acls) == (0, ())
    assert (bad.error_code, bad.error_message) == (E.INVALID_REQUEST, "Unknown entryFilter.")
    assert result.records == ()


def test_deleted_acl_fields_are_reported():
    ctx = context(with_acls(acl(R_GROUP, "g", P_PREFIXED, "User:x", "h", OP_WRITE, DENY)))
    result = delete_acls(ctx, M.DeleteAclsRequest(filters=[delete_filter()]))
    [matched] = result.response.filter_results[0].matching_acls
    assert (matched.resource_type, matched.resource_name, matched.pattern_type,
            matched.principal, matched.host, matched.operation, matched.permission_type) == (
        R_GROUP, "g", P_PREFIXED, "User:x", "h", OP_WRITE, DENY)


# ================================================================ matching rules as a property

ACLS = st.builds(
    Acl, st.sampled_from([R_TOPIC, R_GROUP]), st.sampled_from(["a", "ab", "abc", "b", "*"]),
    st.sampled_from([P_LITERAL, P_PREFIXED]), st.sampled_from(["User:x", "User:y"]),
    st.sampled_from(["*", "h1"]), st.sampled_from([OP_READ, OP_WRITE, OP_ALL]),
    st.sampled_from([ALLOW, DENY]))
FILTERS = st.builds(
    AclFilter, st.sampled_from([1, R_TOPIC, R_GROUP]),
    st.sampled_from([None, "a", "ab", "abc", "*"]),
    st.sampled_from([P_ANY, P_MATCH, P_LITERAL, P_PREFIXED]),
    st.sampled_from([None, "User:x"]), st.sampled_from([None, "*", "h1"]),
    st.sampled_from([OP_ANY, OP_READ, OP_ALL]), st.sampled_from([ANY, ALLOW, DENY]))


def reference_match(f: AclFilter, a: Acl) -> bool:
    """Kafka's rules, spelled out case by case."""
    if f.resource_type not in (1, a.resource_type):
        return False
    if f.pattern_type in (P_LITERAL, P_PREFIXED) and f.pattern_type != a.pattern_type:
        return False
    if f.resource_name is not None:
        if f.pattern_type == P_MATCH:
            if a.pattern_type == P_LITERAL:
                ok = a.resource_name in (f.resource_name, "*")
            else:
                ok = f.resource_name.startswith(a.resource_name)
            if not ok:
                return False
        elif f.resource_name != a.resource_name:
            return False
    return ((f.principal is None or f.principal == a.principal)
            and (f.host is None or f.host == a.host)
            and f.operation in (OP_ANY, a.operation)
            and f.permission_type in (ANY, a.permission_type))


@settings(max_examples=200, deadline=None)
@given(acls=st.lists(ACLS, max_size=8, unique=True), f=FILTERS)
def test_delete_and_describe_follow_the_matching_rules(acls, f):
    image = MetadataImage.EMPTY
    if acls:
        image = with_acls(*(M.CreateAclsRequest.AclCreation(
            resource_type=a.resource_type, resource_name=a.resource_name,
            resource_pattern_type=a.pattern_type, principal=a.principal, host=a.host,
            operation=a.operation, permission_type=a.permission_type) for a in acls))
    expected = {a for a in acls if reference_match(f, a)}
    request = M.DescribeAclsRequest(
        resource_type_filter=f.resource_type, resource_name_filter=f.resource_name,
        pattern_type_filter=f.pattern_type, principal_filter=f.principal, host_filter=f.host,
        operation=f.operation, permission_type=f.permission_type)
    described = {Acl(r.resource_type, r.resource_name, r.pattern_type, d.principal, d.host,
                     d.operation, d.permission_type)
                 for r in describe(image, request).resources for d in r.acls}
    assert described == expected
    result = delete_acls(context(image), M.DeleteAclsRequest(filters=[delete_filter(
        f.resource_type, f.resource_name, f.pattern_type, f.principal, f.host, f.operation,
        f.permission_type)]))
    assert stored(apply(image, result)) == set(acls) - expected
