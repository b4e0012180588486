"""The Raft RPCs as they travel: Kafka messages inside a request or response envelope.

Kafka matches a response to its request by the correlation id of the request header; a response
whose id is no longer expected is dropped. The simulated network may duplicate and delay messages,
so replicas need the same guard, and the envelope is how the id travels: ``Request(correlation_id,
body)`` / ``Response(correlation_id, body)``, ``body`` being the protocol class
(``M.FetchRequest``...). There is one envelope class per API, named after its body, so traces read
``FetchRequest`` rather than ``Request``.

:class:`RaftCodec` is the wire mode for envelopes: the id goes into the Kafka request or response
header and the body is encoded at the newest version of its API, as a Kafka connection would.

The builders below make the single-partition messages of ``__cluster_metadata-0``; the readers
return that one partition (``None`` when a message names another topic or several partitions).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.codegen import Message
from kraft_testkit.protocol.rpc import WireCodec, WireFrame
from kraft_testkit.protocol.uuid import Uuid

TOPIC = "__cluster_metadata"
PARTITION = 0
TOPIC_ID = Uuid.METADATA_TOPIC_ID
NO_DIR = Uuid.ZERO


class Request(NamedTuple):
    """A Kafka request and the correlation id of its header."""

    correlation_id: int
    body: Any


class Response(NamedTuple):
    """A Kafka response and the correlation id of the request it answers."""

    correlation_id: int
    body: Any


def _envelopes(base: type, kind: str) -> dict[type, type]:
    table = M.REQUESTS if kind == "request" else M.RESPONSES
    return {cls: type(cls.__name__, (base,), {"__slots__": (), "__module__": __name__})
            for cls in table.values()}


# the envelopes' NamedTuple __new__ without its Python frame (two envelopes per message)
_tuple_new = tuple.__new__
_REQUEST_TYPES = _envelopes(Request, "request")
_RESPONSE_TYPES = _envelopes(Response, "response")
_ENVELOPE_KINDS: dict[type, str] = {
    **dict.fromkeys(_REQUEST_TYPES.values(), "request"),
    **dict.fromkeys(_RESPONSE_TYPES.values(), "response"),
}


def request(correlation_id: int, body: Message) -> Request:
    """Wrap a request body; the envelope's class is named after the body's."""
    return _tuple_new(_REQUEST_TYPES[type(body)], (correlation_id, body))


def response(correlation_id: int, body: Message) -> Response:
    return _tuple_new(_RESPONSE_TYPES[type(body)], (correlation_id, body))


def carrying(*body_types: type) -> Any:
    """A predicate for network filters: envelopes (or bare messages) whose body is one of these."""
    def match(msg: object) -> bool:
        return isinstance(getattr(msg, "body", msg), body_types)
    match.__name__ = "|".join(t.__name__ for t in body_types)
    return match


class RaftCodec:
    """Wire mode for envelopes: Kafka frames with the correlation id in the header.

    Bare protocol messages go through a plain :class:`WireCodec`; other objects pass untouched.
    """

    def __init__(self, versions: dict[int, int] | None = None) -> None:
        self._plain = WireCodec(versions)
        self.versions = self._plain.versions

    @property
    def bytes_sent(self) -> int:
        return self._plain.bytes_sent

    @property
    def frames_sent(self) -> int:
        return self._plain.frames_sent

    def encode(self, msg: object) -> object:
        kind = _ENVELOPE_KINDS.get(type(msg))  # the envelopes of this module, by type
        if kind is not None:
            return self._plain.encode_frame(msg.body, msg.correlation_id, kind,  # type: ignore[attr-defined]
                                            _EnvelopeFrame)
        if isinstance(msg, (Request, Response)):
            kind = "request" if isinstance(msg, Request) else "response"
            return self._plain.encode_frame(msg.body, msg.correlation_id, kind,  # type: ignore[attr-defined]
                                            _EnvelopeFrame)
        return self._plain.encode(msg)

    def decode(self, frame: object) -> object:
        if type(frame) is _EnvelopeFrame:
            correlation_id, body = self._plain.decode_frame(frame)
            return (request if frame.is_request else response)(correlation_id, body)
        return self._plain.decode(frame)


class _EnvelopeFrame(WireFrame):
    """A frame that decodes back into an envelope (the header's correlation id is kept)."""

    __slots__ = ()


# ------------------------------------------------------------------ reading single partitions


def vote_partition(msg: Message) -> Any:
    """The one partition of a Vote/BeginQuorumEpoch/EndQuorumEpoch request or response."""
    topics = msg.topics
    if len(topics) != 1 or topics[0].topic_name != TOPIC:
        return None
    parts = topics[0].partitions
    if len(parts) != 1 or parts[0].partition_index != PARTITION:
        return None
    return parts[0]


def _metadata_partition(topics: Any, partition_attr: str) -> Any:
    """The one partition of ``__cluster_metadata`` in a Fetch topic list (by topic id, or by
    name for old versions); ``None`` when the message names anything else."""
    if len(topics) != 1:
        return None
    t = topics[0]
    if t.topic_id != TOPIC_ID and t.topic != TOPIC:
        return None
    parts = t.partitions
    if len(parts) != 1 or getattr(parts[0], partition_attr) != PARTITION:
        return None
    return parts[0]


def fetch_partition(msg: Message) -> Any:
    """The one partition of a FetchRequest."""
    return _metadata_partition(msg.topics, "partition")


def fetch_response_partition(msg: Message) -> Any:
    """The one partition of a FetchResponse."""
    return _metadata_partition(msg.responses, "partition_index")


def snapshot_partition(msg: Message) -> Any:
    """The one partition of a FetchSnapshot request or response (``None`` if not ours)."""
    topics = msg.topics
    if len(topics) != 1 or topics[0].name != TOPIC:
        return None
    parts = topics[0].partitions
    if len(parts) != 1:
        return None
    p = parts[0]
    index = p.partition if type(msg) is M.FetchSnapshotRequest else p.index
    return p if index == PARTITION else None


def fetch_replica_id(req: Message) -> int:
    """The fetching replica: in the tagged ReplicaState from v15 on, a plain field before."""
    rid = req.replica_state.replica_id
    return rid if rid >= 0 else req.replica_id


# ------------------------------------------------------------------ building messages

_VQ, _VS = M.VoteRequest, M.VoteResponse
_BQ, _BS = M.BeginQuorumEpochRequest, M.BeginQuorumEpochResponse
_EQ, _ES = M.EndQuorumEpochRequest, M.EndQuorumEpochResponse
_FQ, _FS = M.FetchRequest, M.FetchResponse
_SQ, _SS = M.FetchSnapshotRequest, M.FetchSnapshotResponse
_DQ, _DS = M.DescribeQuorumRequest, M.DescribeQuorumResponse


def vote_request(cluster_id: str, epoch: int, candidate_id: int, candidate_dir: Uuid,
                 voter_id: int, voter_dir: Uuid, last_epoch: int, last_offset: int,
                 pre_vote: bool = False) -> Message:
    part = _VQ.PartitionData(partition_index=PARTITION, candidate_epoch=epoch,
                             candidate_id=candidate_id, candidate_directory_id=candidate_dir,
                             voter_directory_id=voter_dir, last_offset_epoch=last_epoch,
                             last_offset=last_offset, pre_vote=pre_vote)
    return _VQ(cluster_id=cluster_id, voter_id=voter_id,
               topics=(_VQ.TopicData(topic_name=TOPIC, partitions=(part,)),))


def vote_response(error: int, epoch: int, leader_id: int, granted: bool) -> Message:
    part = _VS.PartitionData(partition_index=PARTITION, error_code=error, leader_id=leader_id,
                             leader_epoch=epoch, vote_granted=granted)
    return _VS(topics=(_VS.TopicData(topic_name=TOPIC, partitions=(part,)),))


def begin_epoch_request(cluster_id: str, epoch: int, leader_id: int, voter_id: int,
                        voter_dir: Uuid) -> Message:
    part = _BQ.PartitionData(partition_index=PARTITION, voter_directory_id=voter_dir,
                             leader_id=leader_id, leader_epoch=epoch)
    return _BQ(cluster_id=cluster_id, voter_id=voter_id,
               topics=(_BQ.TopicData(topic_name=TOPIC, partitions=(part,)),))


def begin_epoch_response(error: int, epoch: int, leader_id: int) -> Message:
    part = _BS.PartitionData(partition_index=PARTITION, error_code=error, leader_id=leader_id,
                             leader_epoch=epoch)
    return _BS(topics=(_BS.TopicData(topic_name=TOPIC, partitions=(part,)),))


def end_epoch_request(cluster_id: str, epoch: int, leader_id: int,
                      successors: list[tuple[int, Uuid]]) -> Message:
    candidates = tuple(_EQ.ReplicaInfo(candidate_id=i, candidate_directory_id=d)
                       for i, d in successors)
    part = _EQ.PartitionData(partition_index=PARTITION, leader_id=leader_id, leader_epoch=epoch,
                             preferred_candidates=candidates)  # v1; v0 had PreferredSuccessors
    return _EQ(cluster_id=cluster_id,
               topics=(_EQ.TopicData(topic_name=TOPIC, partitions=(part,)),))


def end_epoch_response(error: int, epoch: int, leader_id: int) -> Message:
    part = _ES.PartitionData(partition_index=PARTITION, error_code=error, leader_id=leader_id,
                             leader_epoch=epoch)
    return _ES(topics=(_ES.TopicData(topic_name=TOPIC, partitions=(part,)),))


def preferred_successors(part: Any) -> list[int]:
    """Successor ids of an EndQuorumEpoch partition (v1 candidates, or the v0 id list)."""
    if part.preferred_candidates:
        return [c.candidate_id for c in part.preferred_candidates]
    return list(part.preferred_successors)


NO_HIGH_WATERMARK = (1 << 63) - 1  # Fetch v18's "not supported" (what the kit's replicas send)


def fetch_request(cluster_id: str, replica_id: int, replica_dir: Uuid, epoch: int,
                  fetch_offset: int, last_epoch: int, max_wait_ms: int, max_bytes: int,
                  high_watermark: int = NO_HIGH_WATERMARK) -> Message:
    part = _FQ.FetchPartition(partition=PARTITION, current_leader_epoch=epoch,
                              fetch_offset=fetch_offset, last_fetched_epoch=last_epoch,
                              partition_max_bytes=max_bytes, replica_directory_id=replica_dir,
                              high_watermark=high_watermark)
    return _FQ(cluster_id=cluster_id,
               replica_state=_FQ.ReplicaState(replica_id=replica_id),
               max_wait_ms=max_wait_ms, min_bytes=0, max_bytes=max_bytes,
               topics=(_FQ.FetchTopic(topic_id=TOPIC_ID, partitions=(part,)),))


_NO_DIVERGENCE = _FS.EpochEndOffset()
_NO_SNAPSHOT = _FS.SnapshotId()


def fetch_response(error: int, epoch: int, leader_id: int, high_watermark: int = -1,
                   log_start: int = -1, records: bytes = b"",
                   diverging: tuple[int, int] | None = None,
                   snapshot_id: tuple[int, int] | None = None) -> Message:
    """``diverging`` is (epoch, end offset); ``snapshot_id`` is (end offset, epoch)."""
    part = _FS.PartitionData(
        partition_index=PARTITION, error_code=error, high_watermark=high_watermark,
        log_start_offset=log_start,
        diverging_epoch=_NO_DIVERGENCE if diverging is None else
        _FS.EpochEndOffset(epoch=diverging[0], end_offset=diverging[1]),
        current_leader=_FS.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=epoch),
        snapshot_id=_NO_SNAPSHOT if snapshot_id is None else
        _FS.SnapshotId(end_offset=snapshot_id[0], epoch=snapshot_id[1]),
        records=records)
    return _FS(responses=(_FS.FetchableTopicResponse(topic_id=TOPIC_ID,
                                                     partitions=(part,)),))


def fetch_snapshot_request(cluster_id: str, replica_id: int, epoch: int,
                           snapshot_id: tuple[int, int], position: int, max_bytes: int,
                           replica_dir: Uuid) -> Message:
    part = _SQ.PartitionSnapshot(
        partition=PARTITION, current_leader_epoch=epoch,
        snapshot_id=_SQ.SnapshotId(end_offset=snapshot_id[0], epoch=snapshot_id[1]),
        position=position, replica_directory_id=replica_dir)
    return _SQ(cluster_id=cluster_id, replica_id=replica_id, max_bytes=max_bytes,
               topics=(_SQ.TopicSnapshot(name=TOPIC, partitions=(part,)),))


def fetch_snapshot_response(error: int, epoch: int, leader_id: int,
                            snapshot_id: tuple[int, int] = (-1, -1), size: int = 0,
                            position: int = 0, data: bytes = b"") -> Message:
    part = _SS.PartitionSnapshot(
        index=PARTITION, error_code=error,
        snapshot_id=_SS.SnapshotId(end_offset=snapshot_id[0], epoch=snapshot_id[1]),
        current_leader=_SS.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=epoch),
        size=size, position=position, unaligned_records=data)
    return _SS(topics=(_SS.TopicSnapshot(name=TOPIC, partitions=(part,)),))


def describe_quorum_request() -> Message:
    return _DQ(topics=(_DQ.TopicData(topic_name=TOPIC,
                                     partitions=(_DQ.PartitionData(partition_index=PARTITION),)),))


def replica_state(replica_id: int, directory_id: Uuid, log_end_offset: int,
                  last_fetch_ms: int = -1, last_caught_up_ms: int = -1) -> Message:
    return _DS.ReplicaState(replica_id=replica_id, replica_directory_id=directory_id,
                            log_end_offset=log_end_offset, last_fetch_timestamp=last_fetch_ms,
                            last_caught_up_timestamp=last_caught_up_ms)


_ERROR_MESSAGES = {  # Kafka's Errors#message, as DescribeQuorumRequest#getPartitionLevelErrorResponse sets it
    3: "This server does not host this topic-partition.",
    6: "For requests intended only for the leader, this error indicates that the broker is not "
       "the current leader. For requests intended for any replica, this error indicates that "
       "the broker is not a replica of the topic partition.",
}


def describe_quorum_response(error: int, leader_id: int, epoch: int, high_watermark: int,
                             voters: list[Message], observers: list[Message],
                             nodes: dict[int, tuple] | None = None) -> Message:
    """``nodes``: id -> ((listener name, host, port), ...), the v2 Nodes (KIP-853 endpoints)."""
    part = _DS.PartitionData(partition_index=PARTITION, error_code=error,
                             error_message=_ERROR_MESSAGES.get(error), leader_id=leader_id,
                             leader_epoch=epoch, high_watermark=high_watermark,
                             current_voters=tuple(voters), observers=tuple(observers))
    node_list = tuple(_DS.Node(node_id=n, listeners=tuple(
        _DS.Listener(name=name, host=host, port=port) for name, host, port in eps))
        for n, eps in sorted((nodes or {}).items()))
    return _DS(topics=(_DS.TopicData(topic_name=TOPIC, partitions=(part,)),), nodes=node_list)
