"""Kafka 4.2.1's own unit-test scenarios, ported (the spec the kit follows).

Every test here names the Kafka test method it comes from:

    @pytest.mark.kafka("KafkaRaftClientTest#testInitializeAsResignedLeader")

Its inputs and expected values are taken from that Kafka test and Kafka's source at 4.2.1
(commit 18d5ecd939c8), never from the kit's output. A scenario where the kit knowingly differs
still passes, against the kit's documented behaviour, and says so:

    @pytest.mark.kafka("...#test...", deliberate="why; the switch that selects Kafka's behaviour")

`python tests/kafka_parity/parity_table.py` counts them per Kafka test class for docs/fidelity.md.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kafka(source, deliberate=None): the Kafka 4.2.1 test method ('Class#method') a parity "
        "scenario ports; deliberate names a documented difference and its switch",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A parity test without its source is not a parity test: fail it loudly."""
    mark = item.get_closest_marker("kafka")
    if mark is None or not mark.args or "#" not in str(mark.args[0]):
        pytest.fail("a parity test names its Kafka source: @pytest.mark.kafka('Class#method')")
