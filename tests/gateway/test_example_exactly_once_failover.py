"""examples/exactly_once_failover.py runs as written: across the transaction coordinator's
death, a read_committed reader sees every input exactly once and no aborted record."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka")


def test_the_example_runs():
    path = Path(__file__).parents[2] / "examples" / "exactly_once_failover.py"
    spec = importlib.util.spec_from_file_location("exactly_once_failover", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed, aborted = module.main(5)
    assert sorted(committed) == [f"R{i:03}" for i in range(60)] and aborted > 0
