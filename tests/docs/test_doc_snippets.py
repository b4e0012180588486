"""Every Python snippet in README.md and docs/*.md runs as written (so the docs cannot rot).

Blocks of one document share a namespace, in order. A block defining ``test_`` functions runs
as a pytest file (fixtures and markers as a user's test would have them). Snippets run in a
temporary directory holding ``__cluster_metadata-0/00000000000000000000.log`` (golden log C),
the path the protocol docs read.
"""

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
GOLDEN_C = (ROOT / "tests/golden/apache-kafka-pr15553-023aafc/C_mv18_3brokers"
            / "__cluster_metadata-0/00000000000000000000.log")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks(doc: Path) -> list[str]:
    return [b for b in BLOCK.findall(doc.read_text()) if "# doc: not run" not in b]


@pytest.mark.parametrize("doc", [d for d in DOCS if _blocks(d)], ids=lambda d: d.name)
def test_snippets_run(doc, tmp_path, monkeypatch, pytester):
    if "read_log" in doc.read_text() and not GOLDEN_C.exists():
        pytest.skip("tests/golden is missing")
    if GOLDEN_C.exists():
        (tmp_path / "__cluster_metadata-0").mkdir()
        shutil.copy(GOLDEN_C, tmp_path / "__cluster_metadata-0" / GOLDEN_C.name)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for i, block in enumerate(_blocks(doc)):
        if re.search(r"^def test_", block, re.M):
            path = pytester.makepyfile(**{f"test_{doc.stem.lower()}_{i}": block})
            result = pytester.runpytest(str(path), "-p", "no:cacheprovider", "-q")
            assert result.ret == 0, result.stdout.str()
        else:
            exec(compile(block, f"{doc.name} block {i}", "exec"), namespace)
