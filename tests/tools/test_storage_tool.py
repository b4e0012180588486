"""``kraft-testkit storage format | info | random-uuid`` and the meta.properties module."""

import io
import random

import pytest
from _golden import GOLDEN

from kraft_testkit.errors import StorageError
from kraft_testkit.protocol.log import read_log
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft.snapshot import decode_snapshot
from kraft_testkit.storage.meta_properties import (
    MetaProperties,
    MetaPropertiesError,
    read_meta_properties,
    write_meta_properties,
)
from kraft_testkit.tools.cli import main
from kraft_testkit.tools.storage_tool import (
    NodeStorage,
    StorageToolError,
    format_storage,
    parse_initial_controllers,
    random_uuid,
    storage_info,
)

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"


def node(tmp_path, node_id=1, roles=("controller",), dirs=("meta", "data")):
    return NodeStorage.from_options(node_id, [tmp_path / d for d in dirs], roles=roles,
                                    controller_endpoint="ctl-1:9093")


def records(path):
    return [r.payload for b in read_log(path) for r in b.records]


# ------------------------------------------------------------------ format


def test_format_writes_meta_properties_and_bootstrap_checkpoint_in_every_directory(tmp_path):
    out = io.StringIO()
    result = format_storage(node(tmp_path), CLUSTER, out=out, rng=random.Random(1), now_ms=5)
    assert "Formatting metadata directory" in out.getvalue()
    assert f"Formatting data directory {tmp_path / 'data'} with metadata.version 4.2-IV1." \
        in out.getvalue()
    for d in ("meta", "data"):
        meta = read_meta_properties(tmp_path / d)
        assert (meta.cluster_id, meta.node_id, meta.version) == (CLUSTER, 1, 1)
        assert meta.directory_id == result.formatted[str(tmp_path / d)]
        boot = records(tmp_path / d / "bootstrap.checkpoint")
        assert boot[0].type_name == "SNAPSHOT_HEADER" and boot[-1].type_name == "SNAPSHOT_FOOTER"
        features = [p for p in boot[1:-1] if p.type_name == "FEATURE_LEVEL_RECORD"]
        levels = [(p.message.name, p.message.feature_level) for p in features]
        # feature levels only (Formatter#calculateBootstrapMetadata): ELR's safety record is
        # the active controller's to add (ActivationRecordsGenerator#recordsForEmptyLog)
        assert len(features) == len(boot) - 2
        # Kafka 4.2's format: metadata.version (4.2-IV1, level 29) first, then the other
        # finalized features at their defaults, by name
        assert levels[0] == ("metadata.version", 29)
        assert [n for n, _ in levels[1:]] == sorted(n for n, _ in levels[1:])
        assert ("eligible.leader.replicas.version", 1) in levels
    ids = set(result.formatted.values())
    assert len(ids) == 2 and Uuid(bytes(16)) not in ids
    assert not (tmp_path / "meta" / "__cluster_metadata-0").exists()  # static quorum


def test_standalone_writes_the_voters_snapshot_with_this_node_as_only_voter(tmp_path):
    result = format_storage(node(tmp_path), CLUSTER, standalone=True, rng=random.Random(2),
                            now_ms=7)
    snap = tmp_path / "meta" / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    payloads = records(snap)
    assert [p.type_name for p in payloads] == ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS",
                                               "SNAPSHOT_FOOTER"]
    assert payloads[1].message.k_raft_version == 1
    (voter,) = payloads[2].message.voters
    assert voter.voter_id == 1 and voter.endpoints[0].host == "ctl-1"
    assert voter.endpoints[0].port == 9093 and voter.endpoints[0].name == "CONTROLLER"
    # the metadata directory's id is the voter's directory id
    assert read_meta_properties(tmp_path / "meta").directory_id == voter.voter_directory_id
    assert result.features == {"kraft.version": 1}
    decode_snapshot(0, 0, snap.read_bytes())  # the Raft layer reads it as a snapshot
    assert not (tmp_path / "data" / "__cluster_metadata-0").exists()


def test_initial_controllers_give_each_voter_its_directory_id(tmp_path):
    ids = [random_uuid(random.Random(n)) for n in range(3)]
    spec = ",".join(f"{n}@host{n}:{9090 + n}:{ids[n]}" for n in range(3))
    format_storage(node(tmp_path, node_id=2), CLUSTER, initial_controllers=spec)
    assert read_meta_properties(tmp_path / "meta").directory_id == ids[2]
    snap = tmp_path / "meta" / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    voters = records(snap)[2].message.voters
    assert [(v.voter_id, v.voter_directory_id, v.endpoints[0].port) for v in voters] == \
        [(n, ids[n], 9090 + n) for n in range(3)]


def test_observer_formatted_with_initial_controllers_is_a_dynamic_non_voter(tmp_path):
    spec = f"0@h:9090:{random_uuid(random.Random(0))}"
    out = io.StringIO()
    format_storage(node(tmp_path, node_id=5), CLUSTER, initial_controllers=spec, out=out)
    assert f"Formatting dynamic metadata directory {tmp_path / 'meta'}" in out.getvalue()


@pytest.mark.parametrize("kwargs, message", [
    ({"cluster_id": "not a uuid"}, "does not appear to be a valid UUID"),
    ({"release_version": "2.8"}, "--release-version: no released metadata.version '2.8'"),
    ({"release_version": "3.2"}, "too old to bootstrap"),
    ({"features": {"group.version": 1}},
     "Unsupported feature: group.version. Supported features are: kraft.version, metadata.version"),
    ({"features": {"kraft.version": 1}}, "Cannot set kraft.version to 1 unless"),
    ({"features": {"kraft.version": 0}, "standalone": True}, "Cannot set kraft.version to 0"),
    ({"features": {"metadata.version": 18}, "release_version": "3.7"}, "Use --release-version"),
    ({"initial_controllers": "0@h:1:x"}, "directory id 'x' is not a base64 uuid"),
    ({"initial_controllers": "h:1"}, "no @ found"),
])
def test_format_refuses_what_kafka_refuses(tmp_path, kwargs, message):
    kwargs = {"cluster_id": CLUSTER, **kwargs}
    with pytest.raises(StorageToolError, match=message.replace("(", r"\(").replace(".", r"\.")):
        format_storage(node(tmp_path), **kwargs)
    assert not (tmp_path / "meta").exists()  # refused before anything was written


def test_standalone_on_a_broker_is_refused(tmp_path):
    with pytest.raises(StorageToolError, match="cannot use --standalone on a broker node"):
        format_storage(node(tmp_path, roles=("broker",)), CLUSTER, standalone=True)


def test_release_version_and_features_set_the_bootstrap_level(tmp_path):
    format_storage(node(tmp_path), CLUSTER, release_version="3.6-IV2")
    boot = records(tmp_path / "meta" / "bootstrap.checkpoint")
    assert boot[1].message.feature_level == 14  # 3.6-IV2


def test_formatted_directory_is_refused_then_skipped_with_ignore_formatted(tmp_path):
    format_storage(node(tmp_path, dirs=("meta",)), CLUSTER)
    with pytest.raises(StorageToolError, match=f"Log directory {tmp_path / 'meta'} is already "
                                               "formatted. Use --ignore-formatted"):
        format_storage(node(tmp_path), CLUSTER)
    out = io.StringIO()
    result = format_storage(node(tmp_path), CLUSTER, ignore_formatted=True, out=out)
    assert result.skipped == [str(tmp_path / "meta")] and list(result.formatted) == \
        [str(tmp_path / "data")]
    out = io.StringIO()
    format_storage(node(tmp_path), CLUSTER, ignore_formatted=True, out=out)
    assert out.getvalue() == "All of the log directories are already formatted.\n"


def test_directory_of_another_cluster_is_refused_naming_the_file(tmp_path):
    format_storage(node(tmp_path, dirs=("meta",)), CLUSTER)
    other = str(random_uuid(random.Random(9)))
    with pytest.raises(StorageToolError,
                       match=r"meta\.properties: cluster\.id is .* another cluster"):
        format_storage(node(tmp_path), other, ignore_formatted=True)


def test_config_file_gives_dirs_roles_and_the_controller_endpoint(tmp_path):
    cfg = tmp_path / "server.properties"
    cfg.write_text(f"process.roles=controller\nnode.id=3000\nlog.dirs={tmp_path}/a,{tmp_path}/b\n"
                   f"metadata.log.dir={tmp_path}/m\nlisteners=CONTROLLER://ctl:19093\n"
                   "controller.listener.names=CONTROLLER\n")
    n = NodeStorage.from_properties(cfg)
    assert n.node_id == 3000 and n.metadata_log_dir == f"{tmp_path}/m"
    assert (n.controller_host, n.controller_port, n.roles) == ("ctl", 19093, ("controller",))
    assert set(n.log_dirs) == {f"{tmp_path}/a", f"{tmp_path}/b", f"{tmp_path}/m"}
    legacy = tmp_path / "zk.properties"
    legacy.write_text("broker.id=1\n")
    with pytest.raises(StorageToolError, match=r"zk\.properties: process\.roles: is not set"):
        NodeStorage.from_properties(legacy)
    blank = tmp_path / "blank.properties"
    blank.write_text("process.roles=controller\nnode.id=1\nlog.dirs= , \n")
    with pytest.raises(StorageToolError, match=r"blank\.properties: log\.dirs: .* names no directory"):
        NodeStorage.from_properties(blank)


def test_static_voters_config_excludes_standalone(tmp_path):
    cfg = tmp_path / "server.properties"
    cfg.write_text(f"process.roles=controller\nnode.id=1\nlog.dirs={tmp_path}/a\n"
                   "controller.quorum.voters=1@localhost:9093\n")
    with pytest.raises(StorageToolError, match="controller.quorum.voters is set"):
        format_storage(NodeStorage.from_properties(cfg), CLUSTER, standalone=True)


def test_initial_controllers_parse_like_kafka():
    u = random_uuid(random.Random(3))
    (v,) = parse_initial_controllers(f"7@[::1]:9093:{u}")
    assert (v.node_id, v.host, v.port, v.directory_id) == (7, "::1", 9093, u)
    with pytest.raises(StorageToolError, match="node id 7 was specified more than once"):
        parse_initial_controllers(f"7@a:1:{u},7@b:2:{u}")
    with pytest.raises(StorageToolError, match="port 70000 is out of range"):
        parse_initial_controllers(f"7@a:70000:{u}")


# ------------------------------------------------------------------ info and random-uuid


def test_info_prints_what_kafka_prints(tmp_path):
    format_storage(node(tmp_path), CLUSTER, rng=random.Random(4))
    info = storage_info([tmp_path / "meta", tmp_path / "data"])
    meta = read_meta_properties(tmp_path / "data")
    assert info.text() == (
        f"Found log directories:\n  {tmp_path / 'data'}\n  {tmp_path / 'meta'}\n\n"
        f"Found metadata: {{cluster.id={CLUSTER}, directory.id={meta.directory_id}, "
        f"node.id=1, version=1}}\n\n")
    assert not info.problems


def test_info_names_each_problem(tmp_path):
    format_storage(node(tmp_path, dirs=("a",)), CLUSTER)
    format_storage(node(tmp_path, node_id=2, dirs=("b",)), CLUSTER)
    (tmp_path / "empty").mkdir()
    info = storage_info([tmp_path / d for d in ("a", "b", "empty", "gone")])
    assert info.problems == ["Mismatched node IDs between storage directories.",
                             f"{tmp_path / 'empty'} is not formatted.",
                             f"{tmp_path / 'gone'} does not exist"]
    assert info.text().count("Found problems:") == 1


def test_info_on_kafkas_own_directory():
    info = storage_info([GOLDEN / "C_mv18_3brokers"])
    assert info.metadata == MetaProperties("ljAoerGESXi5val3QKEeFQ", 2,
                                           Uuid.parse("hmVkgd6wQOGANqVGvXUZVA"), 1)
    assert not info.problems


def test_cli_format_info_random_uuid(tmp_path, capsys):
    assert main(["storage", "random-uuid"]) == 0
    cluster_id = capsys.readouterr().out.strip()
    assert len(Uuid.parse(cluster_id)) == 16
    assert main(["storage", "format", "--node-id", "1", "-d", str(tmp_path / "m"),
                 "--roles", "controller", "-t", cluster_id, "--standalone",
                 "--feature", "kraft.version=1"]) == 0
    assert "Formatting dynamic metadata voter directory" in capsys.readouterr().out
    assert main(["storage", "info", "-d", str(tmp_path / "m")]) == 0
    assert f"cluster.id={cluster_id}" in capsys.readouterr().out
    assert main(["storage", "info", "-d", str(tmp_path / "nope")]) == 1
    assert "does not exist" in capsys.readouterr().out
    assert main(["storage", "format", "--node-id", "1", "-d", str(tmp_path / "m"),
                 "-t", cluster_id]) == 1
    err = capsys.readouterr().err
    assert "is already formatted" in err and "Traceback" not in err


# ------------------------------------------------------------------ meta.properties


@pytest.mark.parametrize("text, key, problem", [
    ("version=1\nnode.id=1\n", "cluster.id", "is missing"),
    ("version=1\ncluster.id=x\n", "node.id", "is missing"),
    ("version=1\ncluster.id=x\nnode.id=one\n", "node.id", "'one' is not an integer"),
    ("version=2\ncluster.id=x\nnode.id=1\n", "version", "version '2' is unknown"),
    ("version=1\ncluster.id=x\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA\n", "directory.id",
     "is reserved (UNASSIGNED (all zero))"),
    ("version=1\ncluster.id=x\nnode.id=1\ndirectory.id=??\n", "directory.id", "not a base64 uuid"),
])
def test_bad_meta_properties_name_the_file_and_the_key(tmp_path, text, key, problem):
    (tmp_path / "meta.properties").write_text(text)
    with pytest.raises(MetaPropertiesError) as info:
        read_meta_properties(tmp_path)
    assert info.value.key == key and problem in str(info.value)
    assert isinstance(info.value, StorageError)
    assert info.value.file == str(tmp_path / "meta.properties")
    assert str(info.value).startswith(f"{tmp_path / 'meta.properties'}, key {key!r}: ")


def test_meta_properties_round_trip_and_missing_file(tmp_path):
    props = MetaProperties(CLUSTER, 4, random_uuid(random.Random(5)))
    write_meta_properties(tmp_path, props)
    assert read_meta_properties(tmp_path) == props
    with pytest.raises(MetaPropertiesError, match="not found: the directory is not formatted"):
        read_meta_properties(tmp_path / "elsewhere")


def test_meta_properties_kafka_wrote_reads():
    meta = read_meta_properties(GOLDEN / "B_mv18_3brokers_restart")
    assert meta.version == 1 and meta.cluster_id == "ljAoerGESXi5val3QKEeFQ"


def test_a_cluster_runs_on_directories_the_storage_tool_formatted(tmp_path):
    """Format each node's folder as an operator would, then start the kit's cluster on them:
    it takes the formatted cluster id and directory ids, as a Kafka node does."""
    from kraft_testkit import Cluster

    nodes = ((1000, "controller-1000", "controller"), (0, "broker-0", "broker"),
             (1, "broker-1", "broker"))
    for node_id, folder, role in nodes:
        assert main(["storage", "format", "-t", CLUSTER, "--node-id", str(node_id),
                     "--roles", role, "-d", str(tmp_path / folder)]) == 0
    c = Cluster(1, 2, seed=3, storage="tmpdir", data_dir=tmp_path)
    assert c.cluster_id == CLUSTER and c.all_brokers_running()
    for node_id, folder, _ in nodes:
        assert c.directory_ids[node_id] == read_meta_properties(tmp_path / folder).directory_id
    c.create_topic("t", 2, 2)
    assert sorted(c.metadata.cluster.brokers) == [0, 1]
