"""The failure report as a user reads it under the default --tb: Hypothesis' falsifying example
and the replay script stay visible, no section is named that is not there, and a bad marker
argument is one line."""

import pytest

pytest.importorskip("hypothesis")


def test_hypothesis_example_and_replay_script_survive_the_compact_report(pytester):
    pytester.makepyfile("""
        from hypothesis import given, settings, Phase
        from kraft_testkit.cluster import Cluster
        from kraft_testkit.hypothesis import FaultStep, Schedule, replay_note, run_schedule
        from hypothesis import strategies as st

        @settings(max_examples=1, database=None, deadline=None, phases=[Phase.generate],
                  print_blob=False)
        @given(st.just(Schedule((FaultStep(0, "kill", 1000, 0),),
                                {"controllers": 1, "brokers": 1, "seed": 2})))
        def test_prop(schedule):
            replay_note(schedule)
            c = Cluster(**schedule.cluster)
            run_schedule(c, schedule, converge_ms=None)
            c.run_until(lambda c: False, timeout_ms=100)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "E   NoProgress: no progress" in out
    assert "Falsifying example: test_prop(" in out or "Failing test case: test_prop(" in out
    assert "FaultStep(" in out
    assert "replay script:" in out and "run_schedule(cluster, schedule" in out
    assert "'kraft_testkit' section" not in out  # no fixture: there is no such section
    assert "--tb=long shows the traceback" in out


def test_a_fixture_test_still_points_to_its_section(pytester):
    pytester.makepyfile("""
        def test_x(kraft_cluster):
            kraft_cluster.run_until(lambda c: False, timeout_ms=100)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    out = result.stdout.str()
    assert "in the 'kraft_testkit' section" in out and "- kraft_testkit -" in out


@pytest.mark.parametrize("value,shown", [('"x"', "'x'"), ("1.5", "1.5"), ("True", "True"),
                                         ("-3", "-3")])
def test_a_bad_marker_seed_is_one_line(pytester, value, shown):
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.kraft(seed={value})
        def test_x(kraft_cluster):
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    line = f"E   MarkerError: @pytest.mark.kraft: seed={shown} is not allowed; seed must be " \
           f"an int >= 0"
    assert line in out, out
    assert "Traceback" not in out and "kraft_testkit/" not in out.replace("kraft_testkit ", "")
    assert sum(1 for x in out.splitlines() if x.startswith("E ")) == 1


def test_other_bad_marker_arguments_are_one_line_too(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.kraft(wire="yes")
        def test_wire(kraft_seed, kraft_cluster_factory):
            pass

        @pytest.mark.kraft(brokerz=3)
        def test_unknown(controller_quorum):
            pass

        @pytest.mark.kraft(3)
        def test_positional(kraft_cluster):
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=3)
    out = result.stdout.str()
    assert "E   MarkerError: @pytest.mark.kraft: wire='yes' is not allowed; wire must be " \
           "True or False" in out
    assert "E   MarkerError: @pytest.mark.kraft got unknown argument(s) ['brokerz']" in out
    assert "E   MarkerError: @pytest.mark.kraft takes keyword arguments only" in out
    assert "Traceback" not in out


def test_the_marker_error_is_a_kraft_config_error():
    from pytest_kraft.markers import MarkerError, marker_kwargs

    from kraft_testkit.errors import ConfigError, KraftError

    assert issubclass(MarkerError, ConfigError) and issubclass(MarkerError, KraftError)
    with pytest.raises(MarkerError, match=r"seed=True is not allowed"):
        marker_kwargs(pytest.mark.kraft(seed=True).mark)
    assert marker_kwargs(pytest.mark.kraft(seed=None, brokers=1).mark) == {"brokers": 1}
