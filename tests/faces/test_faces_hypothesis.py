"""Property-based fault schedules: strategies, the runner, shrinking a planted bug, the machine."""

import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kraft_testkit.cluster import Cluster  # noqa: E402
from kraft_testkit.errors import ConfigError  # noqa: E402
from kraft_testkit.hypothesis import (  # noqa: E402
    ClusterMachine, FaultStep, Schedule, fault_schedules, node_ids, replay_note, run_schedule)

# print_blob off: under CI=true Hypothesis adds an "@reproduce_failure" note, which is not part of
# the replay script these tests execute
FAST = settings(database=None, derandomize=True, deadline=None,
                phases=[Phase.generate, Phase.shrink],
                suppress_health_check=list(HealthCheck), print_blob=False)


def test_shrinking_a_planted_bug_gives_a_one_step_replay_script():
    runs = []

    @settings(FAST, max_examples=30)
    @given(fault_schedules(1, 2, kinds=("isolate", "pause", "kill"), max_faults=5,
                           horizon_ms=5_000, max_duration_ms=15_000, seed=3, invariants=False))
    def property_with_a_planted_bug(schedule):
        runs.append(schedule)
        replay_note(schedule, converge_ms=None)
        cluster = Cluster(**schedule.cluster)
        run_schedule(cluster, schedule, converge_ms=None)
        # the planted bug: "a broker is unfenced as soon as its fault heals" (leases disagree)
        assert not cluster.broker_state(1).fenced, "broker 1 is still fenced"

    with pytest.raises(AssertionError, match="broker 1 is still fenced") as failure:
        property_with_a_planted_bug()
    notes = "\n".join(getattr(failure.value, "__notes__", []))
    script = notes[notes.index("from kraft_testkit.cluster import Cluster"):]
    shrunk = [s for s in runs if "FaultStep" in script and len(s) == 1]
    assert shrunk, notes
    # the shrunk schedule is one fault on broker 1 long enough for its 9 s lease to lapse
    step_line = [line for line in script.splitlines() if line.strip().startswith("FaultStep(")]
    assert len(step_line) == 1 and ", 1, " in step_line[0], script
    duration = int(step_line[0].split(",")[3].strip(" ),"))
    assert 6_000 <= duration <= 11_000
    # and the printed script replays the failure exactly
    scope: dict = {}
    exec(compile(script, "<replay>", "exec"), scope)
    assert scope["cluster"].broker_state(1).fenced


def test_run_schedule_heals_every_fault_and_the_cluster_converges():
    c = Cluster(3, 3, seed=4)
    schedule = Schedule((FaultStep(0, "kill", 1000, 3_000), FaultStep(500, "isolate", 1, 12_000),
                         FaultStep(1_000, "pause", 2, 2_000), FaultStep(2_000, "restart", 1001),
                         FaultStep(2_500, "stop", 0, 4_000)), {"controllers": 3, "brokers": 3})
    start = c.now_ms
    run_schedule(c, schedule)
    assert c.now_ms - start >= 12_500
    assert all(c.sim.process(h.id).state.value == "running" for h in c.nodes)
    assert not c.sim.network.partitions
    same = Cluster(3, 3, seed=4)
    run_schedule(same, schedule)
    assert same.trace.digest() == c.trace.digest()


@settings(FAST, max_examples=15)
@given(fault_schedules(3, 3, max_faults=4, horizon_ms=20_000))
def test_drawn_schedules_fit_the_cluster(schedule):
    assert len(schedule) <= 4 and list(schedule.steps) == sorted(schedule.steps)
    assert schedule.cluster == {"controllers": 3, "brokers": 3}
    assert all(s.node in node_ids(3, 3) and s.at_ms <= 20_000 for s in schedule.steps)
    assert eval(repr(schedule.steps[0]) if schedule.steps else "None",  # noqa: S307
                {"FaultStep": FaultStep}) == (schedule.steps[0] if schedule.steps else None)


def test_bad_steps_and_nodes_are_config_errors():
    with pytest.raises(ConfigError, match="fault kind must be one of"):
        FaultStep(0, "explode", 1)
    with pytest.raises(ConfigError, match="duration_ms must be an int >= 0"):
        FaultStep(0, "kill", 1, -5)
    with pytest.raises(ConfigError, match="no node 77"):
        run_schedule(Cluster(1, 1, seed=1), [FaultStep(0, "kill", 77, 10)])
    with pytest.raises(ConfigError, match="kinds must be a non-empty subset"):
        fault_schedules(kinds=("meteor",))


class SmallClusterMachine(ClusterMachine):
    SHAPE = {"controllers": 3, "brokers": 2}
    SEED = 6


TestSmallCluster = SmallClusterMachine.TestCase
TestSmallCluster.settings = settings(FAST, max_examples=4, stateful_step_count=6)


def test_machine_reports_a_planted_bug_as_replayable_calls():
    class Buggy(ClusterMachine):
        SHAPE = {"controllers": 1, "brokers": 2, "invariants": False, "wire": False}

        @hypothesis.stateful.invariant()
        def planted_no_broker_ever_fenced(self):
            if self.cluster is not None:
                assert not self.cluster.metadata.cluster.fenced_broker_ids(), "a broker is fenced"

    with pytest.raises(AssertionError, match="a broker is fenced") as failure:
        hypothesis.stateful.run_state_machine_as_test(
            Buggy, settings=settings(FAST, max_examples=100, stateful_step_count=6))
    steps = "\n".join(getattr(failure.value, "__notes__", []))
    assert "state = Buggy()" in steps and "state.boot()" in steps
    assert "data(" not in steps                # plain calls with node ids: a replay script
    calls = [line for line in steps.splitlines() if line.startswith("state.") and
             not line.startswith(("state.boot", "state.one_active", "state.planted",
                                  "state.teardown"))]
    assert 1 <= len(calls) <= 3, steps         # shrunk to the few calls that matter
    script = "\n".join(steps.splitlines()[1:])  # and the printed lines replay the failure
    with pytest.raises(AssertionError, match="a broker is fenced"):
        exec(compile(script, "<replay>", "exec"), {"Buggy": Buggy})  # noqa: S102


@pytest.mark.parametrize("duration", [0, 1, 2])
def test_a_short_stop_is_a_valid_step_not_a_spurious_no_progress(duration):
    # the strategy shrinks toward FaultStep(0, 'stop', 0, 0): a stop's duration is how long the
    # node stays down, never how long its controlled shutdown may take
    c = Cluster(3, 3, seed=11)
    run_schedule(c, Schedule((FaultStep(0, "stop", 0, duration),), {}))
    assert c.broker_state(0).state == "RUNNING" and not c.broker_state(0).fenced


def test_a_stop_without_a_controller_still_stops_then_converges():
    c = Cluster(1, 2, seed=5)
    schedule = Schedule((FaultStep(0, "kill", 1000, 40_000), FaultStep(100, "stop", 1, 0)), {})
    run_schedule(c, schedule)            # the broker's shutdown is never approved: it stops anyway
    assert all(c.broker_state(b).state == "RUNNING" for b in c.brokers)


@settings(FAST, max_examples=25)
@given(fault_schedules(1, 2, kinds=("stop",), max_faults=2, horizon_ms=2_000,
                       max_duration_ms=3))
def test_drawn_short_stops_always_converge(schedule):
    run_schedule(Cluster(**schedule.cluster), schedule)
