"""`kraft-testkit demo`, the README's main job: it runs the whole drill, fast and replayably."""

import io
import subprocess
import sys

import pytest
from rich.console import Console

from kraft_testkit.tools.demo import run_demo


def _run(seed):
    out = io.StringIO()
    result = run_demo(seed, Console(file=out, width=120))
    return result, out.getvalue()


@pytest.mark.parametrize("seed", [0, 7, 21])
def test_the_drill_runs_and_prints_each_step(seed):
    result, text = _run(seed)
    for step in ("KILL active controller", "new active controller", "ISOLATE broker",
                 "fenced by the controller", "has not heard that it was fenced",
                 "HEAL the network",
                 "CONTROLLED SHUTDOWN", "it leads 0 partitions", "reassignment of orders-0 complete"):
        assert step in text, step
    assert "RegisterBroker id=0" in text and "LeaderChange" in text
    c = result["cluster"]
    assert all(c.broker_state(b).state == "RUNNING" for b in c.brokers)
    assert result["virtual_ms"] > 20_000


def test_the_drill_with_kip343_self_fencing():
    out = io.StringIO()
    result = run_demo(7, Console(file=out, width=120), broker_self_fencing=True)
    text = out.getvalue()
    assert "fenced itself (KIP-343, opt-in)" in text and "has not heard" not in text
    assert result["digest"] != _run(7)[0]["digest"]


def test_same_seed_same_run():
    (a, _), (b, _) = _run(5), _run(5)
    assert a["digest"] == b["digest"] and a["virtual_ms"] == b["virtual_ms"]
    assert _run(6)[0]["digest"] != a["digest"]


def test_cli_prints_seed_and_replay_line():
    proc = subprocess.run([sys.executable, "-m", "kraft_testkit", "demo", "--seed", "3"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "seed=3" in proc.stdout and "kraft-testkit demo --seed 3" in proc.stdout
    assert "Brokers (metadata offset" in proc.stdout


def test_plot_draws_the_run_without_changing_it(tmp_path):
    pytest.importorskip("matplotlib")
    out = io.StringIO()
    path = tmp_path / "drill.png"
    with_plot = run_demo(7, Console(file=out, width=120), plot=str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000
    assert f"timeline picture: {path}" in out.getvalue()
    assert with_plot["digest"] == _run(7)[0]["digest"]   # the recorder only reads


def test_recorder_sees_the_isolated_broker_fenced_by_the_controller():
    from kraft_testkit import Cluster
    from kraft_testkit.tools.timeline_plot import StateRecorder

    c = Cluster(1, 3, seed=2)
    rec = StateRecorder(c)
    c.sim.add_invariant(rec, "timeline")
    c.network.isolate(1)
    c.run_until(lambda c: c.broker_state(1).fenced, 20_000)
    c.run_for(10)
    # the broker cannot hear it is fenced, but the chart shows what the controllers decided
    assert rec.samples[-1][1][1] == "FENCED"


def test_recorder_sees_a_self_fenced_broker():
    from kraft_testkit import Cluster
    from kraft_testkit.tools.timeline_plot import StateRecorder

    c = Cluster(1, 3, seed=2, broker_self_fencing=True)
    rec = StateRecorder(c)
    c.sim.add_invariant(rec, "timeline")
    c.network.isolate(1)
    c.run_until(lambda c: c.broker_state(1).self_fenced, 40_000)
    c.run_for(10)
    assert rec.samples[-1][1][1] == "SELF-FENCED"


def test_every_timeline_row_is_in_virtual_time():
    """Batch timestamps are a real instant (2026-01-01) plus virtual time; the timeline shows
    virtual milliseconds for every source, so log records sort among the drill's steps."""
    import re

    result, text = _run(7)
    times = [int(m.group(1)) for m in re.finditer(r"^│\s+(\d+) │", text, re.M)]
    assert len(times) > 50
    assert times == sorted(times) and times[-1] <= result["virtual_ms"]
    log_rows = [line for line in text.splitlines() if "│ log @" in line]
    assert log_rows and all(int(re.match(r"│\s+(\d+)", r).group(1)) <= result["virtual_ms"]
                            for r in log_rows)


def test_closing_lines_do_not_wrap_on_a_pipe_and_show_the_whole_digest():
    out = io.StringIO()
    result = run_demo(7, Console(file=out, width=80))  # what a pipe gets (80 columns)
    tail = out.getvalue().rstrip("\n").splitlines()[-2:]
    assert tail[0].startswith(f"{result['virtual_ms'] / 1000:.1f} virtual seconds in ")
    assert tail[1] == f"trace digest {result['cluster'].trace.digest()}"
    assert len(result["digest"]) == 64
