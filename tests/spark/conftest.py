"""Spark tests share one session per worker; grouped onto one xdist worker (run with
``--dist loadgroup``) they share one JVM in all."""

from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "apache-kafka-pr15553-023aafc"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.fixture
def golden() -> Path:
    return GOLDEN


@pytest.fixture
def spark(kraft_spark):
    """The run's session; streams a test left running are stopped after it."""
    yield kraft_spark
    for query in kraft_spark.streams.active:
        query.stop()
