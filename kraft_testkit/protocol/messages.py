"""The generated message classes, by name and by the ids Kafka gives them.

``from kraft_testkit.protocol.messages import TopicRecord, VoteRequest`` gives the classes of the
released protocol. The seeds' draft metadata records live in :data:`DRAFT_METADATA` (same names,
other ids), the 2023 pre-release shapes in :data:`PRERELEASE_METADATA`.
"""

from __future__ import annotations

from .codegen import Message, build_message_class
from .schema import MessageSpec
from .schemas import all_specs

#: released metadata records by api key (frame version 1)
METADATA: dict[int, type[Message]] = {}
#: the seeds' draft dialect (KIP-631 as revised by KIP-746, frame version 0) by type id
DRAFT_METADATA: dict[int, type[Message]] = {}
#: pre-release shapes found in real logs, by (api key, version)
PRERELEASE_METADATA: dict[tuple[int, int], type[Message]] = {}
#: requests and responses by api key
REQUESTS: dict[int, type[Message]] = {}
RESPONSES: dict[int, type[Message]] = {}
#: control records by control record type id
CONTROL: dict[int, type[Message]] = {}
#: every released class by name
BY_NAME: dict[str, type[Message]] = {}


def _register(spec: MessageSpec) -> None:
    dialect = spec.extra.get("dialect")
    cls = build_message_class(spec, __name__ if dialect is None else f"{__name__}.{dialect}")
    if dialect == "draft":
        DRAFT_METADATA[spec.api_key] = cls
        return
    if dialect is not None:
        for v in range(spec.versions.lo, spec.versions.hi + 1):
            PRERELEASE_METADATA[(spec.api_key, v)] = cls
        return
    if spec.name in BY_NAME:
        raise RuntimeError(f"two declarations named {spec.name}")
    BY_NAME[spec.name] = cls
    if spec.kind == "metadata":
        METADATA[spec.api_key] = cls
    elif spec.kind == "request":
        REQUESTS[spec.api_key] = cls
    elif spec.kind == "response":
        RESPONSES[spec.api_key] = cls
    if "control_type" in spec.extra:
        CONTROL[spec.extra["control_type"]] = cls


for _spec in all_specs():
    _register(_spec)

globals().update(BY_NAME)


def __getattr__(name: str) -> type[Message]:
    try:
        return BY_NAME[name]
    except KeyError:
        raise AttributeError(f"no message named {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(BY_NAME))
