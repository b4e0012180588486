"""examples/dynamic_voters.py runs as written, twice with the same digest."""

import runpy
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dynamic_voters.py"


def test_example_runs_and_is_deterministic(capsys):
    main = runpy.run_path(str(EXAMPLE))["main"]
    assert main(3) == main(3)
    out = capsys.readouterr().out
    assert "removed the active controller" in out and "both topics committed" in out
