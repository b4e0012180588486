"""The simulated network: latency, loss, duplication, reordering, partitions, filters, wire mode.

A message goes through these gates, in order, when it is sent:

1. a partition cutting the link drops it;
2. the first matching filter may drop it, hold it (until :meth:`Network.release`) or delay it;
3. the link's profile may lose it, then draws its latency (and maybe a reordering delay), and may
   send a duplicate.

When it arrives, a partition made meanwhile still drops it, and it vanishes if the destination is
down or restarted since it was sent (the connection it travelled on is gone). A paused node's door
still takes it: the process queues it until resumed.

Each directed link draws from its own counter-keyed stream (``link-<src>-<dst>``, see
:mod:`~kraft_testkit.sim.streams`): the latency, loss and tie key of its n-th message depend only
on (seed, link, n), so traffic on one link never changes what happens on another, and a fast
path that accounts for skipped messages by count leaves every later draw where it was.

A link can be split into channels, as a Kafka node keeps separate connections for separate
clients (its Raft client, and its channel to the controller for heartbeats): ``channel_of(msg)``
names the channel of a message (None: the default one), and each channel is a link of its own
(``link-<src>-<dst>/<channel>``), with its own FIFO order and its own stream. Partitions and
filters cut or match every channel alike. In wire mode (a ``codec``), every message is encoded on
send and decoded on arrival: the receiver gets a fresh object, and the codec is exercised by every
run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from kraft_testkit.sim import topology as topo
from kraft_testkit.sim.errors import InvalidArgument
from kraft_testkit.sim.filters import Filter, Match, describe_nodes
from kraft_testkit.sim.link import Fixed, LinkProfile, Uniform
from kraft_testkit.sim.rng import RngTree
from kraft_testkit.sim.scheduler import Scheduler
from kraft_testkit.sim.streams import MessageRandom, plain_draws, stream_key
from kraft_testkit.sim.topology import NodeSet, Topology, node_set
from kraft_testkit.sim.trace import Trace


class Codec(Protocol):
    """Turns messages into bytes and back (Kafka's RPC codec in the real kit)."""

    def encode(self, msg: object) -> bytes: ...

    def decode(self, data: bytes) -> object: ...


class Receiver(Protocol):
    """What the network delivers to: a node process."""

    @property
    def incarnation(self) -> int: ...

    @property
    def up(self) -> bool: ...

    def receive(self, packet: Packet) -> None: ...


DeliverHook = Callable[[int, int, object], object]
ChannelOf = Callable[[object], "str | None"]


class Packet:
    """A message in flight: who sent it to whom, and for which incarnation of the receiver."""

    __slots__ = ("data", "dst", "incarnation", "link", "msg", "src")

    def __init__(
        self, src: int, dst: int, msg: object, data: bytes | None, incarnation: int,
        link: _Link | None = None,
    ) -> None:
        self.src = src
        self.dst = dst
        self.msg = msg  # in wire mode: the sender's object until arrival, then the decoded copy
        self.data = data
        self.incarnation = incarnation
        self.link = link  # the link (channel) it travels on

    def __repr__(self) -> str:
        return f"Packet({self.src}->{self.dst} {type(self.msg).__name__})"


class _Link:
    """One direction (and channel) between two nodes: its profile, its randomness (drawn per
    message, see :mod:`~kraft_testkit.sim.streams`) and its FIFO position."""

    __slots__ = (
        "_rng", "blocked", "dst", "key", "last_at", "last_tie", "plain", "profile", "sent", "src"
    )

    def __init__(
        self, src: int, dst: int, profile: LinkProfile, rng: MessageRandom | None, key: int,
        blocked: bool,
    ) -> None:
        self.src = src
        self.dst = dst
        self._rng = rng
        self.key = key
        self.set_profile(profile)
        self.blocked = blocked
        self.sent = 0  # messages sent on the link so far: the position of the next one's draws
        self.last_at = -1
        self.last_tie = 0

    @property
    def rng(self) -> MessageRandom:
        """The link's draws, made on first use: a plain link (the default profile) draws
        inline in ``send`` and never needs one (its seeding was a cost of every boot). A
        counter-keyed stream is a function of its key alone, so when it is made changes
        nothing."""
        rng = self._rng
        if rng is None:
            rng = self._rng = MessageRandom(self.key)
        return rng

    def set_profile(self, profile: LinkProfile) -> None:
        self.profile = profile
        # (low, span): a FIFO link that only draws a latency (Fixed: span 0, no draw) and a
        # tie key; send() computes those two draws inline, the same values MessageRandom gives
        self.plain: tuple[int, int] | None = None
        latency = profile.latency
        if profile.fifo and not (profile.drop or profile.duplicate or profile.reorder):
            if type(latency) is Fixed:
                self.plain = (latency.ms, 0)
            elif type(latency) is Uniform:
                self.plain = (latency.low, latency.high - latency.low + 1)


def _optional_set(nodes: int | Iterable[int] | None) -> NodeSet:
    return None if nodes is None else node_set(nodes)


class Network:
    """Carries messages between node processes under the faults the test asks for."""

    def __init__(
        self,
        scheduler: Scheduler,
        rng: RngTree,
        trace: Trace,
        receivers: Mapping[int, Receiver],
        profile: LinkProfile,
        codec: Codec | None = None,
        channel_of: ChannelOf | None = None,
    ) -> None:
        """``channel_of(msg)``: the channel a message travels on (None: the link's default
        channel); it should depend on the message's type only (it is asked once per type)."""
        if not isinstance(profile, LinkProfile):
            raise InvalidArgument(f"expected a LinkProfile, got {profile!r}")
        if codec is not None and not (
            callable(getattr(codec, "encode", None)) and callable(getattr(codec, "decode", None))
        ):
            raise InvalidArgument(
                f"a codec needs encode(msg) -> bytes and decode(bytes) -> msg, got {codec!r}"
            )
        self.codec = codec
        self.stats: dict[str, int] = dict.fromkeys(
            ("sent", "delivered", "dropped", "duplicated", "reordered", "held", "vanished"), 0
        )
        self._sched = scheduler
        self._rng = rng
        self._trace = trace
        self._receivers = receivers
        self._links: dict[int, dict[object, _Link]] = {}  # src -> dst or (dst, channel) -> link
        self._channel_of = channel_of
        self._channels: dict[type, str | None] = {}  # message type -> channel, asked once
        # (src, dst, message type) -> the link it takes: what _channel and _link answer, once
        self._routes: dict[tuple[int, int, type], _Link] = {}
        self._profiles: list[tuple[NodeSet, NodeSet, LinkProfile]] = [(None, None, profile)]
        self._partitions: list[Topology] = []
        self._filters: list[Filter] = []
        self._held: list[Packet] = []
        self._hooks: list[DeliverHook] = []
        self._arrive_cb = self._arrive  # bound once: no allocation per scheduled message

    # ---- traffic (called by processes) -------------------------------------------------------

    def send(self, src: int, dst: int, msg: object) -> None:
        """Put a message on the wire; what happens to it is up to the gates above."""
        now = self._sched.now_ms
        stats = self.stats
        stats["sent"] += 1
        self._trace.record(now, "send", src, dst, type(msg).__name__)
        data = None if self.codec is None else self.codec.encode(msg)
        receiver = self._receivers.get(dst)
        route = (src, dst, type(msg))
        link = self._routes.get(route)
        if link is None:  # once per (src, dst, message type): links are never replaced
            link = self._routes[route] = self._route(src, dst, msg)
        packet = Packet(
            src, dst, msg, data, -1 if receiver is None else receiver.incarnation, link
        )
        n = link.sent  # every draw for this message is a function of (seed, link, n)
        link.sent = n + 1
        if link.blocked:
            self._drop(packet, "partition")
            return
        extra_ms = 0
        if self._filters:
            rule = self._first_filter(src, dst, msg)
            if rule is not None:
                if rule.action == "drop":
                    self._drop(packet, rule.name)
                    return
                if rule.action == "hold":
                    stats["held"] += 1
                    self._held.append(packet)
                    self._trace.record(now, "hold", src, dst, type(msg).__name__)
                    return
                extra_ms = rule.delay_ms
        plain = link.plain
        if plain is not None:  # MessageRandom's draws 1 (latency) and 2 (tie key), inline
            latency, tie = plain_draws(link.key, n, *plain)
            at = now + extra_ms + latency
            if at <= link.last_at:  # behind an earlier message: same instant, same tie, in order
                self._sched.call_at(link.last_at, self._arrive_cb, packet, link.last_tie)
            else:
                link.last_at = at
                link.last_tie = tie
                self._sched.call_at(at, self._arrive_cb, packet, tie)
            return
        rng = link.rng
        rng.seek(n)
        profile = link.profile
        if profile.drop and rng.random() < profile.drop:
            self._drop(packet, "loss")
            return
        self._schedule(link, packet, now + extra_ms)
        if profile.duplicate and rng.random() < profile.duplicate:
            stats["duplicated"] += 1
            self._trace.record(now, "dup", src, dst, type(msg).__name__)
            self._schedule(
                link, Packet(src, dst, msg, data, packet.incarnation, link), now + extra_ms
            )

    def _route(self, src: int, dst: int, msg: object) -> _Link:
        """The link (channel) a message of this type takes from ``src`` to ``dst``."""
        if self._channel_of is None:
            return self._link(src, dst)
        kind = type(msg)
        channel = self._channels[kind] if kind in self._channels else self._channel(kind, msg)
        return self._link(src, dst) if channel is None else self._link(src, dst, channel)

    def _channel(self, kind: type, msg: object) -> str | None:
        channel = self._channel_of(msg)  # type: ignore[misc]
        if channel is not None and type(channel) is not str:
            raise InvalidArgument(f"channel_of must return a str or None, got {channel!r}")
        self._channels[kind] = channel
        return channel

    def _schedule(self, link: _Link, packet: Packet, from_ms: int) -> None:
        profile = link.profile
        rng = link.rng
        sched = self._sched
        at = from_ms + profile.latency.sample(rng)
        tie = rng.getrandbits(32)
        if profile.reorder and rng.random() < profile.reorder:
            self.stats["reordered"] += 1
            sched.call_at(at + profile.reorder_delay.sample(rng), self._arrive_cb, packet, tie)
        elif not profile.fifo:
            sched.call_at(at, self._arrive_cb, packet, tie)
        elif at <= link.last_at:  # behind an earlier message: same instant, same tie, send order
            sched.call_at(link.last_at, self._arrive_cb, packet, link.last_tie)
        else:
            link.last_at = at
            link.last_tie = tie
            sched.call_at(at, self._arrive_cb, packet, tie)

    def _arrive(self, packet: Packet) -> None:
        if packet.link.blocked:  # type: ignore[union-attr]
            self._drop(packet, "partition")
            return
        receiver = self._receivers.get(packet.dst)
        if receiver is None or not receiver.up or receiver.incarnation != packet.incarnation:
            self.stats["vanished"] += 1
            self._trace.record(
                self._sched.now_ms, "vanish", packet.src, packet.dst, type(packet.msg).__name__
            )
            return
        if packet.data is not None:
            packet.msg = self.codec.decode(packet.data)  # type: ignore[union-attr]
        self.stats["delivered"] += 1
        for hook in self._hooks:
            hook(packet.src, packet.dst, packet.msg)
        receiver.receive(packet)

    def _drop(self, packet: Packet, reason: str) -> None:
        self.stats["dropped"] += 1
        self._trace.record(
            self._sched.now_ms,
            "drop",
            packet.src,
            packet.dst,
            f"{type(packet.msg).__name__} ({reason})",
        )

    def _link(self, src: int, dst: int, channel: str | None = None) -> _Link:
        row = self._links.get(src)
        if row is None:
            row = self._links[src] = {}
        key = dst if channel is None else (dst, channel)
        link = row.get(key)
        if link is None:
            link = row[key] = self._new_link(src, dst, channel)
        return link

    def _peek_link(self, src: int, dst: int, channel: str | None = None) -> _Link:
        """The link as ``_link`` has or would make it, without keeping a new one (a link
        exists from its first message on: the idle warp's model reads links it may not use)."""
        link = self._links.get(src, {}).get(dst if channel is None else (dst, channel))
        return link if link is not None else self._new_link(src, dst, channel)

    def _new_link(self, src: int, dst: int, channel: str | None) -> _Link:
        name = f"link-{src}-{dst}" if channel is None else f"link-{src}-{dst}/{channel}"
        stream = stream_key(self._rng.root_seed, (*self._rng.path, name))
        return _Link(
            src,
            dst,
            self._profile_for(src, dst),
            None,  # made on first use (see _Link.rng)
            stream,
            any(t.blocks(src, dst) for t in self._partitions),
        )

    def _all_links(self) -> Iterable[tuple[int, int, _Link]]:
        for row in self._links.values():
            for link in row.values():
                yield link.src, link.dst, link

    # ---- link behaviour ----------------------------------------------------------------------

    def set_profile(
        self,
        profile: LinkProfile,
        *,
        src: int | Iterable[int] | None = None,
        dst: int | Iterable[int] | None = None,
    ) -> None:
        """Use ``profile`` on links from ``src`` to ``dst`` (None: any node); the latest rule wins.

        Without ``src`` and ``dst`` it becomes the profile of every link and earlier rules go.
        """
        if not isinstance(profile, LinkProfile):
            raise InvalidArgument(f"expected a LinkProfile, got {profile!r}")
        rule = (_optional_set(src), _optional_set(dst), profile)
        if src is None and dst is None:
            self._profiles = [rule]
        else:
            self._profiles.append(rule)
        for s, d, link in self._all_links():
            link.set_profile(self._profile_for(s, d))
        self._trace.record(
            self._sched.now_ms,
            "net",
            None,
            None,
            f"profile {describe_nodes(rule[0])}->{describe_nodes(rule[1])}",
        )

    def profile(self, src: int, dst: int) -> LinkProfile:
        """The profile the link from ``src`` to ``dst`` uses."""
        return self._profile_for(src, dst)

    def _profile_for(self, src: int, dst: int) -> LinkProfile:
        for srcs, dsts, profile in reversed(self._profiles):
            if (srcs is None or src in srcs) and (dsts is None or dst in dsts):
                return profile
        raise AssertionError("the first profile rule matches every link")

    # ---- partitions --------------------------------------------------------------------------

    def apply(self, topology: Topology) -> Topology:
        """Cut the links ``topology`` names, on top of any cuts already in place."""
        if not isinstance(topology, Topology):
            raise InvalidArgument(f"expected a Topology, got {topology!r}")
        self._partitions.append(topology)
        self._refresh_blocked()
        self._trace.record(self._sched.now_ms, "net", None, None, topology.name)
        return topology

    def partition(self, *groups: int | Iterable[int]) -> Topology:
        """Nodes in different groups cannot talk, both ways: ``partition({1, 2}, {3, 4, 5})``."""
        return self.apply(topo.partition(*groups))

    def partition_one_way(self, srcs: int | Iterable[int], dsts: int | Iterable[int]) -> Topology:
        """Messages from ``srcs`` to ``dsts`` are lost; replies the other way still pass."""
        return self.apply(topo.one_way(srcs, dsts))

    def isolate(self, node: int) -> Topology:
        """``node`` can neither send nor receive."""
        return self.apply(topo.isolated(node))

    def heal(self, topology: Topology | None = None) -> None:
        """Undo one cut (the value ``apply`` returned), or every cut when called without one."""
        if topology is None:
            self._partitions.clear()
        elif topology in self._partitions:
            self._partitions.remove(topology)
        else:
            raise InvalidArgument(f"{topology.name!r} is not in place")
        self._refresh_blocked()
        self._trace.record(
            self._sched.now_ms, "net", None, None, f"heal {topology.name if topology else 'all'}"
        )

    @property
    def partitions(self) -> tuple[Topology, ...]:
        return tuple(self._partitions)

    def blocked(self, src: int, dst: int) -> bool:
        """Whether a message from ``src`` to ``dst`` would be cut now."""
        return any(t.blocks(src, dst) for t in self._partitions)

    def _refresh_blocked(self) -> None:
        for src, dst, link in self._all_links():
            link.blocked = self.blocked(src, dst)

    # ---- filters and held messages -----------------------------------------------------------

    def drop(
        self,
        match: Match = None,
        *,
        src: int | Iterable[int] | None = None,
        dst: int | Iterable[int] | None = None,
        count: int | None = None,
    ) -> Filter:
        """Lose matching messages (all, or the next ``count``). ``match``: a type or a predicate."""
        return self._add_filter(
            Filter("drop", match, _optional_set(src), _optional_set(dst), 0, count)
        )

    def hold(
        self,
        match: Match = None,
        *,
        src: int | Iterable[int] | None = None,
        dst: int | Iterable[int] | None = None,
        count: int | None = None,
    ) -> Filter:
        """Keep matching messages aside until :meth:`release` or :meth:`deliver_one`."""
        return self._add_filter(
            Filter("hold", match, _optional_set(src), _optional_set(dst), 0, count)
        )

    def delay(
        self,
        ms: int,
        match: Match = None,
        *,
        src: int | Iterable[int] | None = None,
        dst: int | Iterable[int] | None = None,
        count: int | None = None,
    ) -> Filter:
        """Add ``ms`` to the latency of matching messages (on a FIFO link, later ones wait too)."""
        if type(ms) is not int or ms < 0:
            raise InvalidArgument(f"delay must be an int >= 0 (ms), got {ms!r}")
        return self._add_filter(
            Filter("delay", match, _optional_set(src), _optional_set(dst), ms, count)
        )

    def remove_filter(self, rule: Filter) -> None:
        """Stop applying ``rule``; a no-op when it already expired."""
        if rule in self._filters:
            self._filters.remove(rule)
            self._trace.record(self._sched.now_ms, "net", None, None, f"filter - {rule.name}")

    def clear_filters(self) -> None:
        for rule in list(self._filters):
            self.remove_filter(rule)

    @property
    def filters(self) -> tuple[Filter, ...]:
        return tuple(self._filters)

    def _add_filter(self, rule: Filter) -> Filter:
        self._filters.append(rule)
        self._trace.record(self._sched.now_ms, "net", None, None, f"filter + {rule.name}")
        return rule

    def _first_filter(self, src: int, dst: int, msg: object) -> Filter | None:
        for rule in self._filters:
            if rule.matches(src, dst, msg):
                if rule.remaining is not None:
                    rule.remaining -= 1
                    if rule.remaining == 0:
                        self._filters.remove(rule)
                return rule
        return None

    @property
    def held(self) -> tuple[Packet, ...]:
        """Messages held by ``hold`` filters, oldest first."""
        return tuple(self._held)

    def release(self, match: Match = None) -> int:
        """Deliver the held messages that match (all by default), in the order they were held.

        They arrive at the current instant, as the next events, still subject to partitions and
        to the receiver being up. Returns how many were released.
        """
        picker = Filter("release", match, None, None, 0, None)
        chosen: list[Packet] = []
        kept: list[Packet] = []
        for packet in self._held:
            (chosen if picker.matches(packet.src, packet.dst, packet.msg) else kept).append(packet)
        self._held = kept
        tie = None
        for packet in chosen:
            tie = self._redeliver(packet, tie)
        return len(chosen)

    def deliver_one(self, which: int | Match = 0) -> Packet:
        """Deliver one held message: by position in :attr:`held`, or the first one that matches."""
        if type(which) is int:
            if not -len(self._held) <= which < len(self._held):
                raise InvalidArgument(f"no held message #{which} ({len(self._held)} held)")
            packet = self._held.pop(which)
        else:
            picker = Filter("deliver", which, None, None, 0, None)  # type: ignore[arg-type]
            index = next(
                (i for i, p in enumerate(self._held) if picker.matches(p.src, p.dst, p.msg)), None
            )
            if index is None:
                raise InvalidArgument(f"no held message matches {which!r} ({len(self._held)} held)")
            packet = self._held.pop(index)
        self._redeliver(packet, None)
        return packet

    def _redeliver(self, packet: Packet, tie: int | None) -> int:
        now = self._sched.now_ms
        self._trace.record(now, "release", packet.src, packet.dst, type(packet.msg).__name__)
        return Scheduler.tie_of(self._sched.call_at(now, self._arrive_cb, packet, tie))

    # ---- observation -------------------------------------------------------------------------

    def on_deliver(self, hook: DeliverHook) -> None:
        """Call ``hook(src, dst, msg)`` for every message that reaches a live node's door."""
        if not callable(hook):
            raise InvalidArgument(f"a deliver hook must be callable, got {hook!r}")
        self._hooks.append(hook)
