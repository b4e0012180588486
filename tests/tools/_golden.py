"""Where the real Kafka logs live for the tools' tests (shipped in tests/golden)."""

from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "apache-kafka-pr15553-023aafc"
