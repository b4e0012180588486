"""The loopback front door: one listening socket per node, one thread that owns the simulation.

The simulation is single-threaded, so one thread (the gateway's) drives both the sockets and
the simulator; a test thread reaches the cluster through :meth:`Gateway.hold` (or ``call``,
``run_for``, ``run_until``), which take the same lock. Virtual time moves in one of two modes:

* **stepping** (``speed=None``, the default): time stands still until a client waits on the
  cluster (a controller commit, ``acks=all``, replication behind a Fetch, a broker behind the
  controller or naming a dead leader, a silent node: gateway/autojump.py); then the simulation
  runs, event by event, exactly until the answer is ready or the wait's bound. ``hold()`` and
  ``call()`` leave the brokers caught up with the controller. Between client calls the test
  moves time itself (``srv.run_for(60_000)`` takes milliseconds). Same client requests in the
  same order: same trace digest.
* **paced** (``speed=1.0``, ``10.0``, ...): virtual time follows the wall clock times ``speed``,
  so heartbeats, lease expiries and elections happen while clients wait, as on a real cluster.
  What happens then depends on client timing; the cluster itself stays seeded.

Faults reach the sockets: a node whose process is down closes its connections and every new
one; a paused node, or one the network cuts from the clients (node id -1, the admin node, is
the clients' side), reads nothing and answers nothing until it is back.
"""

from __future__ import annotations

import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Self

from kraft_testkit.admin import ADMIN_NODE_ID
from kraft_testkit.errors import KraftError
from kraft_testkit.protocol import rpc as wire
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.errors import ProtocolError
from kraft_testkit.raft import rpc
from kraft_testkit.sim import NoProgress
from kraft_testkit.sim.errors import InvariantViolation
from kraft_testkit.sim.rng import RngTree

from . import apis, autojump
from .connection import MAX_QUEUED_REQUESTS, BadFrame, Connection, Slot, read_head
from .context import Pending, RequestContext
from .data_plane import DataPlane
from .fit import fit_to_version

log = logging.getLogger("kraft_testkit.gateway")
HOST = "127.0.0.1"
_API_VERSIONS = 18
_SASL_HANDSHAKE, _SASL_AUTHENTICATE = 17, 36


class GatewayError(KraftError):
    """The gateway cannot do what was asked (bad speed, used after close, a failed loop)."""


class Gateway:
    """Serves a :class:`~kraft_testkit.cluster.Cluster` on loopback; see the module doc.

    ``with Gateway(cluster) as srv:`` starts it; ``srv.bootstrap_servers`` and
    ``srv.bootstrap_controllers`` are the addresses to give clients.
    """

    def __init__(self, cluster: Any, *, speed: float | None = None, host: str = HOST,
                 sasl: bool = False) -> None:
        if speed is not None and (isinstance(speed, bool) or not speed > 0):
            raise GatewayError(f"speed is None (stepping) or a number > 0, got {speed!r}")
        self.cluster = cluster
        self.speed = float(speed) if speed is not None else None
        self.host = host
        self.require_sasl = bool(sasl)  # SASL_PLAINTEXT listeners (else SASL is optional)
        self._nonces = RngTree(cluster.seed).child("gateway", "sasl-nonce")
        self.lock = threading.RLock()
        self.data_plane = DataPlane(cluster)
        self.awaiting: set[tuple[int, int]] = set()   # (broker, correlation id) forwarded
        self.mailbox: dict[tuple[int, int], Any] = {}  # their answers, as they arrive
        cluster.sim.network.on_deliver(self._collect)
        self.producer_id_blocks: dict[int, list[int]] = {}  # broker -> [next, end)
        self.lines: list[str] = []     # one line per rejected frame or connection problem
        self.requests_served = 0
        self.handler_errors: list[str] = []  # requests a handler failed on (closed; a kit bug)
        self._selector = selectors.DefaultSelector()
        self._listeners: dict[socket.socket, int] = {}
        self._ports: dict[int, int] = {}
        self._conns: dict[socket.socket, Connection] = {}
        self._tables = {role: apis.handlers_for(role) for role in ("broker", "controller")}
        self._ranges = {role: apis.version_ranges(role) for role in ("broker", "controller")}
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.failure: BaseException | None = None
        self._anchor = (0.0, 0)
        #: the committed offset at which a client's Metadata wait last ran out: waiting again
        #: before the metadata moves would only burn virtual time
        self.futile_metadata_wait = -1
        #: virtual ms the gateway jumped over while clients waited (group sessions skip them)
        self.autojumped_ms = 0
        self.groups: Any = None  # the group coordinator (gateway/groups), made on first use
        #: broker -> (process incarnation, its fetch session cache): gateway/fetch_sessions.py
        self.fetch_sessions: dict[int, tuple[int, Any]] = {}
        self.txns: Any = None    # the transaction coordinator (gateway/txn), made on first use

    # ------------------------------------------------------------------ addresses

    def address(self, node: Any) -> tuple[str, int]:
        """(host, port) of a node's listener (a handle or an id)."""
        from kraft_testkit.cluster import node_id

        nid = node_id(node)
        if nid not in self._ports:
            raise GatewayError(f"no listener for node {nid}; nodes: {sorted(self._ports)}")
        return self.host, self._ports[nid]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{self.host}:{self._ports[b]}" for b in self.cluster.broker_ids)

    @property
    def bootstrap_controllers(self) -> str:
        return ",".join(f"{self.host}:{self._ports[c]}" for c in self.cluster.controller_ids)

    def role(self, node: int) -> str:
        return "broker" if node in self.cluster.broker_ids else "controller"

    def apis(self, role: str) -> dict[int, range]:
        return self._ranges[role]

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Gateway:
        if self._thread is not None:
            raise GatewayError("the gateway is already started")
        for node in sorted(set(self.cluster.broker_ids) | set(self.cluster.controller_ids)):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, 0))
            sock.listen(64)
            sock.setblocking(False)
            self._listeners[sock] = node
            self._ports[node] = sock.getsockname()[1]
            self._selector.register(sock, selectors.EVENT_READ)
        autojump.settle(self.cluster, 10_000)
        self._reanchor()
        self._thread = threading.Thread(target=self._loop, name="kraft-gateway", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving: close every socket (the cluster stays usable from this thread)."""
        self._stop.set()
        if self._thread is not None:
            # one turn of the loop can run the simulation for seconds on a loaded machine; the
            # lock below keeps the sockets out of a turn still running after the bound
            self._thread.join(timeout=60)
        with self.lock:
            for sock in list(self._conns):
                self._drop(self._conns[sock], None)
            for sock in list(self._listeners):
                self._selector.unregister(sock)
                sock.close()
            self._listeners.clear()
            self.data_plane.enabled = False

    def __enter__(self) -> Self:
        return self.start() if self._thread is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self.raise_failure()

    def raise_failure(self) -> None:
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise GatewayError(f"the gateway's loop failed: {failure!r}") from failure

    # ------------------------------------------------------------------ the test's side

    @contextmanager
    def hold(self) -> Iterator[Any]:
        """The cluster, with the simulation to yourself (clients wait meanwhile)."""
        with self.lock:
            self.raise_failure()
            try:
                yield self.cluster
                if self.speed is None:  # what the test did is what the clients see next
                    before = self.cluster.now_ms
                    autojump.settle(self.cluster)
                    self.autojumped_ms += self.cluster.now_ms - before
            finally:
                self._reanchor()

    def call(self, fn: Callable[[Any], Any]) -> Any:
        with self.hold() as cluster:
            return fn(cluster)

    def run_for(self, ms: int) -> None:
        self.call(lambda c: c.run_for(ms))

    def run_until(self, predicate: Callable[[Any], object], timeout_ms: int | None = None) -> int:
        return self.call(lambda c: c.run_until(predicate, timeout_ms))

    def wait_until(self, predicate: Callable[[Any], object], timeout_s: float = 30.0) -> None:
        """Wait in wall time for ``predicate(cluster)`` (paced mode: let the clock run)."""
        deadline = time.monotonic() + timeout_s
        while not self.call(predicate):
            if time.monotonic() > deadline:
                raise GatewayError(f"{getattr(predicate, '__name__', 'predicate')} still false "
                                   f"after {timeout_s} s of wall time")
            time.sleep(0.01)

    def set_speed(self, speed: float | None) -> None:
        with self.lock:
            if speed is not None and (isinstance(speed, bool) or not speed > 0):
                raise GatewayError(f"speed is None (stepping) or a number > 0, got {speed!r}")
            self.speed = float(speed) if speed is not None else None
            self._reanchor()

    def cut_clients(self, *nodes: Any) -> Any:
        """Cut the clients (the admin node -1's side of the simulated network) off ``nodes``:
        their sockets go silent. Returns the cut for :meth:`heal_clients`."""
        from kraft_testkit.cluster import node_id

        with self.hold() as c:
            return c.sim.network.partition([ADMIN_NODE_ID], [node_id(n) for n in nodes])

    def heal_clients(self, cut: Any) -> None:
        with self.hold() as c:
            c.sim.network.heal(cut)

    def _collect(self, src: int, dst: int, msg: object) -> None:
        """Pick up the controller's answers to requests brokers forwarded for clients."""
        if self.awaiting and isinstance(msg, rpc.Response):
            key = (dst, msg.correlation_id)
            if key in self.awaiting:
                self.awaiting.discard(key)
                self.mailbox[key] = msg.body

    def sasl_nonce(self) -> str:
        """A SCRAM server nonce, from the cluster's seeded RNG tree."""
        return f"{self._nonces.getrandbits(128):032x}"

    def log_line(self, text: str) -> None:
        log.warning(text)
        self.lines.append(text)

    # ------------------------------------------------------------------ the loop

    def _reanchor(self) -> None:
        self._anchor = (time.monotonic(), self.cluster.now_ms)

    def _loop(self) -> None:
        while not self._stop.is_set():
            busy = self.speed is not None or any(s.pending for c in self._conns.values()
                                                 for s in c.slots)
            events = self._selector.select(0.005 if busy else 0.02)
            with self.lock:
                try:
                    for key, _ in events:
                        self._on_ready(key.fileobj)
                    self._serve_all()      # new requests: answers, or waits
                    self._advance_time()   # the simulation moves for the waits
                    if self.groups is not None:
                        self.groups.tick()  # sessions and rebalances whose time came
                    if self.txns is not None:
                        self.txns.tick()    # markers, expired transactions
                    self._serve_all()      # what became ready goes out now
                except Exception as e:  # a bug or an invariant violation: stop, tell the test
                    self.failure = e
                    log.exception("gateway loop failed")
                    self._stop.set()

    def _on_ready(self, sock: Any) -> None:
        node = self._listeners.get(sock)
        if node is not None:
            try:
                conn_sock, peer = sock.accept()
            except OSError:
                return
            conn_sock.setblocking(False)
            conn_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Connection(conn_sock, node, f"{peer[0]}:{peer[1]}")
            self._conns[conn_sock] = conn
            self._selector.register(conn_sock, selectors.EVENT_READ)
            return
        conn = self._conns.get(sock)
        if conn is None:
            return
        try:
            data = sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(conn, None)
            return
        conn.inbuf += data

    def _node_state(self, node: int) -> str:
        """"down" (closes), "silent" (paused or cut off from clients) or "up"."""
        process = self.cluster.sim.process(node)
        if not process.up:
            return "down"
        network = self.cluster.sim.network
        if process.state.value != "running" or network.blocked(ADMIN_NODE_ID, node) \
                or network.blocked(node, ADMIN_NODE_ID):
            return "silent"
        return "up"

    def _serve_all(self) -> None:
        for conn in list(self._conns.values()):
            state = self._node_state(conn.node)
            if state == "down":
                self._drop(conn, None)
                continue
            if state == "silent":
                continue
            try:
                while len(conn.slots) < MAX_QUEUED_REQUESTS and \
                        (frame := conn.next_frame()) is not None:
                    self._handle_frame(conn, frame)
            except BadFrame as e:
                self._drop(conn, str(e))
                continue
            self._poll_slots(conn)
            self._write(conn)
        for conn in list(self._conns.values()):
            self._mute_or_unmute(conn)

    def _mute_or_unmute(self, conn: Connection) -> None:
        """Stop reading a connection whose queue or unsent answers are full (the kernel's
        buffer and TCP flow control hold the client back, as Kafka's muted channels do)."""
        if conn.closed:
            return
        wants = conn.wants_read()
        if wants and not conn.reading:
            self._selector.register(conn.sock, selectors.EVENT_READ)
        elif conn.reading and not wants:
            self._selector.unregister(conn.sock)
        conn.reading = wants

    def _poll_slots(self, conn: Connection) -> None:
        now_wall = time.monotonic()
        for slot in conn.slots:
            pending = slot.pending
            if pending is None:
                continue
            response = pending.poll()
            if response is None:
                expired = (pending.virtual_deadline_ms is not None and
                           self.cluster.now_ms >= pending.virtual_deadline_ms) or \
                          (pending.wall_deadline is not None and now_wall >= pending.wall_deadline)
                if not expired:
                    continue
                response = pending.expire()
                if response is None:
                    self._drop(conn, f"node {conn.node}: request {slot.correlation_id} expired")
                    return
            slot.pending = None
            try:
                slot.frame = self._encode(response, slot.version, slot.correlation_id)
            except BadFrame as e:
                self._drop(conn, str(e))
                return
        conn.take_ready()

    def _write(self, conn: Connection) -> None:
        if conn.closed:
            return
        if conn.outbuf:
            try:
                sent = conn.sock.send(conn.outbuf)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._drop(conn, None)
                return
            del conn.outbuf[:sent]
        if conn.close_after_write and not conn.outbuf and not conn.slots:
            self._drop(conn, None)

    def _drop(self, conn: Connection, reason: str | None) -> None:
        if conn.closed:
            return
        if reason:
            self.log_line(f"closing {conn.peer} -> node {conn.node}: {reason}")
        conn.closed = True
        self._conns.pop(conn.sock, None)
        if conn.reading:
            try:
                self._selector.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
        conn.sock.close()

    # ------------------------------------------------------------------ requests

    def _handle_frame(self, conn: Connection, frame: bytes) -> None:
        api_key, version, cid = read_head(frame)
        role = self.role(conn.node)
        entry = self._tables[role].get(api_key)
        if entry is None:
            raise BadFrame(f"api key {api_key} is not served by a {role} listener")
        self._check_sasl_state(conn, api_key)
        supported = self._ranges[role][api_key]
        if version not in supported:
            if api_key == _API_VERSIONS:  # Kafka answers at v0 so the client can downgrade
                ctx = self._context(conn, role, api_key, 0, cid, None)
                from .cluster_apis import api_versions_response
                body = api_versions_response(ctx, self._ranges[role],
                                             ErrorCode.UNSUPPORTED_VERSION)
                conn.slots.append(Slot(api_key, 0, cid,
                                       frame=wire.encode_response(body, 0, cid)))
                return
            raise BadFrame(f"{entry[0].__name__} v{version} is not supported "
                           f"(v{supported.start}-{supported.stop - 1})")
        try:
            header, body = _decode_request(frame, entry[0], api_key, version)
        except (ProtocolError, KraftError, ValueError, IndexError) as e:
            raise BadFrame(f"cannot decode {entry[0].__name__} v{version}: {e} "
                           f"(first bytes {frame[:48].hex()})") from None
        ctx = self._context(conn, role, api_key, version, cid, header.client_id)
        ctx.connection = conn
        try:
            answer = entry[1](ctx, body)
        except (NoProgress, InvariantViolation):
            raise  # the simulation itself failed: stop and tell the test
        except Exception as e:  # a request the handler cannot take: Kafka closes too
            self.handler_errors.append(f"{entry[0].__name__} v{version}: {e!r}")
            log.debug("handler failed", exc_info=True)
            raise BadFrame(f"cannot serve {entry[0].__name__} v{version}: {e!r}") from None
        self.requests_served += 1
        slot = Slot(api_key, version, cid)
        if answer is None:
            slot.silent = True
        elif isinstance(answer, Pending):
            slot.pending = answer
        else:
            slot.frame = self._encode(answer, version, cid)
        conn.slots.append(slot)

    def _encode(self, response: Any, version: int, cid: int) -> bytes:
        """The response frame at the client's version; a response that cannot be encoded is a
        kit bug: recorded, and that connection closed (the cluster goes on)."""
        try:
            return wire.encode_response(fit_to_version(response, version), version, cid)
        except Exception as e:  # noqa: BLE001 (any encoder failure is the same kit bug)
            self.handler_errors.append(f"{type(response).__name__} v{version}: {e!r}")
            raise BadFrame(f"cannot encode {type(response).__name__} v{version}: {e!r}") from None

    def _check_sasl_state(self, conn: Connection, api_key: int) -> None:
        """Kafka's authenticator: once a handshake started only SaslAuthenticate may follow; a
        SASL listener takes nothing but ApiVersions and SASL before authentication."""
        state = conn.sasl
        done = state is not None and state.authenticated
        if state is not None and not done and api_key not in (_SASL_AUTHENTICATE,):
            raise BadFrame(f"api key {api_key} during a SASL exchange")
        if self.require_sasl and not done and api_key not in (_API_VERSIONS, _SASL_HANDSHAKE,
                                                                _SASL_AUTHENTICATE):
            raise BadFrame(f"api key {api_key} before SASL authentication")

    def _context(self, conn: Connection, role: str, api_key: int, version: int, cid: int,
                 client_id: str | None) -> RequestContext:
        return RequestContext(self, conn.node, role, api_key, version, cid, client_id)

    # ------------------------------------------------------------------ time

    def _advance_time(self) -> None:
        sim = self.cluster.sim
        if self.speed is not None:
            wall0, virtual0 = self._anchor
            target = virtual0 + int((time.monotonic() - wall0) * 1000 * self.speed)
            if target > sim.now_ms:
                # at most 100 ms of wall time's worth per turn: a simulation slower than the
                # speed (a loaded machine) catches up over several turns, and every turn still
                # serves the sockets and sees a stop, instead of one turn growing without bound
                sim.run_for(min(target - sim.now_ms, max(1, int(100 * self.speed))))
            return
        waits = [s.pending for c in self._conns.values() for s in c.slots
                 if s.pending is not None and self._node_state(c.node) == "up"
                 and s.pending.needs_simulation]
        deadlines = [p.virtual_deadline_ms for p in waits]
        parked = self._parked(sim.now_ms)
        deadlines += [conn.parked_until_ms for conn in parked]
        deadlines = [d for d in deadlines if d > sim.now_ms]
        if not deadlines:
            return

        def answered(_: Any) -> bool:
            return any(p.poll() is not None for p in waits) or \
                any(self._node_state(conn.node) != "silent" for conn in parked)

        before = sim.now_ms
        try:
            sim.run_until(answered, min(deadlines) - sim.now_ms)
        except NoProgress:
            pass
        self.autojumped_ms += sim.now_ms - before

    def _parked(self, now_ms: int) -> list[Connection]:
        """Connections holding requests a silent node (paused, cut off) has not read: virtual
        time runs for them once, up to the bound of a client's wait (the node may come back,
        or the controller fence it and move its partitions, as while a real client waits)."""
        out = []
        for conn in self._conns.values():
            if self._node_state(conn.node) != "silent":
                conn.parked_until_ms = None
                continue
            if not conn.inbuf and not conn.slots:
                continue
            if conn.parked_until_ms is None:
                conn.parked_until_ms = now_ms + autojump.wait_bound_ms(self.cluster)
            out.append(conn)
        return out


def _decode_request(frame: bytes, cls: Any, api_key: int, version: int) -> tuple[Any, Any]:
    """Header and body of a request frame. Bytes after the body are ignored, as Kafka's
    generated readers ignore them (librdkafka's Metadata v12 carries three)."""
    header, pos = wire.RequestHeader.decode_from(
        frame, 4, wire.request_header_version(api_key, version))
    body, _ = cls.decode_from(frame, pos, version)
    return header, body
