"""The code's shape, checked: no module much over 500 lines without a reason at its top, and no
import circle between modules. Today's exceptions are listed below, each with why; the lists
only shrink (an entry that is no longer needed fails the test, so it gets deleted).

Imports count wherever they are (a function-level import is still a dependency), except those
under ``if TYPE_CHECKING:`` (type names only: nothing is imported at run time).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[2]
PACKAGES = {"kraft_testkit": ROOT / "kraft_testkit", "pytest_kraft": ROOT / "plugin" / "pytest_kraft",
            "pyspark_kraft": ROOT / "pyspark_kraft"}
#: a module this long needs a paragraph in its docstring starting with "Size:" saying why
MAX_LINES = 600
SIZE_REASON = "Size:"

#: modules over MAX_LINES today, being split by the helpers who own them; delete an entry once
#: its module is under the limit (or says why it is not, in a "Size:" paragraph)
LONG_MODULES_TODAY: dict[str, str] = {}

#: import circles today (each the set of modules of one strongly connected component), being
#: broken by the helpers who own them; delete an entry once its circle is gone
CIRCLES_TODAY: list[set[str]] = []


def modules() -> dict[str, Path]:
    """Every module of the kit's packages by dotted name (a package by its ``__init__``)."""
    found = {}
    for name, base in PACKAGES.items():
        if not base.is_dir():
            continue
        for path in base.rglob("*.py"):
            parts = [name, *path.relative_to(base).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Import statements outside ``if TYPE_CHECKING:`` blocks."""
    out: list[ast.Import | ast.ImportFrom] = []

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    walk(other)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append(child)
            walk(child)

    walk(tree)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the kit's modules it imports (``from pkg import name`` counts as importing
    ``pkg.name`` when that is a module, else ``pkg``)."""
    mods = modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_package = path.name == "__init__.py"
        package = mod if is_package else mod.rpartition(".")[0]
        for node in _runtime_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    base = base[:len(base) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in mods else source
                           for a in node.names]
            for target in targets:
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if target and target != mod:
                    graph[mod].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def test_no_module_is_long_without_a_reason_at_its_top():
    too_long = {}
    for mod, path in modules().items():
        n = len(path.read_text().splitlines())
        if n > MAX_LINES and SIZE_REASON not in _docstring(path):
            too_long[mod] = n
    new = {m: n for m, n in too_long.items() if m not in LONG_MODULES_TODAY}
    assert not new, (f"modules over {MAX_LINES} lines: {new}; split them by concern, or say why "
                     f"not in a '{SIZE_REASON}' paragraph of the module docstring")
    stale = sorted(set(LONG_MODULES_TODAY) - set(too_long))
    assert not stale, (f"{stale} no longer need an exception: delete them from "
                       f"LONG_MODULES_TODAY in {__file__}")


def test_no_import_circle_between_modules():
    found = circles(import_graph())
    new = [sorted(c) for c in found if not any(c <= known for known in CIRCLES_TODAY)]
    assert not new, f"new import circles: {new}; break them (move the shared part down a layer)"
    stale = [sorted(known) for known in CIRCLES_TODAY if not any(c & known for c in found)]
    assert not stale, f"{stale} are gone: delete them from CIRCLES_TODAY in {__file__}"


def test_the_checker_sees_a_circle_and_a_type_only_import():
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n"
                     "def f():\n    import b\n")
    assert [ast.unparse(n) for n in _runtime_imports(tree)] == ["from typing import "
                                                                 "TYPE_CHECKING", "import b"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
