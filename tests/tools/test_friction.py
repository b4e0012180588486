"""The friction a new user hit, one test per item that a test can pin."""

import ast
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from kraft_testkit import Cluster, ConfigError
from kraft_testkit.tools.cli import main as cli_main
from kraft_testkit.tools.demo import run_demo

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------- demo with 1 or 2 controllers

@pytest.mark.parametrize("controllers", [1, 2])
def test_demo_runs_with_one_or_two_controllers(controllers):
    out = io.StringIO()
    result = run_demo(4, Console(file=out, width=140), controllers=controllers)
    text = out.getvalue()
    assert "cannot elect one; RESTART controller" in text and "quorum restored" in text
    c = result["cluster"]
    assert c.active_controller is not None and c.all_brokers_running()


# ------------------------------------------------------------- typed errors for bad arguments

@pytest.mark.parametrize("kwargs, names", [
    ({"seed": "x"}, ["seed='x'", "an int >= 0"]),
    ({"seed": True}, ["seed=True", "an int >= 0"]),
    ({"bogus": 1}, ["unknown argument(s) bogus", "allowed: controllers, brokers, seed"]),
    ({"wire": "yes"}, ["wire='yes'", "True or False"]),
    ({"storage": "disk"}, ["storage='disk'", "one of memory, tmpdir"]),
    ({"controllers": 0}, ["controllers=0", "an int >= 1"]),
    ({"racks": "abc"}, ["racks='abc'", "a list of rack names"]),
])
def test_bad_cluster_arguments_are_one_config_error_naming_the_value_and_allowed(kwargs, names):
    with pytest.raises(ConfigError) as info:
        Cluster(**kwargs)
    for name in names:
        assert name in str(info.value)


def test_unknown_node_names_the_value_and_the_nodes_there_are():
    c = Cluster(1, 1, seed=1)
    for action in (c.faults.kill, c.faults.start, c.faults.restart, c.faults.pause,
                   c.faults.wipe_disk):
        with pytest.raises(ConfigError, match=r"no node 42; controllers \[1000\], brokers \[0\]"):
            action(42)
    with pytest.raises(ConfigError) as info:
        c.faults.kill(42)
    assert "-1" not in str(info.value)  # the admin client's id is not a node of the cluster


def test_factory_bad_keyword_is_a_config_error(pytester):
    pytester.makepyfile("""
        import pytest
        from kraft_testkit import ConfigError

        def test_x(kraft_cluster_factory):
            with pytest.raises(ConfigError,
                               match="kraft_cluster_factory: unknown argument.s. brokerz"):
                kraft_cluster_factory(brokerz=3)
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


# ------------------------------------------------------------- the marker with the factory only

def test_misspelled_marker_fails_a_factory_only_test_with_the_allowed_names(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.kraft(brokerz=3)
        def test_x(kraft_cluster_factory):
            kraft_cluster_factory()
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    out = result.stdout.str()
    assert "unknown argument(s) ['brokerz']" in out and "'brokers'" in out


def test_marker_shapes_factory_clusters(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.kraft(controllers=1, brokers=2)
        def test_x(kraft_cluster_factory):
            c = kraft_cluster_factory()
            assert len(c.controllers) == 1 and len(c.brokers) == 2
            assert len(kraft_cluster_factory(brokers=1).brokers) == 1   # the call wins
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


# ------------------------------------------------------------- one cluster behind every fixture

def test_quorum_cluster_and_fleet_are_one_cluster(pytester):
    pytester.makepyfile("""
        def test_both(controller_quorum, kraft_cluster, broker_fleet, kraft_network, kraft_faults):
            assert controller_quorum.cluster is kraft_cluster
            assert broker_fleet.cluster is kraft_cluster
            assert broker_fleet == kraft_cluster.brokers and len(broker_fleet) == 3
            assert kraft_network is kraft_cluster.network and kraft_faults is kraft_cluster.faults

        def test_quorum_first(kraft_cluster, controller_quorum):
            assert controller_quorum.cluster is kraft_cluster

        def test_quorum_alone(controller_quorum, kraft_network):
            assert controller_quorum.cluster.brokers == []
            assert kraft_network is controller_quorum.cluster.network
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3)


# ------------------------------------------------------------- demo --plot without matplotlib

def test_plot_without_matplotlib_is_refused_before_the_drill(monkeypatch, capsys):
    from kraft_testkit.tools import demo

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    monkeypatch.setattr(demo, "run_demo", lambda *a, **k: pytest.fail("the drill ran"))
    assert cli_main(["demo", "--seed", "1", "--plot", "x.png"]) == 2
    err = capsys.readouterr().err
    assert "needs matplotlib" in err and "pip install 'kraft-testkit[plot]'" in err


def test_plot_legend_lists_only_controllers_that_were_active():
    from kraft_testkit.tools.timeline_plot import StateRecorder, controller_legend

    c = Cluster(3, 2, seed=5, boot=False)
    recorder = StateRecorder(c)
    c.sim.add_invariant(recorder, "timeline")
    c.run_until(lambda c: c.active_controller is not None and c.all_brokers_running())
    labels = [label for label, _ in controller_legend(recorder)]
    assert labels == [f"controller {c.active_controller.id} active"]


# ------------------------------------------------------------- repr and the failure report

def test_cluster_repr_says_seed_shape_time_and_replay():
    c = Cluster(1, 2, seed=9)
    text = repr(c)
    assert text.startswith("<Cluster seed=9 controllers=[1000] brokers=[0, 1] active=1000")
    assert "replay: Cluster(controllers=1, brokers=2, seed=9)" in text


def test_failure_report_lists_every_factory_cluster(pytester):
    pytester.makepyfile("""
        def test_fails(kraft_cluster_factory):
            kraft_cluster_factory(controllers=1, brokers=1, seed=11)
            kraft_cluster_factory(controllers=1, brokers=1, seed=12)
            assert False
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "clusters in this test (2):" in out
    assert "#1 seed 11" in out and "Cluster(controllers=1, brokers=1, seed=11)" in out
    assert "#2 seed 12" in out and "Cluster(controllers=1, brokers=1, seed=12)" in out


# ------------------------------------------------------------- expected failures: one line

def test_no_progress_is_one_line_in_pytest(pytester):
    pytester.makepyfile("""
        def test_waits_forever(kraft_cluster):
            kraft_cluster.run_until(lambda c: False, timeout_ms=1_000)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--kraft-seed=5")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert re.search(r"test_no_progress_is_one_line_in_pytest.py:2: kraft_cluster.run_until", out)
    assert "E   NoProgress: no progress: <lambda> still false after 1000 ms (seed=" in out
    assert "replay with Cluster(controllers=3, brokers=3, seed=" in out
    assert "sim/world.py" not in out and "facade.py" not in out  # no internal frames
    assert "replay: pytest" in out  # the kraft_testkit section is still there
    assert "FAILED test_no_progress_is_one_line_in_pytest.py::test_waits_forever - NoProg" \
        in out  # the -ra summary line carries the message
    long = pytester.runpytest("-p", "no:cacheprovider", "--tb=long").stdout.str()
    assert "world.py" in long
    xdist = pytester.runpytest("-p", "no:cacheprovider", "-n", "1").stdout.str()
    assert "E   NoProgress: no progress: <lambda> still false after 1000 ms" in xdist


def test_cli_expected_failure_is_one_line(monkeypatch, capsys):
    from kraft_testkit.sim.errors import NoProgress
    from kraft_testkit.tools import demo

    def fails(*a, **k):
        raise NoProgress("broker 1 never fenced", seed=4, now_ms=30_000,
                         trace_tail=["a", "b"], replay="kraft-testkit demo --seed 4")

    monkeypatch.setattr(demo, "run_demo", fails)
    assert cli_main(["demo", "--seed", "4"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == ("kraft-testkit demo: NoProgress: no progress: broker 1 never fenced (seed=4, "
                   "now=30000 ms); replay with kraft-testkit demo --seed 4")


# ------------------------------------------------------------- README for downstream projects

def test_readme_tells_a_downstream_project_how_to_depend_on_the_kit():
    import tomllib

    readme = (ROOT / "README.md").read_text()
    assert "## In another project's tests" in readme
    assert 'kraft-testkit[pytest]' in readme
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert any(d.startswith("pytest") for d in extras["pytest"])
    assert not any(d.startswith(("matplotlib", "kio")) for d in extras["pytest"])


# ------------------------------------------------------------- golden files ship with the tests

def test_golden_tests_need_nothing_outside_the_repo():
    offenders = []
    for path in (ROOT / "tests").rglob("*.py"):
        text = path.read_text()
        if path.name != "test_friction.py" and ("kafka-" + "golden" in text or "shared/" in text):
            offenders.append(path.name)
    assert offenders == []
    assert len(list((ROOT / "tests/golden").rglob("00000000000000000000.log"))) == 3


# ------------------------------------------------------------- examples/read_kafka_log.py

@pytest.mark.parametrize("args, code, says", [
    ([], 2, "usage: read_kafka_log.py"),
    (["--bogus", "x"], 2, "unrecognized arguments: --bogus"),
    (["/no/such.log"], 1, "/no/such.log: No such file or directory"),
])
def test_read_kafka_log_example_bad_arguments_have_no_traceback(args, code, says):
    proc = subprocess.run([sys.executable, str(ROOT / "examples/read_kafka_log.py"), *args],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == code and says in proc.stderr
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------- doc drift

def test_no_pointer_to_design_notes_outside_the_repo():
    files = [*ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md"),
             *(ROOT / "kraft_testkit").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    hits = [p.name for p in files if p.name != "test_friction.py"
            and re.search(r"DESIGN(\.md)? ?(§|section)", p.read_text())]
    assert hits == []


def test_readme_demo_time_matches_what_is_measured():
    readme = (ROOT / "README.md").read_text()
    assert "quarter of a" not in readme and "0.4-0.55 s" in readme


def test_kraft_trace_help_says_what_it_writes(pytester):
    out = " ".join(pytester.runpytest("--help").stdout.str().split())
    assert "--kraft-trace for every failing test, print the last 40 simulator events" in out


def test_example_states_the_lease_kafka_uses():
    from kraft_testkit.config import NodeConfig

    doc = ast.get_docstring(ast.parse((ROOT / "examples/test_incident_drills.py").read_text()))
    assert NodeConfig.from_kafka({}).broker_session_timeout_ms == 9000
    assert "9 s by default" in doc and "15-second\nlease" not in doc


# ------------------------------------------------------------- a cheap plugin import

def test_importing_the_plugin_pulls_in_no_codec_and_no_spark():
    # cpu time of the import, not wall time: a loaded machine stretches the wall clock, not
    # the work the import does (which is what "cheap" means here)
    code = ("import sys, time; import pytest; t = time.process_time(); "
            "import pytest_kraft.plugin; dt = (time.process_time() - t) * 1000; "
            "heavy = sorted(m for m in sys.modules if m.startswith(('kraft_testkit.', "
            "'pyspark', 'matplotlib', 'rich', 'crc32c', 'trio', 'anyio', 'freezegun', 'faker'))); "
            "print(repr((dt, heavy)))")
    times = []
    for _ in range(3):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=60, check=True)
        dt, heavy = ast.literal_eval(proc.stdout.strip())
        assert heavy == [], heavy
        times.append(dt)
    assert min(times) < 20, times  # cpu ms; the best of three
