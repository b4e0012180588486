"""The pytest face of kraft_testkit.

Options: ``--kraft-seed`` (the base seed; default 0), ``--kraft-storage`` (memory | tmpdir),
``--kraft-trace`` (print the event trace tail of every failing test).
Import stays cheap: nothing heavy is imported until a fixture is used.
"""

from __future__ import annotations

import zlib

import pytest

STORAGES = ("memory", "tmpdir")
pytest_plugins = [
    "pytest_kraft.faces",    # async, Faker, real-Kafka and HTML-timeline faces
    "pytest_kraft.gateway",  # kraft_bootstrap (real clients over loopback)
]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kraft", "kraft_testkit (in-process KRaft clusters)")
    group.addoption("--kraft-seed", type=int, default=None,
                    help="base seed of every simulated cluster (default 0); each test derives "
                         "its own seed from this and its node id")
    group.addoption("--kraft-storage", choices=STORAGES, default="memory",
                    help="where simulated nodes keep their logs: memory, or Kafka's on-disk "
                         "layout under a tmp dir")
    group.addoption("--kraft-no-fast-forward", dest="kraft_no_fast_forward",
                    action="store_true",
                    help="step every event: no cluster of the run warps its idle stretches "
                         "(Cluster(fast_forward=False); the default warps them, exact byte for "
                         "byte; a test's @pytest.mark.kraft(fast_forward=...) wins)")
    group.addoption("--kraft-fast-forward", dest="kraft_fast_forward", action="store_true",
                    help="warp idle stretches (the default; kept for command lines that "
                         "name it)")
    group.addoption("--kraft-trace", action="store_true",
                    help="for every failing test, print the last 40 simulator events (instead "
                         "of 12) in its 'kraft_testkit' report section, with the seed and "
                         "replay line")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kraft(controllers=3, brokers=3, seed=None, storage=None, configs={...}, racks=None, "
        "metadata_version=29, features=None, combined=False, wire=True, invariants=True, "
        "seed_defaults=False, broker_self_fencing=False, boot=True): shape of the kraft_cluster / "
        "controller_quorum / broker_fleet fixtures (Kafka settings by name go in configs)")


def _base_seed(config: pytest.Config) -> int:
    seed = config.getoption("--kraft-seed")
    return 0 if seed is None else seed


def pytest_report_header(config: pytest.Config) -> str:
    warp = ", every event stepped (--kraft-no-fast-forward)" \
        if config.getoption("--kraft-no-fast-forward") else ""
    return (f"kraft_testkit: base seed {_base_seed(config)} (--kraft-seed), "
            f"storage {config.getoption('--kraft-storage')}{warp}")


@pytest.fixture
def kraft_seed(request: pytest.FixtureRequest) -> int:
    """This test's seed: the ``kraft`` marker's ``seed``, else derived from the base seed and the
    test id (stable across runs and processes, different between tests)."""
    marker = request.node.get_closest_marker("kraft")
    if marker is not None:
        from .markers import marker_seed

        seed = marker_seed(marker)  # MarkerError (one line) for seed="x", 1.5, True
        if seed is not None:
            return seed
    base = _base_seed(request.config)
    return (base * 1_000_003 + zlib.crc32(request.node.nodeid.encode())) & 0x7FFFFFFF


# ------------------------------------------------------------- cluster fixtures

def _marker_kwargs(request: pytest.FixtureRequest) -> dict:
    """The ``kraft`` marker's arguments, checked: an unknown, positional or badly typed one
    fails the test with one line naming it and what is allowed, whichever kraft fixture the
    test uses (:class:`pytest_kraft.markers.MarkerError`)."""
    marker = request.node.get_closest_marker("kraft")
    if marker is None:
        return {}
    from .markers import marker_kwargs

    return marker_kwargs(marker)


def _remember(request: pytest.FixtureRequest, cluster) -> None:
    """Every cluster of a test goes into its failure report (seed and replay line each)."""
    request.node._kraft_cluster = cluster
    clusters = getattr(request.node, "_kraft_clusters", [])
    if all(c is not cluster for c in clusters):
        clusters.append(cluster)
    request.node._kraft_clusters = clusters


def _option_defaults(config: pytest.Config, kwargs: dict) -> dict:
    """What the command line sets where the test did not: ``--kraft-storage`` and
    ``--kraft-no-fast-forward``."""
    kwargs.setdefault("storage", config.getoption("--kraft-storage"))
    if config.getoption("--kraft-no-fast-forward"):
        kwargs.setdefault("fast_forward", False)
    return kwargs


def _cluster_kwargs(request: pytest.FixtureRequest, seed: int, **defaults: object) -> dict:
    kwargs: dict = dict(defaults)
    kwargs.update(_marker_kwargs(request))
    kwargs["seed"] = seed
    _option_defaults(request.config, kwargs)
    if kwargs["storage"] == "tmpdir":
        kwargs["data_dir"] = request.getfixturevalue("tmp_path") / "kraft"
    return kwargs


@pytest.fixture
def kraft_cluster(request: pytest.FixtureRequest, kraft_seed: int):
    """A booted cluster (3 controllers + 3 brokers unless ``@pytest.mark.kraft`` says
    otherwise): every broker is RUNNING when the test starts."""
    from kraft_testkit.cluster import Cluster

    cluster = Cluster(**_cluster_kwargs(request, kraft_seed))
    _remember(request, cluster)  # for the failure report
    yield cluster


@pytest.fixture
def controller_quorum(request: pytest.FixtureRequest, kraft_seed: int):
    """The controllers as a Raft quorum: a :class:`~kraft_testkit.views.QuorumView` (voters,
    leader, epoch, high_watermark, describe_quorum(), kill_leader(), isolate_leader(),
    add_voter/remove_voter; ``.cluster`` is the cluster).

    Alone it is a controllers-only cluster (``brokers=0``) with an active controller. A test
    that also asks for ``kraft_cluster`` or ``broker_fleet`` gets a view of that same cluster
    (brokers included): the fixtures are views of one cluster.
    """
    from kraft_testkit.views import QuorumView

    if "kraft_cluster" in request.fixturenames or "broker_fleet" in request.fixturenames:
        yield QuorumView(request.getfixturevalue("kraft_cluster"))
        return
    from kraft_testkit.cluster import Cluster

    kwargs = _cluster_kwargs(request, kraft_seed)
    kwargs["brokers"] = 0
    cluster = Cluster(**kwargs)
    cluster.run_until(lambda c: c.active_controller is not None, timeout_ms=30_000)
    _remember(request, cluster)
    yield QuorumView(cluster)


@pytest.fixture
def broker_fleet(kraft_cluster):
    """The brokers of ``kraft_cluster`` as a :class:`~kraft_testkit.views.BrokerFleet`: a
    sequence of their handles (``broker_fleet[0]``, ``len``, iteration, equal to
    ``kraft_cluster.brokers``) with ``states()``, ``fenced``, ``leaders()``, ``kill``,
    ``roll``, ``isolate``, ``wait_unfenced``."""
    from kraft_testkit.views import BrokerFleet

    return BrokerFleet(kraft_cluster)


class KraftClock:
    """The virtual clock of a cluster: ``advance(ms)`` runs the simulation that long."""

    def __init__(self, cluster) -> None:
        self._cluster = cluster

    @property
    def now_ms(self) -> int:
        return self._cluster.now_ms

    def advance(self, ms: int) -> int:
        self._cluster.run_for(ms)
        return self._cluster.now_ms

    def run_until(self, predicate, timeout_ms: int = 30_000) -> int:
        return self._cluster.run_until(predicate, timeout_ms)


def _the_cluster(request: pytest.FixtureRequest):
    """The cluster this test uses: its controller_quorum's if it asked for one, else
    kraft_cluster."""
    if "controller_quorum" in request.fixturenames:
        return request.getfixturevalue("controller_quorum").cluster
    return request.getfixturevalue("kraft_cluster")


@pytest.fixture
def kraft_clock(request: pytest.FixtureRequest) -> KraftClock:
    """The virtual clock: ``kraft_clock.advance(10_000)`` runs ten virtual seconds."""
    return KraftClock(_the_cluster(request))


@pytest.fixture
def kraft_network(request: pytest.FixtureRequest):
    """Partitions, isolation, filters and link behaviour of the test's cluster."""
    return _the_cluster(request).network


@pytest.fixture
def kraft_faults(request: pytest.FixtureRequest):
    """kill / restart / stop / pause / resume / wipe_disk / skew of the test's cluster's nodes."""
    return _the_cluster(request).faults


@pytest.fixture
def kraft_cluster_factory(request: pytest.FixtureRequest, kraft_seed: int):
    """Build clusters inside a test: ``factory(**kwargs)`` takes Cluster's arguments; the seed
    defaults to this test's ``kraft_seed``, the storage to ``--kraft-storage``, ``fast_forward``
    to on unless ``--kraft-no-fast-forward``, and the rest to the ``kraft`` marker's arguments (a misspelled
    marker argument fails the test).

    With Hypothesis, draw the seed and suppress the function-scoped-fixture health check (the
    factory builds a fresh cluster per example, so sharing the fixture is safe)::

        @settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(seed=st.integers(0, 10_000))
        def test_x(kraft_cluster_factory, seed):
            c = kraft_cluster_factory(seed=seed)
    """
    from kraft_testkit.cluster import Cluster

    marked = _marker_kwargs(request)
    built = []

    def factory(**kwargs):
        from kraft_testkit.cluster_args import check_cluster_arguments

        kwargs = {**marked, **kwargs}
        kwargs.setdefault("seed", kraft_seed)
        _option_defaults(request.config, kwargs)
        check_cluster_arguments(Cluster.__init__, (), kwargs, where="kraft_cluster_factory")
        cluster = Cluster(**kwargs)
        built.append(cluster)
        _remember(request, cluster)
        return cluster

    yield factory
    for cluster in built:
        cluster.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if report.when == "setup" and report.failed:
        from .report import bad_marker_failure

        short = bad_marker_failure(item, call)
        if short is not None:
            report.longrepr = short
        return
    if report.when != "call" or not report.failed:
        return
    from .report import kraft_section, short_replayable_failure

    short = short_replayable_failure(item, call)
    if short is not None:
        report.longrepr = short
    section = kraft_section(item)
    if section is not None:
        report.sections.append(("kraft_testkit", section))


# ------------------------------------------------------------- Spark (pyspark loads on first use)

@pytest.fixture(scope="session")
def kraft_spark():
    """One local SparkSession for the whole run (local[2], UI off, tuned to start fast) with the
    ``kraft-metadata`` source registered; skips with one clear sentence when Java 17/21 or
    pyspark is missing. See docs/spark.md."""
    from kraft_testkit.spark.fixture import session_or_skip

    yield from session_or_skip()


@pytest.fixture
def kraft_spark_factory(kraft_spark):
    """``factory(**conf)``: a session of its own (shared JVM, own SQL conf and temp views) for a
    test that changes Spark settings; JVM-level settings are a ConfigError."""
    from kraft_testkit.spark.fixture import child_session

    return lambda **conf: child_session(kraft_spark, conf)
