"""The security records' part of a metadata delta: ACLs, SCRAM credentials, delegation tokens.

A mixin of :class:`~.delta.MetadataDelta` (which holds the state: ``_acls``, ``_scram``,
``_tokens`` and the base image), apart so that the delta module stays about topics, brokers,
features and configs.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..protocol.uuid import Uuid
from .errors import MetadataReplayError
from .security import SCRAM_MECHANISMS, Acl, DelegationToken, ScramCredential, scram_keys

#: "not changed by this delta" (None means removed)
UNSET: Any = object()
_UNSET = UNSET


class SecurityRecords:
    """Replay of AccessControlEntry, UserScramCredential and DelegationToken records (and their
    removals and draft shapes) into the delta's maps."""

    __slots__ = ()
    _acls: dict
    _scram: dict
    _tokens: dict
    _base: Any

    def _scram_current(self, user: str, mechanism: int) -> ScramCredential | None:
        cred = self._scram.get((user, mechanism), _UNSET)
        return self._base.scram.credentials.get((user, mechanism)) if cred is _UNSET else cred

    def _acl(self, rec: Any) -> None:
        self._acls[rec.id] = Acl.from_record(rec)

    def _draft_acl(self, rec: Any) -> None:
        # The draft record has no id; derive a stable one from its content (same entry, same id).
        acl_id = Uuid(hashlib.sha256(b"draft-acl:" + rec.encode(0)).digest()[:16])
        self._acls[acl_id] = Acl.from_record(rec)

    def _remove_acl(self, rec: Any) -> None:
        current = self._acls.get(rec.id, _UNSET)
        if current is _UNSET:
            current = self._base.acls.acls.get(rec.id)
        if current is None:
            raise MetadataReplayError(f"no ACL with id {rec.id}", rec)
        self._acls[rec.id] = None

    def _scram_credential(self, rec: Any) -> None:
        if rec.mechanism not in SCRAM_MECHANISMS:
            raise MetadataReplayError(f"unknown SCRAM mechanism {rec.mechanism}", rec)
        self._scram[(rec.name, rec.mechanism)] = ScramCredential(
            rec.salt, rec.stored_key, rec.server_key, rec.iterations)

    def _draft_scram_credential(self, rec: Any) -> None:
        # One draft record states all of a user's credentials: mechanisms it omits are removed.
        infos = {i.mechanism: i for i in rec.credential_infos}
        for mechanism in infos:
            if mechanism not in SCRAM_MECHANISMS:
                raise MetadataReplayError(f"unknown SCRAM mechanism {mechanism}", rec)
        for mechanism in SCRAM_MECHANISMS:
            info = infos.get(mechanism)
            if info is not None:
                stored, server = scram_keys(mechanism, info.salted_password)
                self._scram[(rec.name, mechanism)] = ScramCredential(
                    info.salt, stored, server, info.iterations)
            elif self._scram_current(rec.name, mechanism) is not None:
                self._scram[(rec.name, mechanism)] = None

    def _remove_scram_credential(self, rec: Any) -> None:
        if self._scram_current(rec.name, rec.mechanism) is None:
            raise MetadataReplayError(
                f"no SCRAM credential for user {rec.name!r} and mechanism {rec.mechanism}", rec)
        self._scram[(rec.name, rec.mechanism)] = None

    def _delegation_token(self, rec: Any) -> None:
        self._tokens[rec.token_id] = DelegationToken.from_record(rec)

    def _remove_delegation_token(self, rec: Any) -> None:
        current = self._tokens.get(rec.token_id, _UNSET)
        if current is _UNSET:
            current = self._base.delegation_tokens.tokens.get(rec.token_id)
        if current is None:
            raise MetadataReplayError(f"no delegation token {rec.token_id!r}", rec)
        self._tokens[rec.token_id] = None
