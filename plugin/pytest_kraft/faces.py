"""The plugin's faces: async fixtures, Faker names, the real-Kafka twin, HTML timelines.

Registered from :mod:`pytest_kraft.plugin`. Nothing here imports anyio, trio, Faker,
freezegun, Hypothesis or testcontainers until a fixture that needs it is used.

* ``kraft_async_cluster``: an :class:`~kraft_testkit.aio.AsyncCluster` (``@pytest.mark.kraft``
  shapes it), on the test's virtual-time event loop (asyncio or trio, see docs/faces.md);
* ``kraft_faker``: seeded realistic names (the cluster's, when it was built with
  ``names="faker"``; else a fresh set from the test's seed);
* ``real_kafka``: a real Kafka (Docker via testcontainers, or ``KRAFT_TWIN_BOOTSTRAP``), or a
  skip with the reason;
* ``--kraft-timeline DIR``: an HTML swim-lane timeline for every failing test with a cluster.
"""

from __future__ import annotations

import os
import re

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kraft")
    group.addoption("--kraft-timeline", metavar="DIR", default=None,
                    help="write a self-contained HTML swim-lane timeline (nodes, roles, states, "
                         "faults, committed records) of every failing test's cluster to DIR")


@pytest.fixture
async def kraft_async_cluster(request: pytest.FixtureRequest, kraft_seed: int, anyio_backend):
    """A booted cluster for ``async`` tests; the running loop's clock becomes its clock.

    Needs an ``anyio_backend`` on virtual time (``kraft_testkit.aio.anyio_backends()``)."""
    from kraft_testkit.aio import AsyncCluster

    from .plugin import _cluster_kwargs, _remember

    cluster = await AsyncCluster.open(**_cluster_kwargs(request, kraft_seed))
    _remember(request, cluster.cluster)  # for the failure report
    yield cluster
    cluster.cluster.close()
    cluster.raise_pending()  # an invariant broken while only the loop's clock ran the cluster


@pytest.fixture
def kraft_faker(request: pytest.FixtureRequest, kraft_seed: int):
    """Realistic names from the test's seed (``.hosts``, ``.topic()``, ``.rack_names(n)``,
    ``.faker`` for anything else Faker makes); same seed, same names."""
    pytest.importorskip("faker", reason="kraft_faker needs Faker: pip install "
                                        "'kraft-testkit[names]'")
    from kraft_testkit.names import FakerNames

    for name in ("kraft_cluster", "controller_quorum"):
        if name in request.fixturenames:
            value = request.getfixturevalue(name)
            names = getattr(getattr(value, "cluster", value), "names", None)
            if isinstance(names, FakerNames):
                return names
    return FakerNames(kraft_seed, (), ())


@pytest.fixture(scope="session")
def real_kafka():
    """A real Kafka broker (KRaft) for twin tests: ``KRAFT_TWIN_BOOTSTRAP=host:port`` names a
    running one; otherwise testcontainers starts the apache/kafka image. Skips with one line
    saying why when neither is possible (no Docker engine, no testcontainers)."""
    from kraft_testkit.twin import RealKafkaUnavailable, start_real_kafka

    try:
        kafka = start_real_kafka()
    except RealKafkaUnavailable as why:
        pytest.skip(str(why))
    try:
        yield kafka
    finally:
        kafka.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    directory = item.config.getoption("--kraft-timeline", None)
    cluster = getattr(item, "_kraft_cluster", None)
    if directory is None or cluster is None or report.when != "call" or not report.failed:
        return
    from kraft_testkit.tools.timeline_html import write_timeline

    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid).strip("_")[:150] or "test"
    path = os.path.join(directory, f"{name}.html")
    try:
        write_timeline(cluster, path, title=f"{item.nodeid} (seed {cluster.seed})")
    except Exception as error:  # a broken picture must not hide the test's own failure
        report.sections.append(("kraft_testkit timeline", f"could not write {path}: {error!r}"))
        return
    report.sections.append(("kraft_testkit timeline", f"timeline: {os.path.abspath(path)}"))
