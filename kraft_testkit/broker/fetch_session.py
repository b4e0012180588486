"""KIP-227 incremental fetch sessions, the fetcher's side: Kafka's ``FetchMetadata`` and
``FetchSessionHandler`` (clients, 4.2.1), as a follower broker keeps one per leader broker.

A session starts with a full fetch (session id 0, epoch 0: every partition listed); the leader
answers with a session id and the follower's next fetches are incremental: epoch 1, 2, ...,
listing only the partitions added or altered since the last request (and, under
``ForgottenTopicsData``, the ones removed), the leader answering only partitions with news.
A top-level error resets the session (``FETCH_SESSION_ID_NOT_FOUND``: a new one from scratch;
any other: close it and ask for a new one), as does a request that failed
(:meth:`FetchSessionHandler.handle_error`).

Kafka's ``Builder.build`` compares the whole wanted set with the session at every fetch;
:meth:`FetchSessionHandler.build_changes` gives the same request from the changed partitions
alone (what the replica fetcher keeps as its dirty set), so an idle follower's fetch costs
nothing per partition.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.uuid import Uuid

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_INT_MAX = (1 << 31) - 1

TopicPartition = tuple[str, int]  # (topic name, partition): the handler's key, as Kafka's


def next_epoch(prev: int) -> int:
    """``FetchMetadata#nextEpoch``: FINAL stays FINAL, MAX_VALUE wraps to 1."""
    if prev < 0:
        return FINAL_EPOCH
    return 1 if prev == _INT_MAX else prev + 1


class FetchMetadata(NamedTuple):
    """``FetchMetadata``: the session id and epoch a fetch request carries."""

    session_id: int
    epoch: int

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def next_close_existing(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, FINAL_EPOCH)

    def next_close_existing_attempt_new(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, INITIAL_EPOCH)

    def next_incremental(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, next_epoch(self.epoch))

    @staticmethod
    def new_incremental(session_id: int) -> FetchMetadata:
        return FetchMetadata(session_id, next_epoch(INITIAL_EPOCH))


INITIAL = FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)
LEGACY = FetchMetadata(INVALID_SESSION_ID, FINAL_EPOCH)


class PartitionData(NamedTuple):
    """``FetchRequest.PartitionData``: equal when every field is (Kafka's ``equals``)."""

    topic_id: Uuid
    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int = -1  # -1: Optional.empty()
    last_fetched_epoch: int = -1


class TopicIdPartition(NamedTuple):
    topic_id: Uuid
    topic: str
    partition: int


class FetchRequestData(NamedTuple):
    """``FetchSessionHandler.FetchRequestData``: what one fetch request carries."""

    to_send: dict[TopicPartition, PartitionData]
    to_forget: list[TopicIdPartition]
    to_replace: list[TopicIdPartition]
    session_partitions: dict[TopicPartition, PartitionData]
    metadata: FetchMetadata
    can_use_topic_ids: bool


def find_missing(to_find: Any, to_search: Any) -> list:
    """``FetchSessionHandler#findMissing``: the items of ``to_find`` not in ``to_search``."""
    return [x for x in to_find if x not in to_search]


class FetchSessionHandler:
    """One fetcher's session with one node (Kafka's ``FetchSessionHandler``)."""

    __slots__ = ("_pos", "_seq", "next_metadata", "node", "session_partitions",
                 "session_topic_names")

    def __init__(self, node: int) -> None:
        self.node = node
        self.next_metadata = INITIAL
        #: the session's partitions in Kafka's (insertion) order
        self.session_partitions: dict[TopicPartition, PartitionData] = {}
        self.session_topic_names: dict[Uuid, str] = {}
        self._pos: dict[TopicPartition, int] = {}  # a partition's place in that order
        self._seq = 0

    @property
    def session_id(self) -> int:
        return self.next_metadata.session_id

    # ------------------------------------------------------------------ requests

    def build(self, next_parts: dict[TopicPartition, PartitionData]) -> FetchRequestData:
        """``Builder#build`` over every partition wanted now, in the order given."""
        if self.next_metadata.is_full:
            return self._build_full(dict(next_parts))
        changed: dict[TopicPartition, PartitionData | None] = {
            tp: None for tp in self.session_partitions if tp not in next_parts}
        for tp, data in next_parts.items():
            if self.session_partitions.get(tp) != data:
                changed[tp] = data
        # Kafka adds new partitions in the order they were wanted
        order = {tp: i for i, tp in enumerate(next_parts)}
        data = self.build_changes(changed, order.__getitem__)
        can_use = data.can_use_topic_ids and all(
            d.topic_id != Uuid.ZERO for d in next_parts.values())
        names: dict[Uuid, str] = {}
        if can_use:  # Kafka's builder: the topics of every partition wanted now
            for tp, d in next_parts.items():
                names.setdefault(d.topic_id, tp[0])
        self.session_topic_names = names
        return data._replace(can_use_topic_ids=can_use)

    def build_full(self, wanted: dict[TopicPartition, PartitionData]) -> FetchRequestData:
        """A full request (the session starts over from ``wanted``): only when
        :attr:`next_metadata` is full."""
        return self._build_full(dict(wanted))

    def _build_full(self, wanted: dict[TopicPartition, PartitionData]) -> FetchRequestData:
        self.session_partitions = wanted
        self._pos = {tp: i for i, tp in enumerate(wanted)}
        self._seq = len(wanted)
        can_use = all(d.topic_id != Uuid.ZERO for d in wanted.values())
        names: dict[Uuid, str] = {}
        if can_use:
            for tp, d in wanted.items():
                names.setdefault(d.topic_id, tp[0])
        self.session_topic_names = names
        return FetchRequestData(dict(wanted), [], [], wanted, self.next_metadata, can_use)

    def build_changes(self, changed: dict[TopicPartition, PartitionData | None],
                      added_order: Any = None) -> FetchRequestData:
        """The incremental request Kafka's ``build`` makes when the partitions wanted are the
        session's with ``changed`` applied (``None``: no longer wanted); work in proportion
        to ``changed``. New partitions are sent in the order of ``added_order`` (a sort key;
        default: the key itself, topic name then partition, as the replica fetcher lists
        them), then the altered and replaced ones in session order."""
        session, pos = self.session_partitions, self._pos
        if not changed:  # an idle fetch: nothing to send, forget or compare
            return FetchRequestData({}, [], [], session, self.next_metadata,
                                    bool(self.session_topic_names) or not session)
        can_use = True
        removed: list[tuple[int, TopicIdPartition]] = []
        altered: list[tuple[int, TopicPartition, PartitionData]] = []
        replaced: list[tuple[int, TopicIdPartition]] = []
        added: list[TopicPartition] = []
        for tp, data in changed.items():
            prev = session.get(tp)
            if prev is None:
                if data is not None:
                    added.append(tp)
            elif data is None:
                removed.append((pos[tp], TopicIdPartition(prev.topic_id, tp[0], tp[1])))
                if prev.topic_id == Uuid.ZERO:
                    can_use = False
            elif prev.topic_id != data.topic_id and prev.topic_id != Uuid.ZERO \
                    and data.topic_id != Uuid.ZERO:
                altered.append((pos[tp], tp, data))
                replaced.append((pos[tp], TopicIdPartition(prev.topic_id, tp[0], tp[1])))
            elif prev != data:
                altered.append((pos[tp], tp, data))
        removed.sort(key=lambda e: e[0])
        altered.sort(key=lambda e: e[0])
        replaced.sort(key=lambda e: e[0])
        added.sort(key=added_order)
        for _, tip in removed:
            del session[(tip.topic, tip.partition)]
            del pos[(tip.topic, tip.partition)]
        to_send: dict[TopicPartition, PartitionData] = {}
        for tp in added:
            data = changed[tp]
            assert data is not None
            session[tp] = to_send[tp] = data
            pos[tp] = self._seq
            self._seq += 1
        for _, tp, data in altered:
            session[tp] = to_send[tp] = data
        names = self.session_topic_names
        if can_use:
            for tp, data in to_send.items():
                if data.topic_id == Uuid.ZERO:
                    can_use = False
                    break
                names.setdefault(data.topic_id, tp[0])
        if not can_use:
            self.session_topic_names = {}
        return FetchRequestData(to_send, [t for _, t in removed], [t for _, t in replaced],
                                session, self.next_metadata, can_use)

    # ------------------------------------------------------------------ responses

    def verify_full(self, parts: Any, ids: Any, version: int) -> str | None:
        """``verifyFullFetchResponsePartitions``: None when the response lists exactly the
        session's partitions (and, from v13, only the session's topic ids)."""
        extra = find_missing(parts, self.session_partitions)
        omitted = find_missing(self.session_partitions, parts)
        extra_ids = find_missing(ids, self.session_topic_names) if version >= 13 else []
        problems = []
        if omitted:
            problems.append(f"omittedPartitions=({_tps(omitted)})")
        if extra:
            problems.append(f"extraPartitions=({_tps(extra)})")
        if extra_ids:
            problems.append(f"extraIds=({', '.join(str(i) for i in extra_ids)})")
        return None if not problems else ", ".join(problems) + f", response=({_tps(parts)})"

    def verify_incremental(self, parts: Any, ids: Any, version: int) -> str | None:
        """``verifyIncrementalFetchResponsePartitions``: only the session's partitions."""
        extra_ids = find_missing(ids, self.session_topic_names) if version >= 13 else []
        extra = find_missing(parts, self.session_partitions)
        problems = []
        if extra:
            problems.append(f"extraPartitions=({_tps(extra)})")
        if extra_ids:
            problems.append(f"extraIds=({', '.join(str(i) for i in extra_ids)})")
        return None if not problems else ", ".join(problems) + f", response=({_tps(parts)})"

    def handle_response(self, error: int, session_id: int, parts: Any, ids: Any,
                        version: int = 17, throttle_ms: int = 0) -> bool:
        """``handleResponse``: the next request's metadata from a response with top-level
        ``error`` and ``session_id`` listing ``parts`` ((topic name, partition) keys, names
        resolved through :attr:`session_topic_names`) of topics ``ids``; False when the
        response cannot be used (its partitions are then not processed)."""
        meta = self.next_metadata
        if error != ErrorCode.NONE:
            self.next_metadata = INITIAL if error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND \
                else meta.next_close_existing_attempt_new()
            return False
        if meta.is_full:
            if not parts and throttle_ms > 0:
                self.next_metadata = INITIAL
                return False
            if self.verify_full(parts, ids, version) is not None:
                self.next_metadata = INITIAL
                return False
            self.next_metadata = INITIAL if session_id == INVALID_SESSION_ID \
                else FetchMetadata.new_incremental(session_id)
            return True
        if self.verify_incremental(parts, ids, version) is not None:
            self.next_metadata = meta.next_close_existing_attempt_new()
            return False
        self.next_metadata = INITIAL if session_id == INVALID_SESSION_ID \
            else meta.next_incremental()
        return True

    def response_parts(self, body: Any) -> tuple[list[TopicPartition], list[Uuid]]:
        """A FetchResponse's (topic name, partition) keys, names resolved through the
        session's topic ids (an unknown id: name None), and its topic ids."""
        names = self.session_topic_names
        parts, ids = [], []
        for t in body.responses:
            ids.append(t.topic_id)
            name = names.get(t.topic_id)
            for p in t.partitions:
                parts.append((name, p.partition_index))
        return parts, ids

    def notify_close(self) -> None:
        """``notifyClose``: the next request closes the session."""
        self.next_metadata = self.next_metadata.next_close_existing()

    def handle_error(self) -> None:
        """``handleError``: the request failed (no answer): close the session on the next
        request and ask for a new one."""
        self.next_metadata = self.next_metadata.next_close_existing_attempt_new()


def _tps(parts: Any) -> str:
    return ", ".join(f"{t}-{p}" for t, p in parts)
