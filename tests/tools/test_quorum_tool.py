"""``kraft-testkit cluster add-controller / remove-controller`` (KIP-853) on a kit cluster's
data directory: the change is committed in the files, describe-quorum shows it, a reopened
cluster has it; a static (kraft.version 0) directory gets Kafka's UNSUPPORTED_VERSION."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol.error_codes import KafkaApiError
from kraft_testkit.tools import quorum_tool
from kraft_testkit.tools.cli import main
from kraft_testkit.tools.cluster_tool import ClusterToolError, describe_quorum, read_directory


def test_add_and_remove_controllers_on_a_directory(tmp_path, capsys):
    Cluster(1, 1, seed=5, kraft_version=1, storage="tmpdir", data_dir=tmp_path).close()
    assert main(["cluster", "add-controller", "--directory", str(tmp_path)]) == 0
    assert "Added controller 1001" in capsys.readouterr().out
    quorum_tool.add_controller(read_directory(tmp_path))
    assert [r.node_id for r in describe_quorum(read_directory(tmp_path)).voters] == \
        [1000, 1001, 1002]
    assert main(["cluster", "remove-controller", "--controller-id", "1000",
                 "--directory", str(tmp_path)]) == 0
    assert "Removed controller 1000" in capsys.readouterr().out
    again = Cluster(1, 1, seed=8, kraft_version=1, storage="tmpdir", data_dir=tmp_path)
    assert set(again.voter_set()) == {1001, 1002}
    again.close()
    with pytest.raises(ClusterToolError, match="not a voter"):
        quorum_tool.remove_controller(read_directory(tmp_path), 1000)


def test_a_static_directory_cannot_change_voters(tmp_path):
    Cluster(1, 0, seed=5, storage="tmpdir", data_dir=tmp_path).close()
    with pytest.raises(KafkaApiError, match="UNSUPPORTED_VERSION"):
        quorum_tool.add_controller(read_directory(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["controller-1000"]  # nothing added
    Cluster(1, 0, seed=6, storage="tmpdir", data_dir=tmp_path).close()  # still reopens


def test_describe_from_files_finds_a_voter_change_in_an_older_segment(tmp_path):
    """Segments roll, so the VotersRecord of a change may sit in any segment after the newest
    snapshot, and the newest segment may be empty: the tool reads them all."""
    tiny = {"internal.metadata.log.segment.bytes": 600}
    with Cluster(1, 1, storage="tmpdir", data_dir=tmp_path, kraft_version=1, configs=tiny,
                 seed=2) as c:
        c.add_voter(c.add_controller())
        for i in range(6):
            c.create_topic(f"t{i}", partitions=1, replication_factor=1)
        c.run_for(3_000)
        voters = sorted(c.voter_set())
        ends = {h.id: c.replica(h).log.end_offset for h in c.controllers}
    nodes = {n.node_id: n for n in read_directory(tmp_path).nodes}
    for cid in ends:
        assert len(list((tmp_path / f"controller-{cid}" / "__cluster_metadata-0").glob("*.log"))) > 2
        assert nodes[cid].voters == voters == sorted(ends)
        assert nodes[cid].log_end_offset == ends[cid]
