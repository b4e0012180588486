"""ACL entries, SCRAM credentials and delegation tokens, as the image holds them."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, NamedTuple

from ..protocol import messages as M
from ..protocol.frames import MetadataRecord
from ..protocol.uuid import Uuid

#: Kafka's ScramMechanism type ids
SCRAM_MECHANISMS: dict[int, str] = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
_SCRAM_HASHES = {1: hashlib.sha256, 2: hashlib.sha512}


class Acl(NamedTuple):
    """One ACL entry (Kafka's ``StandardAcl``); the image keys it by its uuid."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    @classmethod
    def from_record(cls, rec: Any) -> Acl:
        return cls(rec.resource_type, rec.resource_name, rec.pattern_type, rec.principal,
                   rec.host, rec.operation, rec.permission_type)

    def to_record(self, acl_id: Uuid) -> MetadataRecord:
        return MetadataRecord(M.AccessControlEntryRecord(id=acl_id, **self._asdict()), 0)

    def to_dict(self) -> dict:
        return self._asdict()


class ScramCredential(NamedTuple):
    """A user's credential for one SCRAM mechanism (RFC 5802 keys, not the password)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_record(self, user: str, mechanism: int) -> MetadataRecord:
        return MetadataRecord(M.UserScramCredentialRecord(
            name=user, mechanism=mechanism, salt=self.salt, stored_key=self.stored_key,
            server_key=self.server_key, iterations=self.iterations), 0)

    def to_dict(self) -> dict:
        return {"salt": self.salt.hex(), "stored_key": self.stored_key.hex(),
                "server_key": self.server_key.hex(), "iterations": self.iterations}


def scram_keys(mechanism: int, salted_password: bytes) -> tuple[bytes, bytes]:
    """(StoredKey, ServerKey) from a SaltedPassword, as RFC 5802 derives them.

    The seeds' draft UserScramCredentialRecord carries the salted password; released Kafka keeps
    the two keys. Deriving them maps a draft record to the same image a released one gives.
    """
    digest = _SCRAM_HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    return digest(client_key).digest(), server_key


class DelegationToken(NamedTuple):
    """A delegation token's information (Kafka's ``TokenInformation``)."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int

    @classmethod
    def from_record(cls, rec: Any) -> DelegationToken:
        """From either dialect; the draft record has no Requester, which then is the owner
        (as Kafka reads tokens created before KIP-373)."""
        return cls(rec.token_id, rec.owner, getattr(rec, "requester", rec.owner),
                   tuple(rec.renewers), rec.issue_timestamp, rec.max_timestamp,
                   rec.expiration_timestamp)

    def to_record(self) -> MetadataRecord:
        return MetadataRecord(M.DelegationTokenRecord(
            owner=self.owner, requester=self.requester, renewers=self.renewers,
            issue_timestamp=self.issue_timestamp, max_timestamp=self.max_timestamp,
            expiration_timestamp=self.expiration_timestamp, token_id=self.token_id), 0)

    def to_dict(self) -> dict:
        d = self._asdict()
        d["renewers"] = list(self.renewers)
        return d
