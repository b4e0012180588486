"""Answers shaped for the version the client speaks.

Handlers build one response for every version (the controller answers at the newest); Kafka's
brokers set a field only when the request's version carries it, and Kafka's generated writers
refuse a non-default value in a field the version lacks (unless it is ignorable). So before
encoding, every field the version does not carry goes back to its default, in nested structs
too: an old client gets what an old broker would have sent.
"""

from __future__ import annotations

from kraft_testkit.protocol.codegen import Message


def fit_to_version(msg: Message, version: int) -> Message:
    cls = type(msg)
    changes = {}
    for i, (spec, value) in enumerate(zip(cls._field_specs, msg)):
        name = cls._names[i]
        if version not in spec.versions:
            if value != cls._defaults[i]:
                changes[name] = cls._defaults[i]
            continue
        if isinstance(value, Message):
            fitted = fit_to_version(value, version)
            if fitted is not value:
                changes[name] = fitted
        elif isinstance(value, tuple) and value and isinstance(value[0], Message):
            items = tuple(fit_to_version(v, version) for v in value)
            if any(a is not b for a, b in zip(items, value)):
                changes[name] = items
    return msg.replace(**changes) if changes else msg
