"""KIP-853 on the Cluster facade: ``add_controller``, ``add_voter``, ``remove_voter``,
``voter_set`` (a mixin of :class:`~kraft_testkit.cluster.Cluster`, kept apart so cluster.py
stays small).

With ``Cluster(kraft_version=1)`` the controllers are formatted as ``--initial-controllers``
and the voter set lives in the metadata log. A controller added later is formatted with
neither flag: it fetches the log as an observer until AddRaftVoter makes it a voter. The
requests go to the active controller like Kafka's ``Admin.addRaftVoter`` /
``removeRaftVoter`` and are retried on retriable errors (:mod:`kraft_testkit.raft.membership`).
"""

from __future__ import annotations

from typing import Any

from .errors import ConfigError
from .handles import NodeHandle, node_id
from .protocol.codegen import Message
from .protocol.uuid import Uuid
from .raft import membership
from .raft.voters import VoterSet, default_endpoints
from .sim.errors import NoProgress


class VoterOps:
    """The Cluster's voter-change operations (see the module docstring)."""

    def add_controller(self: Any) -> Any:
        """Start a new controller-only node (the next free id), formatted with neither
        ``--standalone`` nor ``--initial-controllers``; returns its handle. It catches up as an
        observer (and registers with the active controller) until :meth:`add_voter`."""
        if not any(r.dynamic for n in self.controller_ids if (r := self.replica(n)) is not None):
            # Kafka refuses a controller outside a static controller.quorum.voters at start
            raise ConfigError("add_controller needs a dynamic quorum (kraft.version 1): this "
                              "cluster's voters are static (kraft.version 0; a controller must "
                              "be one of controller.quorum.voters); build it with "
                              "Cluster(..., kraft_version=1) or upgrade kraft.version first")
        nid = max(self.controller_ids) + 1
        while nid in self.roles:
            nid += 1
        self.roles[nid] = ("controller",)
        self.controller_ids.append(nid)
        self.directory_ids[nid] = Uuid.random(self._id_rng.child("directory", nid))
        handle = NodeHandle(nid, ("controller",), self)
        self.controllers.append(handle)
        self.sim.add_node(nid, self._factory, disk=self._disk(nid))
        return handle

    def voter_set(self: Any) -> VoterSet | None:
        """The active controller's voter set in effect (None: no active controller, or static
        voters with kraft.version 0)."""
        active = self.active_controller
        if active is None:
            return None
        raft = self.replica(active)
        return raft.history.latest if raft.dynamic else None

    def add_voter(self: Any, node: Any, *, timeout_ms: int = 30_000) -> Message:
        """AddRaftVoter for a running controller with its current directory id and endpoint;
        returns the response once the VotersRecord is committed. :class:`KafkaApiError`
        (DUPLICATE_VOTER, UNSUPPORTED_VERSION with kraft.version 0, ...) otherwise."""
        handle = self.node(node)
        raft = self.replica(handle)
        if not handle.is_controller or raft is None:
            raise ConfigError(f"node {handle.id} is not a running controller: only a running "
                              f"controller (an observer of the metadata log) can become a voter")
        host = self.names.hosts.get(handle.id) if self.names.style != "short" else None
        body = membership.add_voter_request(self.cluster_id, handle.id, raft.dir,
                                            default_endpoints(handle.id, host), timeout_ms)
        return self._change_voters(body, timeout_ms)

    def remove_voter(self: Any, node: Any, directory_id: Uuid | None = None, *,
                     timeout_ms: int = 30_000) -> Message:
        """RemoveRaftVoter for ``node`` (by default with the directory id the voter set holds
        for it); returns once committed. Removing the active controller makes it resign."""
        nid = node_id(node)  # a removed voter may be no node of this cluster any more
        if directory_id is not None and not isinstance(directory_id, Uuid):
            raise ConfigError(f"remove_voter: directory_id={directory_id!r:.60} is not allowed; "
                              f"directory_id must be a Uuid (Uuid.parse('...')) or None (the "
                              f"one the voter set holds)")
        if directory_id is None:  # the leader's set names it: wait for a leader first
            self.run_until(lambda c: c.active_controller is not None, timeout_ms=timeout_ms)
            directory_id = membership.voter_directory(self.voter_set(), nid)
        body = membership.remove_voter_request(self.cluster_id, nid, directory_id)
        return self._change_voters(body, timeout_ms)

    def _change_voters(self: Any, body: Message, timeout_ms: int) -> Message:
        def leader() -> int | None:
            active = self.active_controller
            return active.id if active is not None else None

        def ask(dest: int, request: Message, wait_ms: int) -> Message | None:
            try:
                return self.request(request, to=dest, timeout_ms=wait_ms)
            except NoProgress:
                return None

        return membership.change_voters(
            self, body, leader=leader, ask=ask, timeout_ms=timeout_ms,
            retry_backoff_ms=self.raft_config.retry_backoff_ms,
            request_timeout_ms=self.raft_config.request_timeout_ms)
