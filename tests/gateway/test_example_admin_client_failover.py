"""examples/admin_client_failover.py runs as written and loses nothing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka")


def test_the_example_runs():
    path = Path(__file__).parents[2] / "examples" / "admin_client_failover.py"
    spec = importlib.util.spec_from_file_location("admin_client_failover", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    values = module.main(3)
    assert values == [f"before-{i}" for i in range(5)] + [f"after-{i}" for i in range(5)]
