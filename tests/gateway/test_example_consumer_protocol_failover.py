"""examples/consumer_protocol_failover.py runs as written: a KIP-848 group rebalances
incrementally, survives its coordinator's broker, and a late member reads exactly what came
after the last commit."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka")


def test_the_consumer_protocol_example_runs():
    path = Path(__file__).parents[2] / "examples" / "consumer_protocol_failover.py"
    spec = importlib.util.spec_from_file_location("consumer_protocol_failover", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(5) == [f"third-{i}" for i in range(4)]
