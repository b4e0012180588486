"""The Python blocks of docs/spark.md run as written, in one namespace with the run's session
(the generic doc-snippet test skips them: they need Java and a JVM)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARK = "runs in tests/spark/test_docs.py"


def test_spark_doc_blocks_run(spark, monkeypatch):
    text = (ROOT / "docs" / "spark.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if MARK in b]
    assert len(blocks) >= 5
    monkeypatch.chdir(ROOT)  # the blocks name tests/golden/... relative to the repository
    namespace: dict = {}
    for i, block in enumerate(blocks):
        if "local_session()" in block:
            namespace["spark"] = spark  # the same session local_session() would return
            continue
        exec(compile(block, f"docs/spark.md block {i}", "exec"), namespace)
    assert namespace["results"].count() == 8
