"""``meta.properties``: what ``kafka-storage format`` writes in every log directory.

Version 1 (KRaft) holds ``cluster.id``, ``node.id`` and ``directory.id``; version 0 (ZooKeeper
era) has ``broker.id`` instead of ``node.id``. Kafka refuses a directory whose file lacks a key,
has a non-numeric id, or (since KIP-858) a reserved directory id such as the all-zero uuid; so do
we, with a :class:`MetaPropertiesError` that names the file and the key.

This is the one reader and writer: the operator tools use it as it is (it also reads version 0,
for ``storage info``); a starting node adds its own checks (version 1, its node id and cluster id)
in ``kraft_testkit.raft.state.read_meta_properties``. Both raise
:class:`~kraft_testkit.errors.StorageError`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import KraftError, StorageError
from ..protocol.uuid import Uuid

FILE_NAME = "meta.properties"
#: directory ids Kafka reserves (DirectoryId.UNASSIGNED, LOST, MIGRATING): never a real directory
RESERVED_DIRECTORY_IDS = {Uuid(bytes(16)): "UNASSIGNED (all zero)",
                          Uuid(bytes(15) + b"\x01"): "LOST", Uuid(bytes(15) + b"\x02"): "MIGRATING"}


class MetaPropertiesError(StorageError, ValueError):
    """A meta.properties file that is missing, unreadable or inconsistent; names file and key.

    A :class:`~kraft_testkit.errors.StorageError` like the node's own refusals (``file`` is the
    path, ``problem`` what is wrong), with the ``key`` besides.
    """

    def __init__(self, path: str | os.PathLike, problem: str, key: str | None = None) -> None:
        self.path = os.fspath(path)
        self.key = key
        StorageError.__init__(self, self.path + (f", key {key!r}" if key else ""), problem)
        self.file = self.path

    def located(self, root: str) -> MetaPropertiesError:
        return type(self)(os.path.join(root, self.path), self.problem, self.key)


@dataclass(frozen=True)
class MetaProperties:
    """The content of one meta.properties (version 1 unless read from an older file)."""

    cluster_id: str
    node_id: int
    directory_id: Uuid | None = None
    version: int = 1

    def to_properties(self) -> dict[str, str]:
        """Key -> value as Kafka writes them (``broker.id`` for version 0)."""
        props = {"version": str(self.version), "cluster.id": self.cluster_id}
        props["node.id" if self.version == 1 else "broker.id"] = str(self.node_id)
        if self.directory_id is not None:
            props["directory.id"] = str(self.directory_id)
        return props


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties`` as Kafka writes them: ``key=value`` lines, ``#`` comments."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        for sep in ("=", ":"):
            if sep in line:
                key, _, value = line.partition(sep)
                out[key.strip()] = value.strip()
                break
        else:
            out[line] = ""
    return out


def read_meta_properties(directory: str | os.PathLike) -> MetaProperties:
    """The meta.properties of a log directory, checked as Kafka checks it."""
    path = Path(directory) / FILE_NAME
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise MetaPropertiesError(path, "not found: the directory is not formatted "
                                        "(run kraft-testkit storage format)") from None
    except OSError as e:
        raise MetaPropertiesError(path, f"cannot be read: {e.strerror or e}") from None
    try:
        props = parse_properties(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise MetaPropertiesError(path, f"is not text (byte {e.start} is not UTF-8)") from None
    return meta_properties_from(props, path)


def meta_properties_from(props: dict[str, str], path: str | os.PathLike) -> MetaProperties:
    """Build and check a :class:`MetaProperties` from the parsed file at ``path``."""
    version_text = _required(props, "version", path)
    if version_text not in ("0", "1"):
        raise MetaPropertiesError(path, f"version {version_text!r} is unknown (0 and 1 are)",
                                  "version")
    version = int(version_text)
    cluster_id = _required(props, "cluster.id", path)
    if not cluster_id:
        raise MetaPropertiesError(path, "is empty", "cluster.id")
    id_key = "node.id" if version == 1 else "broker.id"
    node_id = _int(_required(props, id_key, path), id_key, path)
    directory_id = None
    if "directory.id" in props:
        try:
            directory_id = Uuid.parse(props["directory.id"])
        except (KraftError, ValueError):
            raise MetaPropertiesError(path, f"{props['directory.id']!r} is not a base64 uuid",
                                      "directory.id") from None
        if directory_id[:15] == bytes(15) and directory_id[15] < 100:  # Kafka's DirectoryId
            what = RESERVED_DIRECTORY_IDS.get(directory_id, "one of the first 100 Uuids")
            raise MetaPropertiesError(
                path, f"{props['directory.id']} is reserved ({what}); a directory needs its own "
                      f"id: format it again", "directory.id")
    return MetaProperties(cluster_id, node_id, directory_id, version)


def encode_meta_properties(props: MetaProperties) -> bytes:
    """The file's bytes: a comment line, then the keys sorted (as java.util.Properties stores)."""
    lines = ["#", "#Written by kraft-testkit"]
    lines += [f"{k}={v}" for k, v in sorted(props.to_properties().items())]
    return ("\n".join(lines) + "\n").encode()


def write_meta_properties(directory: str | os.PathLike, props: MetaProperties) -> Path:
    """Write (atomically: a temporary file, then a rename) ``directory``/meta.properties."""
    path = Path(directory) / FILE_NAME
    tmp = path.with_name(FILE_NAME + ".tmp")
    tmp.write_bytes(encode_meta_properties(props))
    os.replace(tmp, path)
    return path


def _required(props: dict[str, str], key: str, path: str | os.PathLike) -> str:
    if key not in props:
        raise MetaPropertiesError(path, "is missing", key)
    return props[key]


def _int(text: str, key: str, path: str | os.PathLike) -> int:
    try:
        value = int(text)
    except ValueError:
        raise MetaPropertiesError(path, f"{text!r} is not an integer", key) from None
    if value < 0:
        raise MetaPropertiesError(path, f"{value} is negative", key)
    return value
