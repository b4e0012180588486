"""The user's view: the Quorum facade, configuration, wire mode and the simulate CLI."""

from __future__ import annotations

import pytest

from kraft_testkit.errors import ConfigError
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.rpc import WireFrame
from kraft_testkit.quorum import Quorum
from kraft_testkit.raft import errors as E
from kraft_testkit.raft import rpc
from kraft_testkit.raft.config import KEYS, RaftConfig
from kraft_testkit.sim import NoProgress
from kraft_testkit.tools import cli
from kraft_testkit.tools import simulate as sim_cli

# ------------------------------------------------------------------ configuration


def test_defaults_are_kafkas():
    c = RaftConfig.from_kafka()
    assert c.to_kafka() == {
        "controller.quorum.election.timeout.ms": 1000,
        "controller.quorum.fetch.timeout.ms": 2000,
        "controller.quorum.election.backoff.max.ms": 1000,
        "controller.quorum.request.timeout.ms": 2000,
        "controller.quorum.retry.backoff.ms": 20,
        "controller.quorum.append.linger.ms": 25,
        "replica.fetch.wait.max.ms": 500,
        "testkit.raft.fetch.max.bytes": 8 << 20,
        "testkit.raft.fetch.snapshot.max.bytes": 8 << 20,
        "testkit.raft.pre.vote.enable": True,
        "testkit.log.time.base.ms": 0,   # a bare replica stamps virtual time; Cluster adds 2026
        "controller.quorum.auto.join.enable": False,  # Kafka 4.2 (KIP-853), off by default
        "metadata.log.segment.bytes": 1 << 30,
        "metadata.log.segment.ms": 7 * 24 * 3600 * 1000,
        "log.index.interval.bytes": 4096,
        "log.index.size.max.bytes": 10 << 20,
        "metadata.max.retention.bytes": 100 << 20,
        "metadata.max.retention.ms": 7 * 24 * 3600 * 1000,
        "testkit.raft.log.clean.interval.ms": 60_000,
    }
    assert RaftConfig.from_kafka({"controller.quorum.fetch.timeout.ms": "3000"}).fetch_timeout_ms \
        == 3000


@pytest.mark.parametrize("key,value,needle", [
    ("controller.quorum.election.timeout.ms", 0, "in [1, 2147483647]"),
    ("controller.quorum.retry.backoff.ms", -1, "in [0, 2147483647]"),
    ("controller.quorum.fetch.timeout.ms", "soon", "got 'soon'"),
    ("controller.quorum.fetch.timeout.ms", True, "integer"),
    ("controller.quorum.nope", 1, "known keys: controller.quorum.append.linger.ms"),
    # MetadataLogConfig.CONFIG_DEF (4.2): metadata.log.segment.bytes is atLeast(8 MiB)
    ("metadata.log.segment.bytes", (8 << 20) - 1, "in [8388608, 2147483647]"),
    # removed in 4.1 (KAFKA-19080); the kit refuses unknown keys and says what replaced it
    ("metadata.log.segment.min.bytes", 12, "internal.metadata.log.segment.bytes"),
])
def test_bad_config_names_the_key_and_the_allowed_values(key, value, needle):
    with pytest.raises(ConfigError) as info:
        Quorum(3, config={key: value})
    assert key in str(info.value) and needle in str(info.value)
    assert key in KEYS or "unknown" in str(info.value)


def test_bad_quorum_shapes():
    with pytest.raises(ConfigError, match="voters"):
        Quorum(0)
    with pytest.raises(ConfigError, match="metadata.log.max.record.bytes.between.snapshots"):
        Quorum(3, config={"metadata.log.max.record.bytes.between.snapshots": 0})


# ------------------------------------------------------------------ the facade


def test_quorum_lifecycle_and_views():
    q = Quorum(3, seed=1, observers=1)
    assert (q.leader_id, q.active_controller, q.epoch, q.high_watermark) == (None, None, 0, 0)
    with pytest.raises(E.NotLeader):
        q.append([b"too early"])
    q.run_until(lambda q: q.active_controller is not None)
    leader = q.active_controller
    assert q.leader_id == leader and q.epoch >= 1
    assert q.append(["text is utf-8"]) == 1
    assert q.high_watermark == 2
    q.run_for(1_000)
    d = q.describe_quorum().topics[0].partitions[0]
    assert (d.error_code, d.leader_id, d.high_watermark) == (0, leader, 2)
    assert [v.replica_id for v in d.current_voters] == [1, 2, 3]
    assert [o.replica_id for o in d.observers] == [4]
    assert "leader" in q.status() and repr(q).startswith("Quorum(seed=1")
    q.faults.pause(leader)
    q.run_until(lambda q: q.active_controller not in (None, leader), 10_000)
    q.faults.resume(leader)
    q.run_until(Quorum.converged, 10_000)
    assert q.replica(leader).role == "follower"


def test_no_progress_carries_the_seed_and_the_trace_tail():
    q = Quorum(3, seed=8)
    q.network.drop(M.VoteRequest)  # filters take protocol classes
    with pytest.raises(NoProgress) as info:
        q.run_until(lambda q: q.active_controller is not None, 5_000)
    err = info.value
    assert err.seed == 8 and err.trace_tail and "VoteRequest" in "\n".join(err.trace_tail)
    q.network.clear_filters()
    q.run_until(lambda q: q.active_controller is not None, 10_000)


def test_append_raises_not_leader_when_the_leader_loses_its_epoch():
    q = Quorum(3, seed=12)
    q.run_until(lambda q: q.active_controller is not None)
    leader = q.active_controller
    q.network.isolate(leader)
    with pytest.raises(E.NotLeader):
        q.append([b"lost"], timeout_ms=20_000)
    q.network.heal()
    q.converge()


def test_no_leader_describe_quorum():
    q = Quorum(3, seed=3)
    p = q.describe_quorum().topics[0].partitions[0]
    assert p.error_code == E.NOT_LEADER_OR_FOLLOWER


def test_wipe_disk_and_restart_helpers():
    q = Quorum(3, seed=6)
    q.run_until(lambda q: q.active_controller is not None)
    q.faults.restart(1)
    q.faults.restart(2, graceful=True)
    q.faults.skew(3, 250)
    q.faults.wipe_disk(3)
    assert q.replica(3).is_observer
    q.run_until(Quorum.converged, 20_000)


# ------------------------------------------------------------------ wire mode


def test_codec_round_trips_every_raft_envelope():
    codec = rpc.RaftCodec()
    bodies = [
        rpc.vote_request("c", 2, 1, rpc.NO_DIR, 2, rpc.NO_DIR, 1, 10),
        rpc.vote_response(0, 2, -1, True),
        rpc.begin_epoch_request("c", 2, 1, 3, rpc.NO_DIR),
        rpc.begin_epoch_response(0, 2, 1),
        rpc.end_epoch_request("c", 2, 1, [(3, rpc.NO_DIR)]),
        rpc.end_epoch_response(0, 2, 1),
        rpc.fetch_request("c", 3, rpc.NO_DIR, 2, 10, 1, 500, 1024),
        rpc.fetch_response(0, 2, 1, 9, 0, b"", diverging=(1, 5)),
        rpc.fetch_snapshot_request("c", 3, 2, (10, 1), 0, 64, rpc.NO_DIR),
        rpc.fetch_snapshot_response(0, 2, 1, (10, 1), 100, 0, b"abc"),
        rpc.describe_quorum_request(),
        rpc.describe_quorum_response(0, 1, 2, 9, [rpc.replica_state(1, rpc.NO_DIR, 9)], []),
    ]
    for i, body in enumerate(bodies):
        wrap = rpc.request if body._spec.kind == "request" else rpc.response
        env = wrap(100 + i, body)
        frame = codec.encode(env)
        assert isinstance(frame, WireFrame) and frame.data[:4] == len(frame.data[4:]).to_bytes(4, "big")
        back = codec.decode(frame)
        assert type(back) is type(env) and back == env, type(body).__name__
        assert type(back).__name__ == type(body).__name__
    assert codec.frames_sent == len(bodies)
    assert codec.encode("not kafka") == "not kafka"


def test_quorum_in_wire_mode_speaks_kafka_bytes():
    q = Quorum(3, seed=2)
    q.run_until(lambda q: q.active_controller is not None)
    q.append([b"on the wire"])
    assert q.sim.network.codec.frames_sent > 10
    assert q.sim.network.codec.versions[1] == 18  # Fetch at its newest version (v18, KIP-1166)


# ------------------------------------------------------------------ the simulate CLI


def test_simulate_cli_runs_seeds(capsys):
    code = cli.main(["simulate", "--voters", "3", "--seeds", "0:3", "--minutes", "0.5"])
    out = capsys.readouterr().out
    assert code == 0 and "3 seeds, 0 violations" in out


def test_simulate_cli_reports_violations_with_a_replay_command(capsys, monkeypatch):
    def fake(args):
        seed = args[0]
        return sim_cli.SeedResult(seed, seed != 1, "invariant" if seed == 1 else "",
                                  "single-leader: nodes 1 and 2 both lead epoch 4",
                                  trace_tail=["   10 ms    n1 timer"])
    monkeypatch.setattr(sim_cli, "_run_one", fake)
    code = cli.main(["simulate", "--voters", "5", "--seeds", "0:3", "--minutes", "10", "-v"])
    out = capsys.readouterr().out
    assert code == 1
    assert "seed 1: invariant violation: single-leader" in out
    assert "replay: kraft-testkit simulate --voters 5 --seeds 1:2 --minutes 10 --faults random" \
        in out
    assert "3 seeds, 1 violations" in out


def test_simulate_cli_rejects_bad_seed_ranges(capsys):
    with pytest.raises(SystemExit):
        cli.main(["simulate", "--seeds", "5:5"])
    assert "empty seed range" in capsys.readouterr().err


def test_api_calls_go_through_the_process_and_into_the_trace():
    from kraft_testkit.sim import NodeStateError
    q = Quorum(3, seed=4)
    q.run_until(lambda q: q.active_controller is not None)
    leader = q.active_controller
    q.append([b"traced"])
    assert any(e[1] == "call" and e[2] == leader and "append 1 records" in e[4]
               for e in q.trace.events())
    q.faults.pause(leader)
    with pytest.raises(NodeStateError):
        q.sim.process(leader).call(lambda m, now: None)
    with pytest.raises(E.NotLeader):
        q.append([b"paused leader"])
