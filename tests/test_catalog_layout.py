"""The layout of ``catalog/``: modules with one job each and no import cycle among them.

Checked on the source with ``ast``, so an import inside a function counts too: such
imports may load a database driver lazily, never hide a cycle.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CATALOG = Path(__file__).resolve().parent.parent / "ducklake_datafusion" / "catalog"
MAX_LINES = 500


def _sibling_imports(path: Path) -> set[str]:
    """The modules of ``catalog/`` that ``path`` imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:  # "from . import metadata"
                found.update(alias.name for alias in node.names)
    return found


def test_catalog_modules_import_each_other_without_cycles():
    graph = {path.stem: _sibling_imports(path) for path in CATALOG.glob("*.py")}
    cycles = []

    def visit(module: str, path: list[str], done: set[str]) -> None:
        for imported in sorted(graph.get(module, ())):
            if imported in path:
                cycles.append(" -> ".join([*path[path.index(imported) :], imported]))
            elif imported not in done:
                visit(imported, [*path, imported], done)
        done.add(module)

    done: set[str] = set()
    for module in sorted(graph):
        visit(module, [module], done)
    assert not cycles, f"import cycles in catalog/: {sorted(set(cycles))}"


def test_catalog_modules_are_small_and_say_why_they_exist():
    for path in sorted(CATALOG.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        assert ast.get_docstring(tree), f"{path.name} has no module docstring"
        lines = len(path.read_text().splitlines())
        assert lines <= MAX_LINES, f"{path.name} has {lines} lines (at most {MAX_LINES})"


def test_importing_the_catalog_loads_no_engine():
    code = (
        "import sys, ducklake_datafusion.catalog as c; "
        "print(sorted(m for m in ('datafusion', 'pyspark') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
