"""Spark tests share one session per xdist worker (one JVM each, about 0.75 GB).

They carry ``xdist_group("spark")`` so that ``--dist loadgroup`` could put them on one worker,
but with pytest 9.2 and pytest-xdist 3.8 loadgroup groups nothing (xdist renames
``item._nodeid``, which pytest 9 no longer reads; checked on a two-file example), so with
``-n 2`` two sessions start."""

from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "apache-kafka-pr15553-023aafc"


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marker
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
