"""Every public method, called with wrong types and values, raises only the kit's typed errors.

The walk takes each public method of the user-facing classes (Cluster with its admin and voter
operations, its faults and network, Quorum with its faults and network, the pytest clock), and
for each of its arguments in turn passes values of the wrong type or range while the others are
valid. Whatever comes out must be a :class:`~kraft_testkit.errors.KraftError` (a bad argument
names itself; a valid-looking one may get Kafka's error): never a bare ``TypeError``,
``KeyError`` or ``AttributeError`` from inside the kit. The named cases are checked one by one
below, with the argument and the allowed values in the message.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.errors import ConfigError, KraftError, StorageError
from kraft_testkit.protocol import messages as M
from kraft_testkit.quorum import Quorum

BAD: list[Any] = [object(), "x", "", 1.5, True, -1, None, [], {"k": object()}, b"\xff"]

#: a valid value for each argument name (the argument under test gets the bad ones)
VALID: dict[str, Any] = {
    "node": 0, "broker": 0, "name": "t0", "topic": "t0", "partition": 0, "count": 2,
    "replicas": [0], "ms": 10, "predicate": lambda c: True, "timeout_ms": 1_000,
    "fn": lambda machine, now: None, "file": "meta.properties", "offset": 0, "ops": 3,
    "skew_ms": 5, "user": "alice", "password": "secret", "level": 1, "entity": {"user": "alice"},
    "quotas": {"producer_byte_rate": 1024.0}, "principal": "User:alice", "resource_type": 2,
    "resource_name": "t0", "operation": 3, "body": M.DescribeClusterRequest(
        include_cluster_authorized_operations=False), "srcs": [0], "dsts": [1000],
    "rule": None, "topology": None, "profile": None, "match": None,
}
#: methods not walked, and why
SKIP = {
    "close": "takes no argument",
    "wall_clock": "checked on its own below (it patches the process's clock)",
    "dump_log": "checked on its own below (it writes a file)",
}


def public_methods(obj: object) -> list[tuple[str, Callable[..., Any]]]:
    out = []
    for name in sorted(dir(type(obj))):
        if name.startswith("_") or name in SKIP:
            continue
        if isinstance(inspect.getattr_static(type(obj), name), property):
            continue
        fn = getattr(obj, name)
        if callable(fn):
            out.append((name, fn))
    return out


def walk(make: Callable[[], Any], owner: Callable[[Any], Any], label: str) -> list[str]:
    """Call every public method of ``owner(make())`` with one bad argument at a time; returns
    the calls that raised something other than a KraftError."""
    leaks = []
    for name, _ in public_methods(owner(make())):
        target = owner(make())  # a fresh cluster per method: a call may change its state
        fn = getattr(target, name)
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind is not p.VAR_KEYWORD]
        for param in params:
            for bad in BAD:
                args, kwargs = [], {}
                for p in params:
                    value = bad if p is param else VALID.get(p.name, p.default)
                    if p is not param and value is inspect.Parameter.empty:
                        break  # a required argument the table has no valid value for
                    if p.kind is p.VAR_POSITIONAL:
                        args.append(value) if p is param else None
                    elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and not kwargs:
                        args.append(value)
                    else:
                        kwargs[p.name] = value
                else:
                    try:
                        fn(*args, **kwargs)
                    except KraftError:
                        pass
                    except Exception as e:  # noqa: BLE001 - the leak this test looks for
                        leaks.append(f"{label}.{name}({param.name}={bad!r:.30}): "
                                     f"{type(e).__name__}: {e}"[:240])
    return leaks


def small_cluster() -> Cluster:
    c = Cluster(1, 1, seed=1)
    c.create_topic("t0", partitions=1, replication_factor=1)
    return c


@pytest.mark.parametrize("label, owner", [
    ("Cluster", lambda c: c), ("faults", lambda c: c.faults), ("network", lambda c: c.network),
])
def test_cluster_methods_raise_only_kraft_errors(label, owner):
    assert walk(small_cluster, owner, label) == []


@pytest.mark.parametrize("label, owner", [
    ("Quorum", lambda q: q), ("Quorum.faults", lambda q: q.faults),
    ("Quorum.network", lambda q: q.network),
])
def test_quorum_methods_raise_only_kraft_errors(label, owner):
    def make() -> Quorum:
        q = Quorum(voters=3, seed=1)
        q.run_until(lambda q: q.active_controller is not None, timeout_ms=10_000)
        return q
    VALID_Q = {"node": 1}
    saved = {k: VALID[k] for k in VALID_Q}
    VALID.update(VALID_Q)
    try:
        assert walk(make, owner, label) == []
    finally:
        VALID.update(saved)


# ------------------------------------------------------------------ the named cases, one by one

@pytest.fixture(scope="module")
def c() -> Cluster:
    return small_cluster()


@pytest.mark.parametrize("call, names", [
    (lambda c: c.upsert_scram_credential("u", "p", mechanism="MD5"),
     ("mechanism", "SCRAM-SHA-256", "SCRAM-SHA-512")),
    (lambda c: c.elect_leaders("nope"), ("UNKNOWN_TOPIC_OR_PARTITION",)),
    (lambda c: c.elect_leaders(election="bogus"), ("election", "preferred", "unclean")),
    (lambda c: c.alter_configs(set={"retention.ms": "1"}), ("topic", "broker")),
    (lambda c: c.alter_configs(topic="t0", broker=0, set={}), ("exactly one",)),
    (lambda c: c.alter_configs(topic="t0", set="retention.ms=1"), ("set", "mapping")),
    (lambda c: c.run_until("x"), ("predicate", "callable")),
    (lambda c: c.faults.restart(0, graceful="yes"), ("graceful", "True or False")),
    (lambda c: c.broker_metadata(0, "orders"), ("topics", "not a str")),
    (lambda c: c.broker_metadata(42, ["orders"]), ("no node 42",)),
    (lambda c: c.add_controller(), ("kraft_version=1", "controller.quorum.voters")),
    (lambda c: c.describe_configs(), ("exactly one",)),
    (lambda c: c.create_topic("t1", partitions="3"), ("partitions", "int")),
    (lambda c: c.reassign("t0", 0, "012"), ("replicas", "list of ints")),
])
def test_each_named_case_is_a_typed_error_naming_argument_and_values(c, call, names):
    with pytest.raises(KraftError) as info:
        call(c)
    for word in names:
        assert word in str(info.value), info.value


def test_elect_leaders_on_an_unknown_topic_is_kafkas_error(c):
    with pytest.raises(KraftError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        c.elect_leaders("nope")


def test_a_memory_cluster_with_a_data_dir_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="data_dir.*storage='tmpdir'"):
        Cluster(1, 1, storage="memory", data_dir=tmp_path)


def test_a_data_dir_that_cannot_be_written_is_a_storage_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(StorageError) as info:
        Cluster(1, 1, storage="tmpdir", data_dir=blocker / "cluster")
    assert str(blocker) in info.value.file


def test_dump_log_to_a_missing_directory_names_the_file(c, tmp_path):
    target = tmp_path / "missing" / "out.log"
    with pytest.raises(StorageError, match="cannot be written") as info:
        c.dump_log(target)
    assert info.value.file == os.fspath(target)
    with pytest.raises(ConfigError, match="path"):
        c.dump_log(42)


def test_wall_clocks_do_not_nest(c):
    pytest.importorskip("freezegun")
    with c.wall_clock():
        with pytest.raises(ConfigError, match="already open"):
            with c.wall_clock():
                pass
    with c.wall_clock():  # and one after the other is fine
        pass
