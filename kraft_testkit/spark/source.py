"""The ``kraft-metadata`` Spark data source: a KRaft metadata log as a batch or streaming source.

Spark runs every reader method in a separate Python worker, which sees nothing of the test
process. So the source reads either files (``path``: a node directory, a ``__cluster_metadata-0``
directory, a segment, a ``.checkpoint`` snapshot; Kafka's own or a tmpdir cluster's) or the
loopback endpoint of :func:`kraft_testkit.spark.serve` (``url`` + ``token``), which serves only
committed records. Everything a worker needs travels in the options or the partitions.

Offsets follow Spark's Kafka source: ``startingOffsets`` earliest / latest / a number / JSON
``{"__cluster_metadata":{"0":n}}`` (-2 earliest, -1 latest); ``endingOffsets`` is exclusive;
stream offsets are that JSON; ``maxRecordsPerTrigger`` caps a micro-batch.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, \
    InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, \
    SupportsTriggerAvailableNow

from . import files
from .client import Endpoint
from .errors import SourceOptionError
from .rows import SCHEMA_DDL, iter_arrow, read_file_bytes

NAME = "kraft-metadata"
TOPIC = "__cluster_metadata"
OPTIONS = {"path": "a log directory or file", "url": "serve()'s endpoint",
           "token": "serve()'s token", "startingoffsets": "earliest | latest | N | JSON",
           "endingoffsets": "latest | N | JSON (exclusive)",
           "maxrecordspertrigger": "records per micro-batch", "numpartitions": "N >= 1",
           "prerelease": "true | false", "files": "log | snapshot",
           "valuejson": "true | false (false: value_json is null, bodies are not decoded)"}


@dataclass(frozen=True)
class Options:
    """Checked options (Spark hands them over as lower-cased strings)."""

    path: str | None
    url: str | None
    token: str | None
    starting: str
    ending: str
    max_records: int | None
    num_partitions: int
    prerelease: bool
    files: str
    value_json: bool = True

    @classmethod
    def parse(cls, raw: dict[str, str]) -> "Options":
        given = {k.lower(): v for k, v in raw.items()}
        unknown = sorted(set(given) - set(OPTIONS))
        if unknown:
            allowed = ", ".join(f"{k} ({v})" for k, v in OPTIONS.items())
            raise SourceOptionError(f"{NAME}: unknown option(s) {unknown}; allowed: {allowed}")
        path, url = given.get("path"), given.get("url")
        if (path is None) == (url is None):
            raise SourceOptionError(f"{NAME}: give exactly one of 'path' (a log directory or "
                                    f"file) or 'url' (from kraft_testkit.spark.serve)")
        if url is not None and not given.get("token"):
            raise SourceOptionError(f"{NAME}: option 'token' is required with 'url' (serve() "
                                    f"returns both)")
        prerelease = _flag(given, "prerelease", "false")
        value_json = _flag(given, "valuejson", "true")
        which = given.get("files", "log").lower()
        if which not in ("log", "snapshot"):
            raise SourceOptionError(f"{NAME}: option 'files' must be log or snapshot, got "
                                    f"{which!r}")
        return cls(path=path, url=url, token=given.get("token"),
                   starting=given.get("startingoffsets", ""), ending=given.get("endingoffsets",
                                                                               "latest"),
                   max_records=_positive("maxrecordspertrigger", given.get(
                       "maxrecordspertrigger")),
                   num_partitions=_positive("numpartitions", given.get("numpartitions")) or 2,
                   prerelease=prerelease, files=which, value_json=value_json)


def _flag(given: dict[str, str], name: str, default: str) -> bool:
    value = given.get(name, default).lower()
    if value not in ("true", "false"):
        raise SourceOptionError(f"{NAME}: option '{name}' must be true or false, got {value!r}")
    return value == "true"


def _positive(name: str, text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise SourceOptionError(f"{NAME}: option '{name}' must be an integer >= 1, got {text!r}")
    return value


def parse_offset(text: str, name: str, *, earliest: int, latest: int) -> int:
    """``earliest`` / ``latest`` / ``N`` / ``{"__cluster_metadata":{"0":N}}`` (-2 earliest,
    -1 latest) to an offset."""
    word = text.strip().lower()
    if word == "earliest":
        return earliest
    if word == "latest":
        return latest
    try:
        value = json.loads(word)
    except ValueError:
        value = None
    if isinstance(value, dict):
        value = value.get(TOPIC, {}).get("0") if isinstance(value.get(TOPIC), dict) else None
    if type(value) is not int or value < -2:
        raise SourceOptionError(f"{NAME}: option '{name}' must be earliest, latest, an offset or "
                                f'{{"{TOPIC}":{{"0":N}}}}, got {text!r}')
    return earliest if value == -2 else latest if value == -1 else value


def stream_offset(n: int) -> dict:
    """A stream offset as Spark's Kafka source writes one: ``{"__cluster_metadata": {"0": n}}``."""
    return {TOPIC: {"0": n}}


def _offset_of(offset: dict) -> int:
    return int(offset[TOPIC]["0"])


class FilePartition(InputPartition):
    """Whole batches ``[position, end)`` of one file, and the offsets wanted from them."""

    def __init__(self, path: str, position: int, end: int, start_offset: int,
                 end_offset: int | None) -> None:
        super().__init__((path, position, end))
        self.path, self.position, self.end = path, position, end
        self.start_offset, self.end_offset = start_offset, end_offset


class RangePartition(InputPartition):
    """Offsets ``[start, end)`` of the live log."""

    def __init__(self, start: int, end: int) -> None:
        super().__init__((start, end))
        self.start, self.end = start, end


class KraftMetadataDataSource(DataSource):
    """``spark.read.format("kraft-metadata")`` and ``spark.readStream.format(...)``."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA_DDL

    def reader(self, schema) -> DataSourceReader:
        opts = Options.parse(self.options)
        if opts.url is not None:
            return LiveBatchReader(opts)
        return FileBatchReader(opts)

    def streamReader(self, schema) -> DataSourceStreamReader:
        opts = Options.parse(self.options)
        if opts.url is None:
            raise SourceOptionError(f"{NAME}: streaming reads a live log: give 'url' and 'token' "
                                    f"from kraft_testkit.spark.serve(cluster), not 'path'")
        return LiveStreamReader(opts)


class FileBatchReader(DataSourceReader):
    """Batch read of log files, split into partitions at batch boundaries."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.paths = files.log_files(opts.path, snapshot=opts.files == "snapshot")
        self.start = parse_offset(opts.starting or "earliest", "startingOffsets", earliest=0,
                                  latest=0) if opts.starting.lower() != "latest" else None
        if self.start is None:
            raise SourceOptionError(f"{NAME}: startingOffsets=latest is for streams; a batch "
                                    f"read starts at earliest or an offset")
        end = parse_offset(opts.ending, "endingOffsets", earliest=0, latest=-1)
        self.end = None if end < 0 else end

    def partitions(self) -> list[InputPartition]:
        return [FilePartition(path, pos, end, self.start, self.end)
                for path, pos, end in files.plan(self.paths, self.opts.num_partitions)]

    def read(self, partition: FilePartition) -> Iterator[object]:
        data = read_file_bytes(partition.path, partition.position, partition.end)
        yield from iter_arrow(data, where=partition.path, start=partition.start_offset,
                              end=partition.end_offset, prerelease=self.opts.prerelease,
                              position=partition.position, value_json=self.opts.value_json)


class LiveBatchReader(DataSourceReader):
    """Batch read of the committed log behind :func:`kraft_testkit.spark.serve`."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        first, hw = Endpoint(opts.url, opts.token).bounds()
        self.start = max(first, parse_offset(opts.starting or "earliest", "startingOffsets",
                                             earliest=first, latest=hw))
        self.end = min(hw, parse_offset(opts.ending, "endingOffsets", earliest=first, latest=hw))

    def partitions(self) -> list[InputPartition]:
        return _ranges(self.start, self.end, self.opts.num_partitions)

    def read(self, partition: RangePartition) -> Iterator[object]:
        yield from _read_range(self.opts, partition)


class LiveStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of the committed log; never past the high watermark."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.endpoint = Endpoint(opts.url, opts.token)
        self.target: int | None = None  # Trigger.AvailableNow's end

    def initialOffset(self) -> dict:
        first, hw = self.endpoint.bounds()
        start = parse_offset(self.opts.starting or "latest", "startingOffsets", earliest=first,
                             latest=hw)
        return stream_offset(max(first, start))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_records is not None:
            return ReadMaxRows(self.opts.max_records)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self.endpoint.bounds()[1]

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        hw = self.endpoint.bounds()[1]
        end = hw if self.target is None else min(hw, self.target)
        if start is not None:
            begin = _offset_of(start)
            end = max(begin, end)
            if isinstance(limit, ReadMaxRows):
                end = min(end, begin + limit.max_rows)
        return stream_offset(end)

    def reportLatestOffset(self) -> dict:
        return stream_offset(self.endpoint.bounds()[1])

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return _ranges(_offset_of(start), _offset_of(end), 1)

    def read(self, partition: RangePartition) -> Iterator[object]:
        yield from _read_range(self.opts, partition)

    def commit(self, end: dict) -> None:
        """Nothing to release: the endpoint keeps every committed record it served."""


def _ranges(start: int, end: int, parts: int) -> list[InputPartition]:
    if end <= start:
        return []
    step = max(1, -(-(end - start) // parts))
    return [RangePartition(a, min(end, a + step)) for a in range(start, end, step)]


def _read_range(opts: Options, partition: RangePartition) -> Iterator[object]:
    endpoint = Endpoint(opts.url, opts.token)
    data = endpoint.fetch(partition.start, partition.end)
    yield from iter_arrow(data, where=f"{opts.url} offsets [{partition.start}, {partition.end})",
                          start=partition.start, end=partition.end, prerelease=opts.prerelease,
                          value_json=opts.value_json)
