"""``kraft-testkit serve`` from a shell: prints the addresses, serves a real client, stops on
Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

kafka = pytest.importorskip("kafka")


def _serve(*args: str) -> subprocess.Popen:
    """``kraft-testkit serve`` as a shell starts it in the foreground: Ctrl-C (SIGINT) stops it.
    A process started from a background job or a test worker inherits SIGINT ignored, and
    Python then leaves it ignored (the server would never stop): restore the default."""
    return subprocess.Popen(
        [sys.executable, "-m", "kraft_testkit.tools.cli", "serve", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _stop(proc: subprocess.Popen) -> tuple[str, str]:
    """Ctrl-C, and the output once it stopped; killed (and the test failed) if it does not
    stop within a bound generous for a loaded machine, so no server outlives its test."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise


def test_serve_prints_addresses_and_stops_on_ctrl_c():
    proc = _serve("--controllers", "3", "--brokers", "3", "--seed", "7", "--speed", "10")
    try:
        servers = proc.stdout.readline().strip()
        controllers = proc.stdout.readline().strip()
        assert servers.startswith("bootstrap.servers=127.0.0.1:")
        assert controllers.count("127.0.0.1:") == 3
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=servers.split("=", 1)[1],
                                 request_timeout_ms=20_000)
        admin.create_topics([NewTopic("from-the-shell", 2, 3)])
        assert "from-the-shell" in admin.list_topics()
        admin.close()
    finally:
        out, err = _stop(proc)
    assert proc.returncode == 0, err
    assert "stopped at virtual time" in out


def test_serve_with_sasl_users():
    # Ctrl-C stops it; --seconds only keeps an orphan from serving on (20 s was too short for
    # a loaded machine to connect a client)
    proc = _serve("--seed", "3", "--sasl", "--scram-user", "alice:alice-secret",
                  "--seconds", "600")
    try:
        servers = proc.stdout.readline().strip().split("=", 1)[1]
        from kafka.admin import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=servers, security_protocol="SASL_PLAINTEXT",
                                 sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice",
                                 sasl_plain_password="alice-secret", request_timeout_ms=20_000)
        assert admin.describe_cluster()["cluster_id"]
        admin.close()
    finally:
        _stop(proc)
    assert proc.returncode == 0


def test_serve_rejects_a_bad_user_spec():
    out = subprocess.run([sys.executable, "-m", "kraft_testkit.tools.cli", "serve",
                          "--scram-user", "nopassword", "--seconds", "1"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "USER:PASSWORD" in out.stderr
