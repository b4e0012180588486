"""AlterClientQuotas and DescribeClientQuotas against Kafka's rules."""

from __future__ import annotations

import math

import pytest
from admin_helpers import (
    alter_quotas,
    apply,
    context,
    messages,
    quota_entry,
    quota_filter,
    roundtrip,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from kraft_testkit.controller.quotas import (
    MATCH_TYPE_DEFAULT,
    MATCH_TYPE_EXACT,
    MATCH_TYPE_SPECIFIED,
    alter_client_quotas,
    describe_client_quotas,
)
from kraft_testkit.metadata import MetadataImage
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E

USER, CLIENT, IP = "user", "client-id", "ip"


def run(*entries, image=None, validate_only=False):
    ctx = context(image)
    return ctx.image, alter_client_quotas(ctx, alter_quotas(*entries, validate_only=validate_only))


def results(result) -> list[tuple[tuple, int]]:
    return [(tuple((e.entity_type, e.entity_name) for e in entry.entity), entry.error_code)
            for entry in result.response.entries]


def test_set_values_and_replay():
    image, result = run(quota_entry({USER: "alice"}, ("producer_byte_rate", 1024.0),
                                    ("request_percentage", 12.5)),
                        quota_entry({USER: "alice", CLIENT: "app"}, ("consumer_byte_rate", 2e6)),
                        quota_entry({CLIENT: None}, ("controller_mutation_rate", 3.0)),
                        quota_entry({IP: "10.0.0.1"}, ("connection_creation_rate", 50.0)),
                        quota_entry({IP: None}, ("connection_creation_rate", 20.0)))
    assert [code for _, code in results(result)] == [0] * 5
    assert len(result.records) == 6
    first = messages(result)[0]
    assert first == M.ClientQuotaRecord(
        entity=[M.ClientQuotaRecord.EntityData(entity_type=USER, entity_name="alice")],
        key="producer_byte_rate", value=1024.0, remove=False)
    after = apply(image, result)
    assert dict(after.client_quotas.get((USER, "alice"))) == {"producer_byte_rate": 1024.0,
                                                            "request_percentage": 12.5}
    assert dict(after.client_quotas.get((CLIENT, "app"), (USER, "alice"))) == {
        "consumer_byte_rate": 2e6}
    assert dict(after.client_quotas.get((CLIENT, None))) == {"controller_mutation_rate": 3.0}
    assert dict(after.client_quotas.get((IP, None))) == {"connection_creation_rate": 20.0}


def test_remove_and_unchanged_values():
    image, first = run(quota_entry({USER: "alice"}, ("producer_byte_rate", 1024.0),
                                   ("consumer_byte_rate", 2048.0)))
    image = apply(image, first)
    _, result = run(quota_entry({USER: "alice"}, ("producer_byte_rate", 1024.0),
                                ("consumer_byte_rate", None), ("request_percentage", None)),
                    image=image)
    assert results(result) == [(((USER, "alice"),), 0)]
    # same value: nothing; removing an absent key: nothing; removing a present key: one record
    assert messages(result) == [M.ClientQuotaRecord(
        entity=[M.ClientQuotaRecord.EntityData(entity_type=USER, entity_name="alice")],
        key="consumer_byte_rate", remove=True)]
    after = apply(image, result)
    assert dict(after.client_quotas.get((USER, "alice"))) == {"producer_byte_rate": 1024.0}
    _, last = run(quota_entry({USER: "alice"}, ("producer_byte_rate", None)), image=after)
    assert apply(after, last).client_quotas.entities == {}


@pytest.mark.parametrize("entity,ops,message", [
    ({}, [("producer_byte_rate", 1.0)], "Invalid empty client quota entity"),
    ({"group": "g"}, [("producer_byte_rate", 1.0)], "Unhandled client quota entity type: group"),
    ({USER: ""}, [("producer_byte_rate", 1.0)], "Empty user not supported"),
    ({USER: "a", IP: "1.2.3.4"}, [("producer_byte_rate", 1.0)], "IP entity"),
    ({IP: "not-an-ip"}, [("connection_creation_rate", 1.0)], "not a valid IP"),
    ({USER: "a"}, [("connection_creation_rate", 1.0)], "Invalid configuration key"),
    ({IP: "::1"}, [("producer_byte_rate", 1.0)], "Invalid configuration key"),
    ({USER: "a"}, [("producer_byte_rate", 0.0)], "must be greater than 0"),
    ({USER: "a"}, [("request_percentage", -1.0)], "must be greater than 0"),
    ({USER: "a"}, [("producer_byte_rate", 10.5)], "cannot be a fractional value"),
    ({IP: "1.2.3.4"}, [("connection_creation_rate", 2.0**31)], "too large for an INT"),
    ({USER: "a"}, [("consumer_byte_rate", 1e19)], "too large for a LONG"),
    ({USER: "a"}, [("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)],
     "Ignoring duplicate entity"),
])
def test_invalid_entries_are_invalid_request(entity, ops, message):
    _, result = run(quota_entry(entity, *ops))
    [entry] = result.response.entries
    assert entry.error_code == E.INVALID_REQUEST and message in entry.error_message
    assert result.records == ()


def test_one_bad_key_fails_the_whole_entry_but_not_others():
    _, result = run(quota_entry({USER: "a"}, ("producer_byte_rate", 5.0), ("bogus", 1.0)),
                    quota_entry({USER: "b"}, ("producer_byte_rate", 5.0)))
    assert results(result) == [(((USER, "a"),), E.INVALID_REQUEST), (((USER, "b"),), 0)]
    assert [m.entity[0].entity_name for m in messages(result)] == ["b"]


def test_duplicate_entity_keeps_first_records_as_kafka_does():
    _, result = run(quota_entry({USER: "a"}, ("producer_byte_rate", 5.0)),
                    quota_entry({USER: "a"}, ("consumer_byte_rate", 6.0)))
    assert results(result) == [(((USER, "a"),), E.INVALID_REQUEST)]
    assert "Ignoring duplicate entity" in result.response.entries[0].error_message
    assert [m.key for m in messages(result)] == ["producer_byte_rate"]


def test_duplicate_entity_types_in_an_entity_keep_the_last_name():
    _, result = run(quota_entry([(USER, "a"), (USER, "b")], ("producer_byte_rate", 5.0)))
    assert results(result) == [(((USER, "b"),), 0)]


def test_integral_values_tolerate_tiny_error_and_nan_passes_like_kafka():
    _, result = run(quota_entry({USER: "a"}, ("producer_byte_rate", 100.0000001),
                                ("request_percentage", math.nan)))
    assert results(result)[0][1] == 0


def test_validate_only_and_empty_request():
    _, result = run(quota_entry({USER: "a"}, ("producer_byte_rate", 5.0)), validate_only=True)
    assert results(result) == [(((USER, "a"),), 0)] and result.records == ()
    _, empty = run()
    assert empty.response.entries == () and empty.records == ()


def test_response_encodes():
    _, result = run(quota_entry({USER: None, CLIENT: "x"}, ("producer_byte_rate", 5.0)),
                    quota_entry({}, ("producer_byte_rate", 5.0)))
    for version in (0, 1):
        assert roundtrip(result.response, version) == result.response


# ================================================================ describe


def image_with_quotas() -> MetadataImage:
    entries = [
        quota_entry({USER: "alice"}, ("producer_byte_rate", 1.0)),
        quota_entry({USER: None}, ("producer_byte_rate", 2.0)),
        quota_entry({USER: "alice", CLIENT: "app"}, ("producer_byte_rate", 3.0)),
        quota_entry({USER: None, CLIENT: None}, ("producer_byte_rate", 4.0)),
        quota_entry({CLIENT: "app"}, ("consumer_byte_rate", 5.0)),
        quota_entry({IP: "10.1.1.1"}, ("connection_creation_rate", 6.0)),
        quota_entry({IP: None}, ("connection_creation_rate", 7.0)),
    ]
    image, result = run(*entries)
    assert all(code == 0 for _, code in results(result))
    return apply(image, result)


def described(request, image=None) -> list[dict]:
    response = describe_client_quotas(image or image_with_quotas(), request)
    assert response.error_code == 0, response.error_message
    return [{e.entity_type: e.entity_name for e in entry.entity} for entry in response.entries]


def test_describe_matching():
    assert described(quota_filter((USER, MATCH_TYPE_EXACT, "alice"))) == [
        {USER: "alice"}, {USER: "alice", CLIENT: "app"}]
    assert described(quota_filter((USER, MATCH_TYPE_EXACT, "alice"), strict=True)) == [
        {USER: "alice"}]
    assert described(quota_filter((USER, MATCH_TYPE_DEFAULT, None))) == [
        {USER: None}, {USER: None, CLIENT: None}]
    assert described(quota_filter((USER, MATCH_TYPE_SPECIFIED, None), strict=True)) == [
        {USER: None}, {USER: "alice"}]  # the default entity counts, as in Kafka's image
    assert described(quota_filter((USER, MATCH_TYPE_SPECIFIED, None),
                                  (CLIENT, MATCH_TYPE_SPECIFIED, None))) == [
        {USER: None, CLIENT: None}, {USER: "alice", CLIENT: "app"}]
    assert described(quota_filter((IP, MATCH_TYPE_SPECIFIED, None))) == [
        {IP: None}, {IP: "10.1.1.1"}]
    assert len(described(quota_filter())) == 7
    assert described(quota_filter(strict=True)) == []


def test_describe_values():
    response = describe_client_quotas(image_with_quotas(),
                                      quota_filter((CLIENT, MATCH_TYPE_EXACT, "app"), strict=True))
    [entry] = response.entries
    assert [(v.key, v.value) for v in entry.values] == [("consumer_byte_rate", 5.0)]
    for version in (0, 1):
        assert roundtrip(response, version) == response


@pytest.mark.parametrize("components,code", [
    ([("", MATCH_TYPE_EXACT, "x")], E.INVALID_REQUEST),
    ([(USER, MATCH_TYPE_EXACT, "x"), (USER, MATCH_TYPE_DEFAULT, None)], E.INVALID_REQUEST),
    ([("group", MATCH_TYPE_EXACT, "x")], E.UNSUPPORTED_VERSION),
    ([(USER, MATCH_TYPE_EXACT, None)], E.INVALID_REQUEST),
    ([(USER, MATCH_TYPE_DEFAULT, "x")], E.INVALID_REQUEST),
    ([(USER, MATCH_TYPE_SPECIFIED, "x")], E.INVALID_REQUEST),
    ([(USER, 9, None)], E.INVALID_REQUEST),
    ([(IP, MATCH_TYPE_SPECIFIED, None), (CLIENT, MATCH_TYPE_DEFAULT, None)], E.INVALID_REQUEST),
])
def test_describe_bad_filters(components, code):
    response = describe_client_quotas(image_with_quotas(), quota_filter(*components))
    assert (response.error_code, response.entries) == (code, None)
    assert roundtrip(response, 1) == response


NAMES = st.sampled_from([None, "a", "b"])
ENTITY = st.one_of(
    st.fixed_dictionaries({USER: NAMES}),
    st.fixed_dictionaries({CLIENT: NAMES}),
    st.fixed_dictionaries({USER: NAMES, CLIENT: NAMES}))
COMPONENT = st.tuples(st.sampled_from([USER, CLIENT]),
                      st.sampled_from([MATCH_TYPE_EXACT, MATCH_TYPE_DEFAULT, MATCH_TYPE_SPECIFIED]),
                      st.sampled_from(["a", "b"]))


@settings(max_examples=60, deadline=None)
@given(entities=st.lists(ENTITY, max_size=6),
       components=st.lists(COMPONENT, max_size=2, unique_by=lambda c: c[0]), strict=st.booleans())
def test_describe_agrees_with_a_plain_reading_of_the_rules(entities, components, strict):
    image, result = run(*(quota_entry(e, ("producer_byte_rate", 1.0)) for e in entities))
    image = apply(image, result)
    filters = [(t, m, v if m == MATCH_TYPE_EXACT else None) for t, m, v in components]
    got = described(quota_filter(*filters, strict=strict), image)
    stored = [dict(k) for k in image.client_quotas.entities]

    def wanted(entity: dict) -> bool:
        for entity_type, match, value in filters:
            if entity_type not in entity:
                return False
            if match == MATCH_TYPE_EXACT and entity[entity_type] != value:
                return False
            if match == MATCH_TYPE_DEFAULT and entity[entity_type] is not None:
                return False
        return not strict or len(entity) == len(filters)

    assert sorted(map(repr, got)) == sorted(repr(e) for e in stored if wanted(e))
