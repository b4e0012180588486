"""The pytest plugin, used as a user would: fixtures, the marker, the failure report."""

import pytest



def test_kraft_cluster_boots_three_plus_three(kraft_cluster, broker_fleet):
    assert len(kraft_cluster.controllers) == 3 and len(broker_fleet) == 3
    assert all(kraft_cluster.broker_state(b).state == "RUNNING" for b in broker_fleet)
    assert kraft_cluster.active_controller is not None


@pytest.mark.kraft(controllers=1, brokers=2, seed=7, configs={"broker.session.timeout.ms": 6000})
def test_marker_shapes_the_cluster_and_clock_moves_virtual_time(kraft_cluster, kraft_clock,
                                                                kraft_network, kraft_seed):
    assert kraft_seed == 7 and kraft_cluster.seed == 7
    assert len(kraft_cluster.controllers) == 1 and len(kraft_cluster.brokers) == 2
    b = kraft_cluster.brokers[1]
    kraft_network.isolate(b)
    start = kraft_clock.now_ms
    kraft_clock.run_until(lambda c: c.broker_state(b).fenced, timeout_ms=20_000)
    # the lease runs from the last heartbeat before the isolation (at most one interval earlier)
    assert 6000 - 2000 <= kraft_clock.now_ms - start <= 6000 + 2000


@pytest.mark.kraft(controllers=3)
def test_controller_quorum_has_an_active_controller(controller_quorum, kraft_faults):
    old = controller_quorum.active_controller
    kraft_faults.kill(old)
    controller_quorum.run_until(lambda c: c.active_controller not in (None, old), 10_000)
    assert controller_quorum.cluster.brokers == []


def test_seed_is_stable_per_test_and_differs_between_tests(kraft_seed, request):
    import zlib

    assert kraft_seed == zlib.crc32(request.node.nodeid.encode()) & 0x7FFFFFFF


def test_failure_report_carries_seed_trace_and_replay(pytester):
    pytester.makepyfile("""
        def test_fails(kraft_cluster):
            assert kraft_cluster.broker_state(0).state == "NOPE"
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--kraft-seed=3")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "kraft_testkit" in out and "replay: pytest" in out and "--kraft-seed=3" in out
    assert "last 12 events" in out


def test_report_header_names_the_seed(pytester):
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest("--kraft-seed=11")
    assert "kraft_testkit: base seed 11" in result.stdout.str()


def test_unknown_marker_argument_is_a_clear_error(pytester):
    pytester.makepyfile("""
        import pytest
        @pytest.mark.kraft(brokerz=3)
        def test_x(kraft_cluster):
            pass
    """)
    result = pytester.runpytest()
    assert "unknown argument(s) ['brokerz']" in result.stdout.str()


def test_tmpdir_storage_writes_kafka_layout(pytester):
    pytester.makepyfile("""
        def test_files(kraft_cluster, tmp_path):
            root = tmp_path / "kraft"
            logs = list(root.glob("controller-*/__cluster_metadata-0/00000000000000000000.log"))
            assert len(logs) == 3 and all(p.stat().st_size > 0 for p in logs)
            assert list(root.glob("broker-0/meta.properties"))
    """)
    result = pytester.runpytest("--kraft-storage=tmpdir")
    result.assert_outcomes(passed=1)


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402


@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
def test_factory_with_hypothesis_as_the_docs_show(kraft_cluster_factory, seed):
    c = kraft_cluster_factory(seed=seed, brokers=1)
    assert c.seed == seed and c.active_controller is not None


def test_factory_defaults_to_the_test_seed(kraft_cluster_factory, kraft_seed):
    assert kraft_cluster_factory(controllers=1, brokers=1).seed == kraft_seed


def test_positional_marker_arguments_are_a_usage_error(pytester):
    pytester.makepyfile("""
        import pytest
        @pytest.mark.kraft(1, 5)
        def test_x(kraft_cluster):
            pass
    """)
    assert "keyword arguments only" in pytester.runpytest().stdout.str()


def test_describe_quorum_and_combined_marker(pytester):
    pytester.makepyfile("""
        import pytest
        @pytest.mark.kraft(controllers=3, brokers=3, combined=True)
        def test_x(kraft_cluster):
            r = kraft_cluster.describe_quorum()
            assert r.topics[0].partitions[0].leader_id == kraft_cluster.active_controller.id
            assert kraft_cluster.active_controller.roles == ("broker", "controller")
    """)
    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.kraft(controllers=1, brokers=3, seed=4, broker_self_fencing=True)
def test_marker_turns_on_kip343_self_fencing(kraft_cluster, kraft_network):
    kraft_network.isolate(kraft_cluster.brokers[1])
    kraft_cluster.run_until(lambda c: c.broker_state(1).self_fenced, timeout_ms=40_000)


@pytest.mark.kraft(controllers=1, brokers=3, seed=4)
def test_by_default_an_isolated_broker_does_not_fence_itself(kraft_cluster, kraft_network):
    kraft_network.isolate(kraft_cluster.brokers[1])
    kraft_cluster.run_for(40_000)
    state = kraft_cluster.broker_state(1)
    assert state.fenced and not state.self_fenced  # the controller decided; the broker never heard


@pytest.mark.kraft(fast_forward=True, brokers=3)
def test_marker_warps_idle_stretches(kraft_cluster, kraft_clock):
    """``fast_forward`` as a marker argument: the clock's advance warps idle stretches."""
    kraft_cluster.create_topic("orders", 3, 1)
    kraft_clock.advance(120_000)
    stats = kraft_cluster.fast_forward_stats
    assert stats["stretches"] >= 1 and stats["virtual ms warped"] > 60_000


def test_every_cluster_warps_by_default_unless_the_marker_says_no(pytester):
    pytester.makepyfile("""
        import pytest

        def test_warped(kraft_cluster, kraft_clock, kraft_cluster_factory):
            kraft_clock.advance(60_000)
            assert kraft_cluster.fast_forward_stats["virtual ms warped"] > 30_000
            other = kraft_cluster_factory(brokers=1)
            other.run_for(60_000)
            assert other.fast_forward_stats["virtual ms warped"] > 30_000

        @pytest.mark.kraft(fast_forward=False)
        def test_stepped(kraft_cluster, kraft_clock):
            kraft_clock.advance(10_000)
            assert not kraft_cluster.fast_forward_stats
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--kraft-seed=5")
    result.assert_outcomes(passed=2)
    assert "every event stepped" not in result.stdout.str()  # the report header


def test_no_fast_forward_option_steps_every_cluster_unless_the_marker_says_yes(pytester):
    pytester.makepyfile("""
        import pytest

        def test_stepped(kraft_cluster, kraft_clock, kraft_cluster_factory):
            kraft_clock.advance(20_000)
            assert not kraft_cluster.fast_forward_stats
            other = kraft_cluster_factory(brokers=1)
            other.run_for(20_000)
            assert not other.fast_forward_stats

        @pytest.mark.kraft(fast_forward=True)
        def test_warped(kraft_cluster, kraft_clock):
            kraft_clock.advance(60_000)
            assert kraft_cluster.fast_forward_stats["virtual ms warped"] > 30_000

        def test_fails(kraft_cluster):
            assert False
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--kraft-no-fast-forward",
                                "--kraft-seed=5")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "every event stepped (--kraft-no-fast-forward)" in out  # the report header
    assert "--kraft-seed=5 --kraft-no-fast-forward" in out  # the failure's replay line


def test_replay_line_carries_a_non_default_storage(pytester):
    pytester.makepyfile("""
        def test_fails(kraft_cluster):
            assert False
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--kraft-seed=2",
                                "--kraft-storage=tmpdir")
    result.assert_outcomes(failed=1)
    assert "--kraft-seed=2 --kraft-storage=tmpdir" in result.stdout.str()
