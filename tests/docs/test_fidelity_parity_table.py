"""docs/fidelity.md's parity table says what tests/kafka_parity holds, class by class."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _parity_table():
    spec = importlib.util.spec_from_file_location(
        "parity_table", ROOT / "tests" / "kafka_parity" / "parity_table.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("parity_table", module)
    spec.loader.exec_module(module)
    return module


def _doc_rows() -> dict[str, tuple[int, int, int]]:
    body = (ROOT / "docs" / "fidelity.md").read_text()
    section = body[body.index("<!-- parity-table -->"):body.index("<!-- /parity-table -->")]
    rows = {}
    for m in re.finditer(r"^\| `(\w+)` \| (\d+) \| (\d+) \| (\d+) \|$", section, re.M):
        rows[m.group(1)] = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
    return rows


def test_the_table_counts_what_the_files_port():
    counts = _parity_table().scan()
    doc = _doc_rows()
    assert sorted(doc) == sorted(counts), "re-run tests/kafka_parity/parity_table.py --write"
    for cls, c in counts.items():
        ported, passing, deliberate = doc[cls]
        assert (ported, deliberate) == (len(c.methods), len(c.deliberate)), cls
        assert passing <= ported, cls


def test_scan_reads_the_kafka_marker(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "@pytest.mark.kafka('FooTest#testA')\ndef test_a(): pass\n"
        "@pytest.mark.kafka('FooTest#testA')\ndef test_a2(): pass\n"
        "@pytest.mark.kafka('FooTest#testB', deliberate='why; switch')\ndef test_b(): pass\n"
        "def test_unmarked(): pass\n")
    counts = _parity_table().scan(tmp_path)
    assert counts["FooTest"].methods == {"testA", "testB"}
    assert counts["FooTest"].deliberate == {"testB"}
