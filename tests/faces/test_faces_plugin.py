"""The plugin's faces as a user meets them: --kraft-timeline, kraft_faker, async fixtures,
demo --html, and a cheap plugin import."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def test_kraft_timeline_writes_a_page_for_each_failing_test_only(pytester, tmp_path):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.kraft(controllers=3, brokers=3, seed=4)
        def test_fails(kraft_cluster):
            kraft_cluster.faults.kill(kraft_cluster.active_controller)
            kraft_cluster.network.isolate(kraft_cluster.brokers[2])
            kraft_cluster.run_for(20_000)  # a failover, then the isolated broker's session
            assert not kraft_cluster.broker_state(2).fenced

        def test_passes(kraft_cluster):
            pass
    """)
    out_dir = tmp_path / "timelines"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--kraft-timeline={out_dir}")
    result.assert_outcomes(failed=1, passed=1)
    pages = sorted(os.listdir(out_dir))
    assert pages == ["test_kraft_timeline_writes_a_page_for_each_failing_test_only.py_test_fails.html"]
    path = out_dir / pages[0]
    assert f"timeline: {path}" in result.stdout.str()         # the failure section names it
    page = path.read_text()
    assert page.startswith("<!doctype html>") and "<script" not in page and "http" not in \
        page.replace('xmlns="http://www.w3.org/2000/svg"', "")   # self-contained
    for lane in ("controller 1000", "broker 2", "registration 2", "network", "metadata log"):
        assert lane in page
    assert "isolate 2" in page and "kill" in page                   # the faults
    assert "registration 2: fenced from" in page                    # broker 2's lease expired
    assert "LeaderChange" in page and "BrokerRegistrationChange id=2 fenced" in page


def test_kraft_faker_is_seeded_from_the_test_seed(pytester):
    pytest.importorskip("faker")
    pytester.makepyfile("""
        import pytest

        @pytest.mark.kraft(controllers=1, brokers=3, racks=3, names="faker", seed=12)
        def test_cluster_names(kraft_cluster, kraft_faker):
            assert kraft_faker is kraft_cluster.names
            print(); print("HOSTS", sorted(kraft_cluster.names.hosts.values()))

        @pytest.mark.kraft(seed=12)
        def test_standalone(kraft_faker):
            print(); print("TOPICS", kraft_faker.topics(3))
    """)
    runs = [pytester.runpytest("-p", "no:cacheprovider", "-s").stdout.str() for _ in range(2)]
    lines = [[line for line in out.splitlines() if line.startswith(("HOSTS", "TOPICS"))]
             for out in runs]
    assert len(lines[0]) == 2 and lines[0] == lines[1]
    assert "kafka-" in lines[0][0]


def test_demo_html_writes_the_drill(tmp_path):
    from kraft_testkit.tools.cli import main

    page = tmp_path / "drill.html"
    assert main(["demo", "--seed", "7", "--html", str(page)]) == 0
    text = page.read_text()
    assert "kraft-testkit demo, seed 7" in text and "KILL active controller" in text
    assert text.count("<tr><td>") > 20


def test_plugin_import_pulls_in_no_face_library():
    code = ("import sys, json, pytest_kraft.plugin, pytest_kraft.faces; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('anyio', 'trio', 'faker', 'freezegun', 'hypothesis', 'testcontainers', "
            "'docker', 'confluent_kafka'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out) == []


def test_the_timeline_svg_is_well_formed_and_every_lane_is_drawn(tmp_path):
    import xml.etree.ElementTree as ET

    from kraft_testkit.cluster import Cluster
    from kraft_testkit.tools.timeline_html import collect, write_timeline

    c = Cluster(3, 3, seed=2)
    c.create_topic("t", 6, 3)                  # so broker 2 leads something when it leaves
    c.faults.pause(c.brokers[0])
    c.run_for(1_000)
    c.faults.resume(c.brokers[0])
    c.controlled_shutdown(c.brokers[2])
    page = Path(write_timeline(c, tmp_path / "deep" / "t.html")).read_text()
    svg = ET.fromstring(page[page.index("<svg"):page.index("</svg>") + 6])
    ns = "{http://www.w3.org/2000/svg}"
    assert len(svg.findall(f"{ns}rect")) >= 9 + 3        # a bar at least per lane
    data = collect(c)
    labels = [lane.label.strip() for lane in data.lanes]
    assert labels[:2] == ["controller 1000", "active 1000"] and "registration 2" in labels
    broker0 = data.lanes[labels.index("broker 0")]
    assert [s for _, s in broker0.states] == ["up", "paused", "up"]
    broker2 = data.lanes[labels.index("broker 2")]
    assert broker2.states[-1][1] == "stopped"
    registration = [s for _, s in data.lanes[labels.index("registration 2")].states]
    assert registration == ["unregistered", "fenced", "unfenced", "controlled shutdown", "fenced"]


def test_the_timeline_puts_committed_records_in_virtual_time():
    """Batch timestamps carry a real instant (2026-01-01) plus virtual time: the page's records
    and leader lanes must be back in virtual milliseconds, within the run."""
    from kraft_testkit.cluster import Cluster
    from kraft_testkit.tools.timeline_html import collect

    c = Cluster(3, 3, seed=2)
    c.faults.kill(c.active_controller)
    c.run_until(lambda c: c.active_controller is not None, timeout_ms=20_000)
    data = collect(c)
    assert data.records and all(0 <= at <= c.now_ms for at, _, _ in data.records)
