"""Property-based fault schedules: any minority of faults, healed, leaves a working cluster.

Run with ``pytest examples/test_property_schedules.py``; a failure prints the shrunk schedule as
a Python replay script. Raise ``max_examples`` for a real hunt.
"""

from hypothesis import given, settings

from kraft_testkit.cluster import Cluster
from kraft_testkit.hypothesis import fault_schedules, replay_note, run_schedule


@settings(max_examples=3, deadline=None, database=None)
@given(fault_schedules(controllers=3, brokers=3, kinds=("kill", "pause", "isolate"),
                       nodes=[1000, 0, 1], max_faults=3, horizon_ms=8_000))
def test_a_healed_minority_fault_schedule_leaves_a_working_cluster(schedule):
    replay_note(schedule)
    cluster = Cluster(**schedule.cluster)
    run_schedule(cluster, schedule)
    topic = cluster.create_topic("after", partitions=3, replication_factor=3)
    assert all(p.leader in cluster.broker_ids for p in topic.partitions.values())
