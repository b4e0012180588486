"""``kraft-testkit cluster cluster-id | unregister | describe-quorum`` on files and on a cluster."""

import re

import pytest
from _golden import GOLDEN

from kraft_testkit import Cluster
from kraft_testkit.tools import cluster_tool as T
from kraft_testkit.tools.cli import main


@pytest.fixture(scope="module")
def tmp_cluster(tmp_path_factory):
    """A 3 + 3 cluster that wrote Kafka's layout, with a topic committed."""
    root = tmp_path_factory.mktemp("kraft")
    c = Cluster(3, 3, seed=11, storage="tmpdir", data_dir=root)
    c.create_topic("orders", 3, 3)
    c.run_for(2_000)
    return c


def test_cluster_id_from_a_running_cluster_and_from_its_files(tmp_cluster):
    assert T.cluster_id_text(tmp_cluster) == f"Cluster ID: {tmp_cluster.cluster_id}"
    assert T.cluster_id(T.read_directory(tmp_cluster.data_dir)) == tmp_cluster.cluster_id
    one_node = f"{tmp_cluster.data_dir}/broker-0"
    assert T.cluster_id(T.read_directory(one_node)) == tmp_cluster.cluster_id


def test_cluster_id_of_kafkas_own_directory():
    assert T.cluster_id(T.read_directory(GOLDEN / "C_mv18_3brokers")) == "ljAoerGESXi5val3QKEeFQ"


def test_mismatched_cluster_ids_name_both_files(tmp_path):
    for n, cid in ((0, "ljAoerGESXi5val3QKEeFQ"), (1, "MkU3OEVBNTcwNTJENDM2Qk")):
        (tmp_path / f"broker-{n}").mkdir()
        (tmp_path / f"broker-{n}" / "meta.properties").write_text(
            f"version=1\ncluster.id={cid}\nnode.id={n}\n")
    with pytest.raises(T.ClusterToolError, match=r"broker-0/meta\.properties says ljAo.*"
                                                 r"broker-1/meta\.properties says MkU3"):
        T.cluster_id(T.read_directory(tmp_path))


def test_unformatted_and_missing_directories_are_clear_errors(tmp_path):
    with pytest.raises(T.ClusterToolError, match="not formatted"):
        T.cluster_id(T.read_directory(GOLDEN / "A_mv16_3brokers"))
    with pytest.raises(T.ClusterToolError, match="does not exist"):
        T.read_directory(tmp_path / "nope")
    with pytest.raises(T.ClusterToolError, match="no node directory here"):
        T.read_directory(tmp_path)


def test_describe_quorum_of_a_running_cluster(tmp_cluster):
    d = T.describe_quorum(tmp_cluster)
    assert d.leader_id == tmp_cluster.active_controller.id
    assert [r.node_id for r in d.voters] == tmp_cluster.controller_ids
    assert [r.node_id for r in d.observers] == tmp_cluster.broker_ids
    assert all(r.directory_id == tmp_cluster.directory_ids[r.node_id]
               for r in d.voters + d.observers)
    text = d.status_text()
    assert re.search(rf"^LeaderId:\s+{d.leader_id}$", text, re.MULTILINE)
    assert re.search(rf"^HighWatermark:\s+{d.high_watermark}$", text, re.MULTILINE)
    assert f'{{"id": 1000, "directoryId": "{tmp_cluster.directory_ids[1000]}"' in text
    rows = d.replication_text().splitlines()
    assert rows[0].split() == ["NodeId", "DirectoryId", "LogEndOffset", "Lag",
                               "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"]
    assert len(rows) == 7 and rows[1].split()[-1] in ("Leader", "Follower")


def test_describe_quorum_from_files_agrees_with_the_cluster(tmp_cluster):
    live = T.describe_quorum(tmp_cluster)
    files = T.describe_quorum(T.read_directory(tmp_cluster.data_dir))
    assert (files.leader_id, files.leader_epoch) == (live.leader_id, live.leader_epoch)
    assert [r.node_id for r in files.voters] == [r.node_id for r in live.voters]
    assert [r.directory_id for r in files.observers] == [r.directory_id for r in live.observers]
    # the files hold at least what was committed (they may hold more: the tail not yet committed)
    assert files.high_watermark >= live.high_watermark > 0
    assert re.search(r"^MaxFollowerLagTimeMs:\s+-1$", files.status_text(), re.MULTILINE)


def test_describe_quorum_of_kafkas_directory():
    d = T.describe_quorum(T.read_directory(GOLDEN / "B_mv18_3brokers_restart"))
    assert (d.leader_id, d.leader_epoch) == (1000, 3)   # its quorum-state, as Kafka left it
    assert [r.node_id for r in d.voters] == [1000]
    assert [r.node_id for r in d.observers] == [0]   # this directory is broker 0's


def test_unregister_on_a_running_cluster():
    c = Cluster(1, 3, seed=4)
    assert T.unregister(c, 2) == "Broker 2 is no longer registered."
    assert c.metadata.cluster.broker(2) is None


def test_unregister_on_a_directory_reopens_the_cluster_and_the_files_keep_it(tmp_path):
    from kraft_testkit.tools.metadata_shell import MetadataShell

    c = Cluster(3, 3, seed=6, storage="tmpdir", data_dir=tmp_path)
    c.create_topic("t", 3, 2)
    c.faults.kill(c.brokers[2])  # the broker is gone for good; the operator removes it
    c.run_for(12_000)
    c.close()
    assert MetadataShell.open(str(tmp_path)).run("ls /brokers").split() == ["0", "1", "2"]
    assert main(["cluster", "unregister", "-d", str(tmp_path), "--id", "2"]) == 0
    for node in ("controller-1000", "controller-1001", "controller-1002", "broker-0"):
        shell = MetadataShell.open(str(tmp_path / node))
        assert shell.run("ls /brokers").split() == ["0", "1"], node
    again = Cluster(3, 3, seed=1, storage="tmpdir", data_dir=tmp_path, boot=False)
    again.faults.kill(2)
    again.run_until(lambda c: c.active_controller is not None)
    assert again.metadata.cluster.broker(2) is None and again.metadata.topic("t") is not None


def test_unregister_refuses_what_cannot_be_reopened(tmp_path):
    with pytest.raises(T.ClusterToolError, match="not a kit cluster's data directory"):
        T.unregister(T.read_directory(GOLDEN / "C_mv18_3brokers"), 1)
    Cluster(1, 2, seed=3, storage="tmpdir", data_dir=tmp_path).close()
    with pytest.raises(T.ClusterToolError, match=r"no broker 7 here; brokers \[0, 1\]"):
        T.unregister(T.read_directory(tmp_path), 7)


def test_cli_against_a_directory_and_a_demo_cluster(tmp_cluster, capsys):
    assert main(["cluster", "cluster-id", "-d", tmp_cluster.data_dir]) == 0
    assert capsys.readouterr().out == f"Cluster ID: {tmp_cluster.cluster_id}\n"
    assert main(["cluster", "describe-quorum", "-d", tmp_cluster.data_dir, "--replication"]) == 0
    assert "Leader" in capsys.readouterr().out
    assert main(["cluster", "describe-quorum", "--demo", "3"]) == 0
    assert re.search(r"^LeaderEpoch:\s+\d+$", capsys.readouterr().out, re.MULTILINE)
    assert main(["cluster", "unregister", "--demo", "3", "--id", "1"]) == 0
    assert capsys.readouterr().out == "Broker 1 is no longer registered.\n"
    assert main(["cluster", "cluster-id", "-d", "/no/such/dir"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kraft-testkit cluster: /no/such/dir: does not exist")
    assert "Traceback" not in err


def test_unregister_unknown_broker_is_kafkas_error():
    from kraft_testkit.protocol.error_codes import KafkaApiError

    with pytest.raises(KafkaApiError, match="BROKER_ID_NOT_REGISTERED"):
        T.unregister(Cluster(1, 1, seed=2), 9)


def test_quorum_state_from_the_future_names_the_file(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    (d / "quorum-state").write_text('{"leaderId":1,"leaderEpoch":3,"votedId":-1,'
                                    '"data_version":7}')
    with pytest.raises(T.ClusterToolError, match=r"quorum-state: .*data_version 7 is unknown"):
        T.read_directory(tmp_path)
