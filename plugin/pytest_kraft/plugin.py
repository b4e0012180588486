"""The pytest face of kraft_testkit.

Options: ``--kraft-seed`` (the base seed; default 0), ``--kraft-storage`` (memory | tmpdir),
``--kraft-trace`` (print the event trace tail of every failing test).
Import stays cheap: nothing heavy is imported until a fixture is used.
"""

from __future__ import annotations

import zlib

import pytest

STORAGES = ("memory", "tmpdir")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kraft", "kraft_testkit (in-process KRaft clusters)")
    group.addoption("--kraft-seed", type=int, default=None,
                    help="base seed of every simulated cluster (default 0); each test derives "
                         "its own seed from this and its node id")
    group.addoption("--kraft-storage", choices=STORAGES, default="memory",
                    help="where simulated nodes keep their logs: memory, or Kafka's on-disk "
                         "layout under a tmp dir")
    group.addoption("--kraft-trace", action="store_true",
                    help="print the tail of the event trace for failing tests")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kraft(controllers=3, brokers=3, seed=None, storage=None, **configs): "
        "shape of the kraft_cluster / controller_quorum / broker_fleet fixtures")


def _base_seed(config: pytest.Config) -> int:
    seed = config.getoption("--kraft-seed")
    return 0 if seed is None else seed


def pytest_report_header(config: pytest.Config) -> str:
    return (f"kraft_testkit: base seed {_base_seed(config)} (--kraft-seed), "
            f"storage {config.getoption('--kraft-storage')}")


@pytest.fixture
def kraft_seed(request: pytest.FixtureRequest) -> int:
    """This test's seed: the ``kraft`` marker's ``seed``, else derived from the base seed and the
    test id (stable across runs and processes, different between tests)."""
    marker = request.node.get_closest_marker("kraft")
    if marker is not None and marker.kwargs.get("seed") is not None:
        return int(marker.kwargs["seed"])
    base = _base_seed(request.config)
    return (base * 1_000_003 + zlib.crc32(request.node.nodeid.encode())) & 0x7FFFFFFF
