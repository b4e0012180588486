"""KIP-853 voter sets: who votes, by (id, directory id, endpoints), and since which offset.

With ``kraft.version`` 1 the voter set is not configuration but data: the latest VotersRecord in
the log or in the snapshot's header decides, *including an uncommitted one* (a voter set takes
effect when appended; a truncation reverts it). :class:`VoterHistory` is Kafka's
``VoterSetHistory`` (and the ``kraft.version`` history beside it): entries by the offset of
their record, ``-1`` for one that came from a snapshot (the bootstrap checkpoint of
``kafka-storage format --standalone`` / ``--initial-controllers``, or a fetched snapshot).

With ``kraft.version`` 0 the voter set is the static one the replica was built with
(``controller.quorum.voters``); nothing here changes it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.errors import DecodeError
from kraft_testkit.protocol.frames import decode_control, encode_control
from kraft_testkit.protocol.records import RecordBatch, iter_batches
from kraft_testkit.protocol.uuid import Uuid

LISTENER = "CONTROLLER"
CONTROLLER_PORT = 9093
KRAFT_VERSION_TYPE, VOTERS_TYPE = 5, 6
SUPPORTED_KRAFT_VERSIONS = (0, 1)

Endpoint = tuple[str, str, int]  # (listener name, host, port)


def default_endpoints(node_id: int, host: str | None = None) -> tuple[Endpoint, ...]:
    """The endpoint a simulated controller listens on (its name is its address in the sim)."""
    return ((LISTENER, host or f"controller-{node_id}", CONTROLLER_PORT),)


@dataclass(frozen=True, slots=True)
class Voter:
    """One voter: Kafka's ``VoterSet.VoterNode`` (replica key, listeners, kraft.version range)."""

    id: int
    directory_id: Uuid
    endpoints: tuple[Endpoint, ...] = ()
    kraft_versions: tuple[int, int] = SUPPORTED_KRAFT_VERSIONS


class VoterSet:
    """An immutable set of voters keyed by id; ``keys`` maps id -> directory id."""

    __slots__ = ("keys", "voters")

    def __init__(self, voters: Iterable[Voter]) -> None:
        self.voters: dict[int, Voter] = {v.id: v for v in sorted(voters, key=lambda v: v.id)}
        self.keys: dict[int, Uuid] = {i: v.directory_id for i, v in self.voters.items()}

    @classmethod
    def static(cls, keys: Mapping[int, Uuid],
               hosts: Mapping[int, str] | None = None) -> "VoterSet":
        hosts = hosts or {}
        return cls(Voter(i, d, default_endpoints(i, hosts.get(i))) for i, d in keys.items())

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    def __len__(self) -> int:
        return len(self.voters)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.voters

    def __iter__(self) -> Iterator[int]:
        return iter(self.voters)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VoterSet) and self.voters == other.voters

    def __hash__(self) -> int:
        return hash(tuple(self.voters.values()))

    def is_voter(self, node_id: int, directory_id: Uuid) -> bool:
        return self.keys.get(node_id) == directory_id

    def add(self, voter: Voter) -> "VoterSet | None":
        """Kafka's ``addVoter``: None when the id is already a voter."""
        if voter.id in self.voters:
            return None
        return VoterSet([*self.voters.values(), voter])

    def remove(self, node_id: int, directory_id: Uuid) -> "VoterSet | None":
        """Kafka's ``removeVoter``: None unless (id, directory id) is a voter and others remain."""
        if self.keys.get(node_id) != directory_id or len(self.voters) == 1:
            return None
        return VoterSet(v for v in self.voters.values() if v.id != node_id)

    def update(self, voter: Voter) -> "VoterSet | None":
        """Kafka's ``updateVoter``: new endpoints or versions for a voter with the same key."""
        if self.keys.get(voter.id) != voter.directory_id:
            return None
        return VoterSet([*(v for v in self.voters.values() if v.id != voter.id), voter])

    def to_record(self) -> M.VotersRecord:
        return M.VotersRecord(version=0, voters=tuple(
            M.VotersRecord.Voter(
                voter_id=v.id, voter_directory_id=v.directory_id,
                endpoints=tuple(M.VotersRecord.Endpoint(name=n, host=h, port=p)
                                for n, h, p in v.endpoints),
                k_raft_version_feature=M.VotersRecord.KRaftVersionFeature(
                    min_supported_version=v.kraft_versions[0],
                    max_supported_version=v.kraft_versions[1]))
            for v in self.voters.values()))

    @classmethod
    def from_record(cls, record: M.VotersRecord) -> "VoterSet":
        return cls(Voter(v.voter_id, v.voter_directory_id,
                         tuple((e.name, e.host, e.port) for e in v.endpoints),
                         (v.k_raft_version_feature.min_supported_version,
                          v.k_raft_version_feature.max_supported_version))
                   for v in record.voters)

    def __repr__(self) -> str:
        return "VoterSet(" + ", ".join(f"{i}:{str(d)[:6]}" for i, d in self.keys.items()) + ")"


def control_values(voters: VoterSet, kraft_version: int) -> list[tuple[bytes, bytes]]:
    """(key, value) of a KRaftVersionRecord and a VotersRecord, as Kafka writes them together."""
    return [encode_control(M.KRaftVersionRecord(version=0, k_raft_version=kraft_version), 0),
            encode_control(voters.to_record(), 0)]


def voter_changes(batch: RecordBatch) -> Iterator[tuple[int, int, object]]:
    """``(offset, control type, value)`` of each KRaftVersionRecord (value: the level) and
    VotersRecord (value: a :class:`VoterSet`) in a control batch; nothing for a data batch."""
    if not batch.is_control:
        return
    for r in batch.records:
        if r.key is None or len(r.key) < 4 or r.key[3] not in (KRAFT_VERSION_TYPE, VOTERS_TYPE):
            continue
        try:
            record = decode_control(r.key, r.value)
        except DecodeError:
            continue
        offset = batch.base_offset + r.offset_delta
        if record.control_type == KRAFT_VERSION_TYPE:
            yield offset, KRAFT_VERSION_TYPE, record.message.k_raft_version
        else:
            yield offset, VOTERS_TYPE, VoterSet.from_record(record.message)


def snapshot_voters(data: bytes) -> tuple[int | None, VoterSet | None]:
    """kraft.version and voter set in a snapshot file's header batch (None: not there)."""
    version, voters = None, None
    for _, batch in iter_batches(bytes(data)):
        for _, ctype, value in voter_changes(batch):
            if ctype == KRAFT_VERSION_TYPE:
                version = value  # type: ignore[assignment]
            else:
                voters = value  # type: ignore[assignment]
        break  # only the header batch carries them
    return version, voters


class VoterHistory:
    """Voter sets and kraft.version levels by offset (Kafka's ``VoterSetHistory``)."""

    __slots__ = ("_offsets", "_sets", "_version_offsets", "_versions")

    def __init__(self) -> None:
        self._offsets: list[int] = []
        self._sets: list[VoterSet] = []
        self._version_offsets: list[int] = []
        self._versions: list[int] = []

    def add_voters(self, offset: int, voters: VoterSet) -> None:
        if self._offsets and offset <= self._offsets[-1]:
            self.truncate(offset)
        self._offsets.append(offset)
        self._sets.append(voters)

    def add_version(self, offset: int, level: int) -> None:
        if self._version_offsets and offset <= self._version_offsets[-1]:
            cut = bisect_left(self._version_offsets, offset)  # as add_voters: forget what follows
            del self._version_offsets[cut:], self._versions[cut:]
        self._version_offsets.append(offset)
        self._versions.append(level)

    def add_batch(self, batch: RecordBatch) -> bool:
        """Record the changes a batch carries; True when the voter set changed."""
        changed = False
        for offset, ctype, value in voter_changes(batch):
            if ctype == KRAFT_VERSION_TYPE:
                self.add_version(offset, value)  # type: ignore[arg-type]
            else:
                self.add_voters(offset, value)  # type: ignore[arg-type]
                changed = True
        return changed

    def truncate(self, end_offset: int) -> bool:
        """Forget entries at ``end_offset`` or later (a diverging log was cut); True when the
        voter set changed."""
        i = bisect_right(self._offsets, end_offset - 1)
        changed = i < len(self._offsets)
        del self._offsets[i:], self._sets[i:]
        j = bisect_right(self._version_offsets, end_offset - 1)
        del self._version_offsets[j:], self._versions[j:]
        return changed

    def reset(self, version: int | None, voters: VoterSet | None) -> None:
        """Start over from a snapshot: its values count as offset -1 (committed)."""
        self.__init__()  # type: ignore[misc]
        if version is not None:
            self.add_version(-1, version)
        if voters is not None:
            self.add_voters(-1, voters)

    @property
    def latest(self) -> VoterSet | None:
        return self._sets[-1] if self._sets else None

    @property
    def latest_offset(self) -> int | None:
        return self._offsets[-1] if self._offsets else None

    @property
    def kraft_version(self) -> int:
        return self._versions[-1] if self._versions else 0

    def at(self, offset: int) -> VoterSet | None:
        """The voter set in effect at ``offset`` (its record at or before it)."""
        i = bisect_right(self._offsets, offset) - 1
        return self._sets[i] if i >= 0 else None

    def version_at(self, offset: int) -> int:
        i = bisect_right(self._version_offsets, offset) - 1
        return self._versions[i] if i >= 0 else 0

    def entries(self) -> list[tuple[int, VoterSet]]:
        return list(zip(self._offsets, self._sets))
