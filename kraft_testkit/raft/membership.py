"""KIP-853 voter changes as a user asks for them: the admin side of AddRaftVoter and
RemoveRaftVoter, shared by :class:`~kraft_testkit.quorum.Quorum` and
:class:`~kraft_testkit.cluster.Cluster`.

Like Kafka's admin client (``Admin.addRaftVoter`` / ``removeRaftVoter``), a request goes to the
leader and is retried on the retriable errors (REQUEST_TIMED_OUT: a change pending, the leader's
epoch not established, the new voter still catching up; NOT_LEADER_OR_FOLLOWER: the leader
moved) until the timeout; any other error code raises :class:`KafkaApiError` at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraft_testkit.errors import ConfigError
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import KafkaApiError
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import errors as E
from kraft_testkit.raft.voters import Endpoint, default_endpoints

# What a retry hears when an earlier attempt of the same change already committed.
_DONE_ON_RETRY = {"AddRaftVoter": E.DUPLICATE_VOTER, "RemoveRaftVoter": E.VOTER_NOT_FOUND}
RETRIABLE = frozenset({E.REQUEST_TIMED_OUT, E.NOT_LEADER_OR_FOLLOWER, E.BROKER_NOT_AVAILABLE})

# ask(leader id, request body, wait ms) -> the response body, or None when none came in time
Ask = Callable[[int, Any, int], Any]


def add_voter_request(cluster_id: str, node_id: int, directory_id: Uuid,
                      endpoints: tuple[Endpoint, ...] | None = None,
                      timeout_ms: int = 30_000) -> M.AddRaftVoterRequest:
    endpoints = endpoints or default_endpoints(node_id)
    return M.AddRaftVoterRequest(
        cluster_id=cluster_id, timeout_ms=timeout_ms, voter_id=node_id,
        voter_directory_id=directory_id,
        listeners=tuple(M.AddRaftVoterRequest.Listener(name=n, host=h, port=p)
                        for n, h, p in endpoints))


def voter_directory(voters: Any, node_id: int) -> Uuid:
    """The directory id the voter set holds for ``node_id`` (what RemoveRaftVoter names by
    default); a :class:`ConfigError` when the node does not vote."""
    if voters is None:
        raise ConfigError(f"cannot name node {node_id}'s voter key: the leader has no dynamic "
                          "voter set (kraft.version 0: static voters)")
    if node_id not in voters:
        raise ConfigError(f"node {node_id} is not in the voter set {voters}")
    return voters.keys[node_id]


def remove_voter_request(cluster_id: str, node_id: int,
                         directory_id: Uuid) -> M.RemoveRaftVoterRequest:
    return M.RemoveRaftVoterRequest(cluster_id=cluster_id, voter_id=node_id,
                                    voter_directory_id=directory_id)


def change_voters(facade: Any, body: Any, *, leader: Callable[[], int | None], ask: Ask,
                  timeout_ms: int, retry_backoff_ms: int, request_timeout_ms: int) -> Any:
    """Send ``body`` to the leader until it answers NONE (returned) or a non-retriable error
    (raised as :class:`KafkaApiError`); :class:`KafkaApiError` with the last retriable code when
    ``timeout_ms`` of virtual time ran out."""
    api = type(body).__name__.removesuffix("Request")
    deadline = facade.now_ms + timeout_ms
    last, message = E.REQUEST_TIMED_OUT, "no leader answered"
    sent = 0
    while True:
        dest = leader()
        if dest is not None:
            response = ask(dest, body, max(1, min(request_timeout_ms, deadline - facade.now_ms)))
            sent += 1
            if response is not None:
                if response.error_code == E.NONE:
                    return response
                if sent > 1 and response.error_code == _DONE_ON_RETRY.get(api):
                    # An earlier attempt of ours committed while we waited (the leader answers
                    # at the commit, which may come after this side stopped waiting).
                    return type(response)(error_code=E.NONE)
                last, message = response.error_code, getattr(response, "error_message", None)
                if last not in RETRIABLE:
                    raise KafkaApiError(last, message, api=api)
        if facade.now_ms >= deadline:
            raise KafkaApiError(last, message, api=api)
        facade.run_for(min(retry_backoff_ms, max(1, deadline - facade.now_ms)))
