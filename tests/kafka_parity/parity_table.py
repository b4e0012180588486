"""Count the parity suite per Kafka test class, for docs/fidelity.md.

    python tests/kafka_parity/parity_table.py            # print the table (runs the suite)
    python tests/kafka_parity/parity_table.py --write    # and put it into docs/fidelity.md

A scenario is one Kafka test method (a pytest parametrization of it is still one); it passes
when every pytest item that names it passes. `scan()` reads the markers without running
anything, which is what the docs test uses to keep the table in step with the files.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOC = HERE.parent.parent / "docs" / "fidelity.md"
BEGIN, END = "<!-- parity-table -->", "<!-- /parity-table -->"


@dataclass
class ClassCount:
    """One Kafka test class: the methods ported, and which of them are deliberate differences."""

    methods: set[str] = field(default_factory=set)
    deliberate: set[str] = field(default_factory=set)
    passing: set[str] = field(default_factory=set)


def _kafka_marks(node: ast.AST) -> list[tuple[str, bool]]:
    """(source, deliberate?) of every @pytest.mark.kafka(...) on a function or class."""
    marks = []
    for deco in getattr(node, "decorator_list", []):
        if not isinstance(deco, ast.Call) or not deco.args:
            continue
        func = deco.func  # @pytest.mark.kafka(...), or an alias: kafka = pytest.mark.kafka
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name != "kafka":
            continue
        first = deco.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            deliberate = any(k.arg == "deliberate" for k in deco.keywords)
            marks.append((first.value, deliberate))
    return marks


def scan(folder: Path = HERE) -> dict[str, ClassCount]:
    """The Kafka methods each test file's markers name, grouped by Kafka test class."""
    counts: dict[str, ClassCount] = defaultdict(ClassCount)
    for path in sorted(folder.glob("test_*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            for source, deliberate in _kafka_marks(node):
                cls, _, method = source.partition("#")
                counts[cls].methods.add(method)
                if deliberate:
                    counts[cls].deliberate.add(method)
    return dict(counts)


class _Outcomes:
    """A pytest plugin that notes, per Kafka method, whether any of its items failed."""

    def __init__(self) -> None:
        self.source: dict[str, str] = {}
        self.failed: set[str] = set()
        self.ran: set[str] = set()

    def pytest_collection_modifyitems(self, items):  # noqa: D401 - pytest hook
        for item in items:
            mark = item.get_closest_marker("kafka")
            if mark is not None and mark.args:
                self.source[item.nodeid] = str(mark.args[0])

    def pytest_runtest_logreport(self, report):
        source = self.source.get(report.nodeid)
        if source is None:
            return
        if report.failed or (report.when == "call" and report.skipped):
            self.failed.add(source)
        elif report.when == "call" and report.passed:
            self.ran.add(source)


def measure() -> dict[str, ClassCount]:
    """Run the parity suite and add which scenarios pass to the scanned counts."""
    import pytest

    outcomes = _Outcomes()
    pytest.main([str(HERE), "-q", "-p", "no:xdist", "-p", "no:cacheprovider"], plugins=[outcomes])
    counts = scan()
    for source in outcomes.ran - outcomes.failed:
        cls, _, method = source.partition("#")
        if cls in counts:
            counts[cls].passing.add(method)
    return counts


def table(counts: dict[str, ClassCount], with_passing: bool = True) -> str:
    """The markdown table docs/fidelity.md carries."""
    lines = [
        "| Kafka 4.2.1 test class | scenarios ported | passing | deliberate differences |",
        "| --- | ---: | ---: | ---: |",
    ]
    total = [0, 0, 0]
    for cls in sorted(counts):
        c = counts[cls]
        row = [len(c.methods), len(c.passing) if with_passing else len(c.methods),
               len(c.deliberate)]
        total = [a + b for a, b in zip(total, row)]
        lines.append(f"| `{cls}` | {row[0]} | {row[1]} | {row[2]} |")
    lines.append(f"| **all** | **{total[0]}** | **{total[1]}** | **{total[2]}** |")
    return "\n".join(lines)


def write(text: str, doc: Path = DOC) -> None:
    """Replace the table between the markers in docs/fidelity.md."""
    body = doc.read_text()
    start, end = body.index(BEGIN) + len(BEGIN), body.index(END)
    doc.write_text(body[:start] + "\n" + text + "\n" + body[end:])


def main(argv: list[str]) -> int:
    counts = measure()
    text = table(counts)
    print(text)
    if "--write" in argv:
        write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
