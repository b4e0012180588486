"""The faces' example scripts run and say what they claim."""

import importlib.util
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[2] / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import would: freezegun patches names in sys.modules
    spec.loader.exec_module(module)
    return module


def test_time_warped_lease_expiry(capsys):
    pytest.importorskip("freezegun")
    pytest.importorskip("faker")
    seen = _load("time_warped_lease_expiry").main(7)
    assert 7_000 <= seen["broker_fenced_ms"] <= 11_000        # Kafka's 9 s broker lease
    assert seen["lease_valid_at_expiry"] == 0 and seen["virtual_ms"] == 30_000
    out = capsys.readouterr().out
    assert "00:00:30.000  billing-worker's lease reached its end: valid False" in out


def test_twin_compare_finds_no_difference(capsys):
    assert _load("twin_compare").main() == 0
    assert "no difference a client could see" in capsys.readouterr().out
