"""examples/idle_warp.py runs as written: the warped run leaves the same bytes and behaves the
same after the stretch as the stepped one, and it really warped."""

import runpy
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "idle_warp.py"


def test_example_warps_and_matches_stepping(capsys):
    runs = runpy.run_path(str(EXAMPLE))["main"](2, 7)
    stepped, warped = runs["stepped"], runs["warped"]
    for key in ("fingerprint", "fenced after ms", "elected after ms", "now ms"):
        assert stepped[key] == warped[key], key
    # the 2 idle minutes and the minute with a controller and a broker dead (180 virtual s)
    # warped, but for the stretches' ends (without the dead nodes: ~118 s)
    assert warped["stats"]["virtual ms warped"] > 170_000
    assert not stepped["stats"] and warped["stats"]["events computed"] > 1_000
    assert "same bytes and same behaviour after the stretch: True" in capsys.readouterr().out
