"""Serve a running cluster's committed metadata log to Spark's Python workers over loopback.

Spark's readers run in other processes, so the log must travel. The simulation stays
single-threaded and untouched: after every simulator event a tiny hook (registered like an
invariant; it reads, never writes, and records nothing in the trace, so digests do not change)
copies newly committed batches, whose bytes are immutable, into this endpoint's own list under a
lock. An HTTP server on 127.0.0.1 (ephemeral port, a random token required on every request)
answers from that list on a background thread. Only whole batches below the high watermark are
ever published, so nothing uncommitted is served; and since Raft's committed prefix is the same
on every replica, a controller failover neither loses nor repeats a record.
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
from bisect import bisect_left, bisect_right
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..errors import ConfigError
from .client import TOKEN_HEADER
from .errors import EndpointError


class ServedLog(dict):
    """The reader options (``url``, ``token``) of a served log; also the handle to close it.

    >>> served = serve(cluster)                                          # doctest: +SKIP
    >>> spark.read.format("kraft-metadata").options(**served).load()     # doctest: +SKIP
    """

    def __init__(self, cluster: Any) -> None:
        if not hasattr(cluster, "sim") or not hasattr(cluster, "controllers"):
            raise ConfigError(f"serve() needs a kraft_testkit Cluster, got {cluster!r}")
        self._cluster = cluster
        if not self._replicas():
            raise EndpointError("serve(): no controller of this cluster is running (a stopped "
                                "cluster has no log to serve); start one first")
        self._lock = threading.Lock()
        self._bases: list[int] = []   # base offset of each published batch
        self._data: list[bytes] = []  # its bytes, as in the segment file
        self._start = self._first_offset()
        self._end = self._start       # next offset to publish (<= the high watermark)
        self._closed = False
        self.publish()
        cluster.sim.add_invariant(self._after_event, "spark-serve")
        token = secrets.token_urlsafe(24)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self, token))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="kraft-serve",
                                        daemon=True)
        self._thread.start()
        host, port = self._server.server_address[:2]
        super().__init__(url=f"http://{host}:{port}", token=token)

    # ------------------------------------------------------------- simulation side

    def _replicas(self) -> list[Any]:
        return [r for h in self._cluster.controllers
                if (r := self._cluster.replica(h)) is not None]

    def _first_offset(self) -> int:
        replicas = self._replicas()
        return min((r.log.start_offset for r in replicas), default=0)

    def _after_event(self, _sim: Any) -> None:
        if not self._closed:
            self.publish()

    def publish(self) -> int:
        """Copy batches committed since the last call; returns the high watermark served. Runs
        after every simulator event; call it yourself only after changing the cluster outside
        the simulator."""
        end = self._end
        best = None
        for r in self._replicas():
            if r.hw > end and r.log.start_offset <= end and (best is None or r.hw > best.hw):
                best = r
        if best is None:
            return end
        log, hw = best.log, best.hw
        i = bisect_left(log.bases, end)
        bases, data = [], []
        while i < len(log.bases) and log.bases[i] == end and log.batches[i].last_offset < hw:
            bases.append(end)
            data.append(log.data[i])
            end = log.batches[i].last_offset + 1
            i += 1
        if bases:
            with self._lock:
                self._bases.extend(bases)
                self._data.extend(data)
                self._end = end
        return end

    # ------------------------------------------------------------- server side

    def bounds(self) -> tuple[int, int]:
        with self._lock:
            return self._start, self._end

    def read(self, start: int, end: int) -> bytes:
        """Bytes of the published batches holding offsets ``[start, end)``."""
        with self._lock:
            bases, data, hw = self._bases, self._data, self._end
            i = max(0, bisect_right(bases, start) - 1)
            j = bisect_left(bases, min(end, hw))
            return b"".join(data[i:j])

    def close(self) -> None:
        """Stop serving; readers then fail with a clear 'no answer' error."""
        if not self._closed:
            self._closed = True
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> "ServedLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ServedLog(url={self['url']!r}, offsets [{self._start}, {self._end}))"


def serve(cluster: Any) -> ServedLog:
    """Serve ``cluster``'s committed metadata log; returns the ``kraft-metadata`` reader options
    (``url``, ``token``): ``spark.readStream.format("kraft-metadata").options(**served)``."""
    return ServedLog(cluster)


def _handler(log: ServedLog, token: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet: tests read stderr
            pass

        def _send(self, code: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            given = self.headers.get(TOKEN_HEADER, "")
            if not hmac.compare_digest(given.encode(), token.encode()):
                return self._send(403, b"wrong token\n", "text/plain")
            url = urlsplit(self.path)
            start, end = log.bounds()
            if url.path == "/bounds":
                return self._send(200, json.dumps({"start": start, "end": end}).encode())
            if url.path == "/log":
                query = parse_qs(url.query)
                try:
                    a, b = int(query["start"][0]), int(query["end"][0])
                except (KeyError, ValueError):
                    return self._send(400, b"need start and end offsets\n", "text/plain")
                if a < start:
                    return self._send(410, f"offset {a} is before the first served offset "
                                           f"{start}\n".encode(), "text/plain")
                return self._send(200, log.read(a, b), "application/octet-stream")
            return self._send(404, b"unknown path\n", "text/plain")

    return Handler
