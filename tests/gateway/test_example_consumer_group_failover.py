"""examples/consumer_group_failover.py runs as written: the member started after the
coordinator's broker died reads exactly what came after the last commit."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka")


def test_the_example_runs():
    path = Path(__file__).parents[2] / "examples" / "consumer_group_failover.py"
    spec = importlib.util.spec_from_file_location("consumer_group_failover", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(5) == [f"third-{i}" for i in range(4)]
