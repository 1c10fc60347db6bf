"""The package layout's import rule: catalog/pathres -> scan -> read -> provider, spark.

``scan/`` and ``read/`` are engine-neutral (Spark executors import ``read`` without
DataFusion; a plan must not need an engine), and neither engine package imports the
other. Checked on the source with ``ast``, so a lazy import inside a function counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ducklake_datafusion"

# package -> top-level names it must not import (engines and our own packages)
FORBIDDEN = {
    "scan": {"datafusion", "pyspark", "provider", "spark", "read"},
    "read": {"datafusion", "pyspark", "provider", "spark"},
    "spark": {"provider", "functions"},
    "provider": {"spark", "pyspark"},
}


def _imports(path: Path) -> set[str]:
    """The modules ``path`` imports, as dotted names relative to ``ducklake_datafusion``
    for our own modules (``provider._table``) and absolute for others (``datafusion``)."""
    package = path.relative_to(PACKAGE).parent.parts
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                module = node.module or ""
                if module.startswith("ducklake_datafusion"):
                    module = module.removeprefix("ducklake_datafusion").lstrip(".")
                found.add(module)
                continue
            base = list(package[: len(package) - (node.level - 1)])
            if node.module:
                found.add(".".join([*base, node.module]))
            else:  # "from . import x" / "from .. import x"
                found.update(".".join([*base, alias.name]) for alias in node.names)
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_run_one_way(package):
    files = sorted((PACKAGE / package).glob("*.py"))
    assert files, f"no modules under {package}/"
    bad = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in files
        for name in _imports(path)
        if name.split(".")[0] in FORBIDDEN[package]
    }
    assert not bad, f"{package}/ imports what the layout forbids: {sorted(bad)}"


def test_import_walker_sees_relative_and_lazy_imports():
    """The checker itself: relative imports resolve to our packages, lazy ones count."""
    module = PACKAGE / "spark" / "_options.py"
    names = _imports(module)
    assert "scan" in names or any(n.startswith("scan.") for n in names)
    assert "errors" in names
