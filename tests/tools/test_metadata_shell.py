"""``kraft-testkit metadata-shell``: the image as a tree, on our logs and on Kafka's."""

import io
import json
from pathlib import Path

import pytest
from _golden import GOLDEN

from kraft_testkit import Cluster
from kraft_testkit.tools.cli import main
from kraft_testkit.tools.metadata_image_loader import MetadataLoadError, load_image
from kraft_testkit.tools.metadata_shell import MetadataShell


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("kraft")
    c = Cluster(3, 3, seed=21, storage="tmpdir", data_dir=root)
    c.create_topic("orders", 3, 3)
    c.alter_configs(topic="orders", set={"retention.ms": "1000"})
    c.run_for(2_000)
    return c


def test_cat_registration_the_kafka_3_0_way(written):
    shell = MetadataShell.open(written.data_dir)
    reg = json.loads(shell.run("cat /brokers/1/registration"))
    assert reg == json.loads(json.dumps(written.metadata.cluster.broker(1).to_dict(), default=str))
    assert shell.run("cat /brokers/1/isFenced") == "false\n"
    assert json.loads(shell.run("cat /topics/orders/0/data"))["replicas"] == \
        list(written.metadata.partition("orders", 0).replicas)
    assert shell.run("cat /configs/topic/orders/retention.ms") == "1000\n"


def test_the_image_tree_is_kafkas_3_7_layout(written):
    shell = MetadataShell.open(written.data_dir)
    assert shell.run("ls /image").split() == sorted([
        "acls", "clientQuotas", "cluster", "configs", "delegationToken", "features",
        "producerIds", "provenance", "scram", "topics"])
    assert shell.run("ls /image/cluster/brokers").split() == ["0", "1", "2"]
    finalized = written.metadata.features.finalized
    tree = shell.run("tree /image/features")
    assert "metadataVersion:\n  4.2-IV1\n" in tree  # the default, Kafka 4.2's
    others = sorted(f for f in finalized if f != "metadata.version")
    assert others and all(f"finalized_{f}:\n  {finalized[f]}\n" in tree for f in others)
    topic_id = str(written.metadata.topic("orders").id)
    assert shell.run("cat /image/topics/byName/orders/id") == topic_id + "\n"
    assert shell.run(f"ls /image/topics/byId/{topic_id}").split() == ["0", "1", "2", "id", "name"]
    assert shell.run("cat /image/configs/TOPIC:orders/retention.ms") == "1000\n"
    assert shell.run("cat /image/provenance").startswith("offset ")


def test_cd_pwd_relative_paths_globs_and_find(written):
    shell = MetadataShell.open(written.data_dir)
    shell.run("cd /image/topics/byName")
    assert shell.run("pwd") == "/image/topics/byName\n"
    assert shell.run("ls").split() == ["orders"]
    assert shell.run("cat ../byName/orders/name") == "orders\n"
    assert shell.run("ls /brokers/*").startswith("0:\ninControlledShutdown\nisFenced\n")
    found = shell.run("find /topics").splitlines()
    assert found[:3] == ["/topics", "/topics/orders", "/topics/orders/0"]
    assert "/topics/orders/0/data" in found
    assert shell.errors == 0


def test_errors_are_kafkas_lines_and_count(written):
    shell = MetadataShell.open(written.data_dir)
    assert shell.run("cat /nope") == "cat: /nope: No such file or directory.\n"
    assert shell.run("cat /brokers") == "cat: /brokers: Is a directory\n"
    assert shell.run("cd /brokers/1/isFenced") == "cd: /brokers/1/isFenced: not a directory\n"
    assert shell.run("frobnicate") == "frobnicate: unknown command; type help for the commands\n"
    assert shell.errors == 4


def test_kafkas_own_logs(capsys):
    shell = MetadataShell.open(str(GOLDEN / "C_mv18_3brokers"))
    assert shell.run("ls /image/cluster/brokers").split() == ["0", "1", "2"]
    assert shell.run("cat /features/metadata.version") == "18\n"
    assert shell.run("cat /image/features/metadataVersion") == "3.7-IV3\n"
    b = MetadataShell.open(str(GOLDEN / "B_mv18_3brokers_restart"))
    assert b.run("cat /image/provenance") == "offset 25, epoch 2\n"
    with pytest.raises(MetadataLoadError, match="try --prerelease"):
        MetadataShell.open(str(GOLDEN / "A_mv16_3brokers"))
    a = MetadataShell.open(str(GOLDEN / "A_mv16_3brokers"), prerelease=True)
    assert a.run("ls /topics").split() == ["__consumer_offsets", "topic"]
    assert a.run("cat /configs/topic/__consumer_offsets/cleanup.policy") == "compact\n"


def test_cli_non_interactive_and_piped(written, capsys, monkeypatch):
    assert main(["metadata-shell", written.data_dir, "-c", "cat /brokers/1/isFenced",
                 "-c", "ls /features"]) == 0
    assert capsys.readouterr().out == "false\n" + "".join(
        f + "\n" for f in sorted([*written.metadata.features.finalized, "metadata.version"]))
    assert main(["metadata-shell", written.data_dir, "ls", "/image/cluster"]) == 0
    assert capsys.readouterr().out == "brokers\ncontrollers\n"
    assert main(["metadata-shell", written.data_dir, "-c", "cat /nope"]) == 1
    assert capsys.readouterr().out == "cat: /nope: No such file or directory.\n"
    monkeypatch.setattr("sys.stdin", io.StringIO("cd /topics\nls\nexit\nls /\n"))
    assert main(["metadata-shell", written.data_dir]) == 0
    assert capsys.readouterr().out == "orders\n"
    assert main(["metadata-shell", "/no/such/dir", "-c", "ls"]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_one_file_and_a_snapshot_file(written, tmp_path):
    seg = f"{written.data_dir}/controller-1000/__cluster_metadata-0/00000000000000000000.log"
    assert MetadataShell.open(seg).run("ls /topics") == "orders\n"
    loaded = load_image(seg)
    assert loaded.files == (loaded.source,)


def test_torn_tail_is_skipped_but_a_bad_crc_is_named(written, tmp_path):
    seg = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    seg.parent.mkdir()
    data = (Path(written.data_dir) / "controller-1000" / "__cluster_metadata-0" /
            "00000000000000000000.log").read_bytes()
    seg.write_bytes(data[:-5])  # a crash cut the last batch
    assert MetadataShell.open(str(tmp_path)).run("ls /topics") == "orders\n"
    bad = bytearray(data)
    bad[100] ^= 0xFF
    seg.write_bytes(bytes(bad))
    with pytest.raises(MetadataLoadError, match=r"00000000000000000000\.log: .*byte offset"):
        load_image(tmp_path)


def test_shell_on_an_image_in_memory():
    c = Cluster(1, 2, seed=3)
    shell = MetadataShell.of_image(c.metadata)
    assert shell.run("ls /brokers").split() == ["0", "1"]


def test_a_snapshot_with_a_bad_crc_is_named_not_skipped(tmp_path):
    from kraft_testkit.protocol.frames import encode_record
    from kraft_testkit.raft.snapshot import encode_snapshot, file_name

    c = Cluster(1, 2, seed=8)
    records = [encode_record(r) for r in c.metadata.write()]
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    snap = encode_snapshot(40, 1, records, 1_000).data
    (d / file_name(40, 1)).write_bytes(snap)
    shell = MetadataShell.open(str(tmp_path))
    assert shell.run("ls /brokers").split() == ["0", "1"]
    assert shell.run("cat /image/provenance") == "offset 39, epoch 1\n"
    bad = bytearray(snap)
    bad[len(bad) // 2] ^= 0xFF
    (d / file_name(40, 1)).write_bytes(bytes(bad))
    with pytest.raises(MetadataLoadError, match=r"00000000000000000040-0000000001\.checkpoint: "
                                                r".*CRC mismatch"):
        MetadataShell.open(str(tmp_path))
